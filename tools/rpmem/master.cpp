// SPDX-License-Identifier: BSD-3-Clause
#include "master.hpp"

#include "pmdk/part_file.hpp"

#include "tool.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rpmem::tool
{

void lock_or_throw(int fd, const std::string &path, const char *what_holds_it)
{
	const int e = pmdk::try_lock(fd);
	if (e == EWOULDBLOCK)
		throw failure(fmt::format("{} is in use by {}{}: close it first", path,
		                          what_holds_it, pmdk::lock_holder(fd)));
	if (e != 0)
		throw failure(fmt::format("cannot lock {}: {}", path, std::strerror(e)));
}

master::master(const poolset::poolset &ps)
{
	if (ps.replicas.empty() || ps.replicas[0].is_remote())
		throw failure(
		    fmt::format("{}: the master replica (the first one) must be local", ps.file));
	const auto &parts = ps.replicas[0].parts;
	std::size_t nhdrs = ps.header_count(0);
	std::vector<pmdk::map_source> sources;
	for (std::size_t i = 0; i < parts.size(); ++i) {
		const auto &p = parts[i];
		int fd = ::open(p.path.c_str(), O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			throw failure(fmt::format(
			    "{}: cannot open master part {} ({}): {}{}", ps.file, i, p.path,
			    std::strerror(e),
			    e == ENOENT ? " — the master is lost: rebuild it from a replica "
			                  "(pmempool sync) or make a replica the master "
			                  "(rpmem promote on the replica host)"
			                : ""));
		}
		fds_.emplace_back(fd);
		lock_or_throw(fd, p.path, "an application or another rpmem command");
		struct stat st {
		};
		if (fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < p.size)
			throw failure(
			    fmt::format("{}:{}: master part {} is {} bytes, smaller than the "
			                "{} the pool set declares: the pool was not created "
			                "from this pool set",
			                ps.file, p.line, p.path, st.st_size, p.size));
		auto [off, len] = pmdk::part_extent(i, p.size, parts.size(), nhdrs);
		sources.push_back({.fd = fd, .offset = off, .length = len, .path = p.path});
	}
	map_ = std::make_unique<pmdk::pool_map>(sources);
	size_ = map_->size();
	if (nhdrs > 0) {
		pmdk::pool_hdr h;
		std::memcpy(&h, map_->base(), sizeof(h));
		if (auto wrong = pmdk::check_header_alone(h))
			throw failure(fmt::format("{}: master part 0 ({}): {}: check it with "
			                          "`pmempool check` or rebuild it from a replica",
			                          ps.file, parts[0].path, *wrong));
		header_ = h;
	}
}

bool master::rebuilding() const
{
	return header_ &&
	       (pmdk::load_le(header_->feat.incompat) & pmdk::feat_incompat_rpmem_rebuilding);
}

void master::mark_rebuilding(bool on)
{
	if (!header_)
		return;
	pmdk::pool_hdr h = *header_;
	std::uint32_t incompat = pmdk::load_le(h.feat.incompat);
	incompat = on ? incompat | pmdk::feat_incompat_rpmem_rebuilding
	              : incompat & ~pmdk::feat_incompat_rpmem_rebuilding;
	pmdk::store_le(h.feat.incompat, incompat);
	pmdk::seal(h);
	std::memcpy(map_->base(), &h, sizeof(h));
	map_->persist(0, sizeof(h));
	header_ = h;
}

pool_attr replica_attr(const pmdk::pool_hdr &h)
{
	pool_attr a = pmdk::header_attr(h);
	return a;
}

} // namespace rpmem::tool
