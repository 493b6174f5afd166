// SPDX-License-Identifier: BSD-3-Clause
// rpmem promote REPLICA_POOLSET: after the master is lost, make a replica's pool the master on
// its own host. The replica's part headers still link it into the old replica ring (prev/next
// replica UUIDs name the lost master); libpmemobj refuses such a pool as a single-replica pool
// set. Promotion checks every part header (checksum, part links, shared fields), then points
// both replica links of every header at the replica's own part 0 UUID and reseals the
// checksum, durably, part by part. The data is not touched. A replica marked possibly behind
// (feat_compat_rpmem_behind: its asynchronous writer did not close cleanly) is promoted only
// with --force.
#include "master.hpp"
#include "tool.hpp"

#include "client/json.hpp"

#include "pmdk/pool_header.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <unistd.h>

namespace rpmem::tool
{

namespace
{

struct part_header {
	pmdk::unique_fd fd;
	std::string path;
	pmdk::pool_hdr hdr{};
};

void read_header(part_header &p)
{
	auto n = pread(p.fd.get(), &p.hdr, sizeof(p.hdr), 0);
	if (n != static_cast<ssize_t>(sizeof(p.hdr)))
		throw failure(fmt::format("cannot read the pool header of {}: {}", p.path,
		                          n < 0 ? std::strerror(errno) : "the file is too short"));
}

void write_header(const part_header &p)
{
	auto n = pwrite(p.fd.get(), &p.hdr, sizeof(p.hdr), 0);
	if (n != static_cast<ssize_t>(sizeof(p.hdr)) || fsync(p.fd.get()) != 0)
		throw failure(fmt::format("cannot write the pool header of {}: {} — the part "
		                          "headers may now disagree; fix the cause and run "
		                          "`rpmem promote --force` again",
		                          p.path, std::strerror(errno)));
}

} // namespace

int cmd_promote(const promote_args &a)
{
	poolset::poolset ps;
	try {
		ps = poolset::parse_file(a.poolset);
	} catch (const poolset::parse_error &e) {
		throw failure(e.what(), exit_usage);
	}
	if (ps.replicas.size() != 1)
		throw failure(
		    fmt::format("{}: has {} replicas: promote takes the pool set file of "
		                "one replica as rpmemd keeps it on the replica host (parts "
		                "only, no REPLICA lines)",
		                a.poolset, ps.replicas.size()),
		    exit_usage);
	if (ps.opts.no_headers)
		throw failure(
		    fmt::format("{}: OPTION NOHDRS: the pool has no headers, so there are "
		                "no replica links to rewrite; open it as it is",
		                a.poolset));
	const auto &parts = ps.replicas[0].parts;
	const std::size_t nhdrs = ps.header_count(0);

	std::vector<part_header> hs;
	for (std::size_t i = 0; i < nhdrs; ++i) {
		int fd = ::open(parts[i].path.c_str(), O_RDWR | O_CLOEXEC);
		if (fd < 0)
			throw failure(fmt::format("{}:{}: cannot open part {} ({}): {}", a.poolset,
			                          parts[i].line, i, parts[i].path,
			                          std::strerror(errno)));
		hs.push_back({pmdk::unique_fd(fd), parts[i].path, {}});
		lock_or_throw(fd, parts[i].path, "rpmemd or an application");
		read_header(hs.back());
	}
	// Check first: nothing is written unless every header is sound. A copy: the headers
	// are rewritten below, and what was found is what is reported.
	const pmdk::pool_hdr first = hs[0].hdr;
	for (std::size_t i = 0; i < nhdrs; ++i) {
		auto prev = hs[(i + nhdrs - 1) % nhdrs].hdr.part_uuid;
		auto next = hs[(i + 1) % nhdrs].hdr.part_uuid;
		if (auto wrong = pmdk::check_header(hs[i].hdr, first, prev, next))
			throw failure(fmt::format("{}: part {} ({}): {}: the replica cannot be "
			                          "promoted; rebuild it from another replica "
			                          "(pmempool sync)",
			                          a.poolset, i, hs[i].path, *wrong));
	}
	const auto self = first.part_uuid;
	const bool linked_to_self = first.prev_repl_uuid == self && first.next_repl_uuid == self;
	const bool behind = pmdk::load_le(first.feat.compat) & pmdk::feat_compat_rpmem_behind;
	const bool dirty =
	    (pmdk::load_le(first.feat.incompat) & pmdk::feat_incompat_sds) && first.sds.dirty;
	say(a.json, "{}: {} part(s), signature {}, pool set UUID {}\n", a.poolset, parts.size(),
	    signature_text(first.signature), uuid_text(first.poolset_uuid));
	say(a.json, "  replica links: prev {} next {}{}\n", uuid_text(first.prev_repl_uuid),
	    uuid_text(first.next_repl_uuid),
	    linked_to_self ? " (already itself: a single-replica pool)" : "");
	if (behind && !a.force)
		throw failure(fmt::format(
		    "{}: the replica may be behind its master: it was written asynchronously "
		    "(rpmem::replicated_pool) and its writer did not close the pool cleanly, so "
		    "it can lack the master's last persists (up to the writer's lag bound). If "
		    "the master is reachable, resync this replica from it instead; if this is the "
		    "best copy left, promote it with --force",
		    a.poolset));
	if (behind)
		say(a.json, "  warning: marked possibly behind its master (--force: promoting it "
		            "anyway; the mark is cleared)\n");
	if (dirty)
		say(a.json,
		    "  shutdown state: dirty (the replica was open when the master was lost); "
		    "libpmemobj checks it on open\n");

	const bool promote = !a.dry_run && (!linked_to_self || a.force);
	if (promote) {
		for (auto &p : hs) {
			p.hdr.prev_repl_uuid = self;
			p.hdr.next_repl_uuid = self;
			pmdk::store_le(p.hdr.feat.compat, pmdk::load_le(p.hdr.feat.compat) &
			                                      ~pmdk::feat_compat_rpmem_behind);
			pmdk::seal(p.hdr);
			write_header(p);
		}
		say(a.json, "promoted: replica links of {} header(s) now point at {}\n", hs.size(),
		    uuid_text(self));
	} else if (a.dry_run) {
		say(a.json, "dry run: nothing written\n");
	}

	if (!a.output.empty()) {
		std::string text = poolset::to_string(ps);
		std::ofstream out(a.output, std::ios::trunc);
		if (!(out << text) || !out.flush())
			throw failure(
			    fmt::format("cannot write {}: {}", a.output, std::strerror(errno)));
		say(a.json,
		    "wrote {}: open it with libpmemobj; to replicate again, add replicas "
		    "with `pmempool transform`\n",
		    a.output);
	}
	if (a.json) {
		json j;
		j.begin_object()
		    .member("poolset", a.poolset)
		    .member("parts", std::uint64_t{parts.size()})
		    .member("signature", signature_text(first.signature))
		    .member("poolset_uuid", uuid_text(first.poolset_uuid))
		    .member("uuid", uuid_text(self))
		    .member("prev_uuid", uuid_text(first.prev_repl_uuid))
		    .member("next_uuid", uuid_text(first.next_repl_uuid))
		    .member("already_promoted", linked_to_self)
		    .member("was_marked_behind", behind)
		    .member("shutdown_dirty", dirty)
		    .member("dry_run", a.dry_run)
		    .member("promoted", promote)
		    .member("headers_written", std::uint64_t{promote ? hs.size() : 0});
		if (!a.output.empty())
			j.member("output", a.output);
		j.member("exit_status", exit_ok).end_object();
		fmt::print("{}\n", j.str());
	}
	return exit_ok;
}

} // namespace rpmem::tool
