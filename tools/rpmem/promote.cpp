// SPDX-License-Identifier: BSD-3-Clause
// rpmem promote REPLICA_POOLSET: after the master is lost, make a replica's pool the master on
// its own host. The replica's part headers still link it into the old replica ring (prev/next
// replica UUIDs name the lost master); libpmemobj refuses such a pool as a single-replica pool
// set. Promotion checks every part header (checksum, part links, shared fields), then points
// both replica links of every header at the replica's own part 0 UUID and reseals the
// checksum, durably, part by part. The data is not touched. A replica marked possibly behind
// (feat_compat_rpmem_behind: its writer, which could leave it behind, did not close cleanly) is
// promoted only with --force; one marked as being caught up (feat_incompat_rpmem_rebuilding on a
// replica) is not promoted at all.
#include "master.hpp"
#include "tool.hpp"

#include "json/json.hpp"

#include "pmdk/part_set.hpp"
#include "pmdk/pool_header.hpp"
#include "posix/file.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace rpmem::tool
{

namespace
{

/** Writes one part's header durably (pmdk::write_header: the part layer's one path). */
void write_durably(const pmdk::part_file &p, const pmdk::pool_hdr &h)
{
	try {
		pmdk::write_header(p, h);
	} catch (const rpmem::error &e) {
		throw failure(fmt::format("{} — the part headers may now disagree; fix the cause "
		                          "and run `rpmem promote --force` again",
		                          e.message()));
	}
}

/** The replica's pool set: one replica, with headers. Throws failure saying why not. */
poolset::poolset load_replica_set(const promote_args &a)
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
	return ps;
}

/** The replica's parts, locked, with their headers as found; every header checked first:
 *  nothing is written unless every one is sound. */
struct replica_parts {
	std::unique_ptr<pmdk::part_set> set;
	std::vector<pmdk::pool_hdr> headers;
};

replica_parts open_checked(const promote_args &a, const poolset::poolset &ps)
{
	const auto &parts = ps.replicas[0].parts;
	const std::size_t nhdrs = ps.header_count(0);
	pmdk::part_rules rules;
	rules.in_use_remedy = "rpmemd or an application has it open: close it first";
	rules.sizes = pmdk::part_rules::size_rule::any;
	replica_parts rp;
	try {
		rp.set =
		    std::make_unique<pmdk::part_set>(pmdk::part_set::open(parts, nhdrs, rules));
		for (std::size_t i = 0; i < nhdrs; ++i)
			rp.headers.push_back(rp.set->read_header(i));
	} catch (const rpmem::error &e) {
		throw failure(fmt::format("{}: {}", a.poolset, e.message()));
	}
	const auto &hs = rp.headers;
	for (std::size_t i = 0; i < nhdrs; ++i) {
		auto prev = hs[(i + nhdrs - 1) % nhdrs].part_uuid;
		auto next = hs[(i + 1) % nhdrs].part_uuid;
		if (auto wrong = pmdk::check_header(hs[i], hs[0], prev, next))
			throw failure(fmt::format("{}: part {} ({}): {}: the replica cannot be "
			                          "promoted; rebuild it from another replica "
			                          "(pmempool sync)",
			                          a.poolset, i, parts[i].path, *wrong));
	}
	return rp;
}

/** What promote found in part 0's header. */
struct finding {
	pmdk::pool_hdr first;
	bool linked_to_self, behind, dirty;
};

/** Says what the replica is; refuses one marked possibly behind without --force. */
finding examine(const promote_args &a, const poolset::poolset &ps, const pmdk::pool_hdr &first)
{
	const auto self = first.part_uuid;
	finding f{first, first.prev_repl_uuid == self && first.next_repl_uuid == self,
	          pmdk::marked_behind(first),
	          (pmdk::load_le(first.feat.incompat) & pmdk::feat_incompat_sds) &&
	              first.sds.dirty};
	say(a.json, "{}: {} part(s), signature {}, pool set UUID {}\n", a.poolset,
	    ps.replicas[0].parts.size(), signature_text(first.signature),
	    uuid_text(first.poolset_uuid));
	say(a.json, "  replica links: prev {} next {}{}\n", uuid_text(first.prev_repl_uuid),
	    uuid_text(first.next_repl_uuid),
	    f.linked_to_self ? " (already itself: a single-replica pool)" : "");
	if (pmdk::marked_rebuilding(first))
		throw failure(fmt::format(
		    "{}: the replica was being caught up from its master when its writer stopped "
		    "(asynchronous replication, back from an outage): its blocks come from "
		    "different moments, so it holds no consistent pool, and --force cannot make "
		    "it one. If the master is reachable, bring this replica in line from it "
		    "(`rpmem sync`); if not, recover from another replica or a backup",
		    a.poolset));
	if (f.behind && !a.force)
		throw failure(fmt::format(
		    "{}: the replica may be behind its master: its writer could leave it behind "
		    "(asynchronous replication; or going on without it during an outage: "
		    "RPMEM_ON_OUTAGE=continue, failure_policy::degrade) and did not close the "
		    "pool cleanly, so it can lack the master's last persists. If the master is "
		    "reachable, resync this replica from it instead (`rpmem sync`); if this is the "
		    "best copy left, promote it with --force",
		    a.poolset));
	if (f.behind)
		say(a.json, "  warning: marked possibly behind its master (--force: promoting it "
		            "anyway; the mark is cleared)\n");
	if (f.dirty)
		say(a.json,
		    "  shutdown state: dirty (the replica was open when the master was lost); "
		    "libpmemobj checks it on open\n");
	return f;
}

/** Points both replica links of every header at the replica itself, durably, part by part. */
void relink(replica_parts &rp, const pmdk::uuid &self)
{
	for (std::size_t i = 0; i < rp.headers.size(); ++i) {
		auto h = rp.headers[i];
		h.prev_repl_uuid = self;
		h.next_repl_uuid = self;
		pmdk::set_behind_mark(h, false);
		pmdk::seal(h);
		write_durably((*rp.set)[i], h);
	}
}

void write_output(const promote_args &a, const poolset::poolset &ps)
{
	// Written beside it and renamed over it: a link planted at the name is replaced, never
	// followed, and a reader never sees half a pool set file.
	std::string why;
	if (posix::replace_file(a.output, poolset::to_string(ps), 0644, &why) != 0)
		throw failure(fmt::format("cannot write {}: {}", a.output, why));
	say(a.json,
	    "wrote {}: open it with libpmemobj; to replicate again, add replicas "
	    "with `pmempool transform`\n",
	    a.output);
}

void print_json(const promote_args &a, const poolset::poolset &ps, const finding &f, bool promote,
                std::size_t headers)
{
	json j;
	j.begin_object()
	    .member("poolset", a.poolset)
	    .member("parts", std::uint64_t{ps.replicas[0].parts.size()})
	    .member("signature", signature_text(f.first.signature))
	    .member("poolset_uuid", uuid_text(f.first.poolset_uuid))
	    .member("uuid", uuid_text(f.first.part_uuid))
	    .member("prev_uuid", uuid_text(f.first.prev_repl_uuid))
	    .member("next_uuid", uuid_text(f.first.next_repl_uuid))
	    .member("already_promoted", f.linked_to_self)
	    .member("was_marked_behind", f.behind)
	    .member("shutdown_dirty", f.dirty)
	    .member("dry_run", a.dry_run)
	    .member("promoted", promote)
	    .member("headers_written", std::uint64_t{promote ? headers : 0});
	if (!a.output.empty())
		j.member("output", a.output);
	j.member("exit_status", exit_ok).end_object();
	fmt::print("{}\n", j.str());
}

} // namespace

int cmd_promote(const promote_args &a)
{
	const auto ps = load_replica_set(a);
	auto rp = open_checked(a, ps);
	// A copy: the headers are rewritten below, and what was found is what is reported.
	const auto f = examine(a, ps, rp.headers[0]);
	const bool promote = !a.dry_run && (!f.linked_to_self || a.force);
	if (promote) {
		relink(rp, f.first.part_uuid);
		say(a.json, "promoted: replica links of {} header(s) now point at {}\n",
		    rp.headers.size(), uuid_text(f.first.part_uuid));
	} else if (a.dry_run) {
		say(a.json, "dry run: nothing written\n");
	}
	if (!a.output.empty())
		write_output(a, ps);
	if (a.json)
		print_json(a, ps, f, promote, rp.headers.size());
	return exit_ok;
}

} // namespace rpmem::tool
