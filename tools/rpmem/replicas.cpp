// SPDX-License-Identifier: BSD-3-Clause
#include "replicas.hpp"

#include "tool.hpp"

#include "client/control_session.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace rpmem::tool
{

std::string replica_name(const poolset::poolset &ps, std::size_t r)
{
	const auto &rep = ps.replicas[r];
	return fmt::format("replica {} ({} {})", r, rep.target, rep.descriptor);
}

bool damaged_replica(const std::exception &e)
{
	const auto *refused = dynamic_cast<const client::pool_refused *>(&e);
	return refused && refused->status() == control::status::damaged;
}

std::vector<std::size_t> selected(const poolset::poolset &ps, const std::vector<unsigned> &want)
{
	std::vector<std::size_t> out;
	if (want.empty()) {
		for (std::size_t r = 1; r < ps.replicas.size(); ++r)
			if (ps.replicas[r].is_remote())
				out.push_back(r);
		if (out.empty())
			throw failure(fmt::format("{}: the pool set has no REPLICA user@host "
			                          "remote.set line: nothing to compare",
			                          ps.file));
		return out;
	}
	for (unsigned r : want) {
		if (r == 0 || r >= ps.replicas.size() || !ps.replicas[r].is_remote())
			throw failure(
			    fmt::format("{}: replica {} is not a remote replica (replicas "
			                "are numbered from 0, the master; the pool set has "
			                "{})",
			                ps.file, r, ps.replicas.size()),
			    exit_usage);
		out.push_back(r);
	}
	return out;
}

ring::ring(const poolset::poolset &ps, const master &m) : ids_(ps.replicas.size())
{
	if (!m.header())
		return; // NOHDRS: no links to keep
	const auto &h = *m.header();
	ids_[0] = h.part_uuid;
	if (ids_.size() > 1) {
		ids_[1] = h.next_repl_uuid;
		ids_.back() = h.prev_repl_uuid;
	}
	// Local replicas: their part 0 header says who they are.
	for (std::size_t r = 1; r < ps.replicas.size(); ++r) {
		if (ps.replicas[r].is_remote() || ps.header_count(r) == 0)
			continue;
		const auto hdr = pmdk::peek_header(ps.replicas[r].parts[0].path);
		if (hdr && !pmdk::check_header_alone(*hdr))
			learn(r, hdr->part_uuid, hdr->prev_repl_uuid, hdr->next_repl_uuid);
	}
}

void ring::learn(std::size_t r, const uuid &self, const uuid &prev, const uuid &next)
{
	auto n = ids_.size();
	if (!ids_[r])
		ids_[r] = self;
	if (!ids_[(r + n - 1) % n])
		ids_[(r + n - 1) % n] = prev;
	if (!ids_[(r + 1) % n])
		ids_[(r + 1) % n] = next;
}

control::pool_attr expected_attr(const master &m, const ring &ring, std::size_t r,
                                 const control::pool_attr &have)
{
	control::pool_attr want = pmdk::header_attr(*m.header());
	want = pmdk::with_behind_mark(want, false);
	want.uuid = have.uuid;
	want.prev_uuid = ring.prev(r).value_or(have.prev_uuid);
	want.next_uuid = ring.next(r).value_or(have.next_uuid);
	return want;
}

std::vector<std::string> attr_differences(const control::pool_attr &want,
                                          const control::pool_attr &have, const ring &ring,
                                          std::size_t r)
{
	std::vector<std::string> out;
	if (have.is_zero()) {
		out.push_back("the replica has no pool header (the master has one)");
		return out;
	}
	if (want.signature != have.signature)
		out.push_back(fmt::format("signature '{}' (master: '{}')",
		                          signature_text(have.signature),
		                          signature_text(want.signature)));
	if (want.major != have.major)
		out.push_back(fmt::format("major {} (master: {})", have.major, want.major));
	// The "possibly behind" mark is the replica's own (reported by itself, not a difference).
	if (want.compat_features != pmdk::with_behind_mark(have, false).compat_features ||
	    want.incompat_features != have.incompat_features ||
	    want.ro_compat_features != have.ro_compat_features)
		out.push_back("feature flags differ from the master's");
	if (want.poolset_uuid != have.poolset_uuid)
		out.push_back(fmt::format("pool set UUID {} (master: {})",
		                          uuid_text(have.poolset_uuid),
		                          uuid_text(want.poolset_uuid)));
	if (ring.self(r) && *ring.self(r) != have.uuid)
		out.push_back(fmt::format("replica UUID {} is not the {} its neighbours link to",
		                          uuid_text(have.uuid), uuid_text(*ring.self(r))));
	if (want.prev_uuid != have.prev_uuid)
		out.push_back(fmt::format("previous-replica link {} (expected {})",
		                          uuid_text(have.prev_uuid), uuid_text(want.prev_uuid)));
	if (want.next_uuid != have.next_uuid)
		out.push_back(fmt::format("next-replica link {} (expected {})",
		                          uuid_text(have.next_uuid), uuid_text(want.next_uuid)));
	if (want.user_flags != have.user_flags)
		out.push_back("architecture flags differ from the master's");
	return out;
}

poolset::poolset load(const std::string &file)
{
	try {
		return poolset::parse_file(file);
	} catch (const poolset::parse_error &e) {
		throw failure(e.what(), exit_usage);
	}
}

scratch::scratch(std::uint64_t size)
{
	auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
	size_ = (size + page - 1) / page * page;
	void *p = mmap(nullptr, size_, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		throw rpmem::error(errno, fmt::format("cannot map {} bytes of anonymous memory to "
		                                      "register as the local pool",
		                                      size_));
	addr_ = static_cast<std::uint8_t *>(p);
}

scratch::~scratch()
{
	munmap(addr_, size_);
}

} // namespace rpmem::tool
