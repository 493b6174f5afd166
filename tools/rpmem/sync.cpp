// SPDX-License-Identifier: BSD-3-Clause
// rpmem sync POOLSET: each remote replica brought in line with the master (created if it was
// lost, its header attributes and links repaired), moving only the blocks that differ; with
// --from R the master rebuilt from replica R the same way. The protocol (mark, move, clear) is
// client/replica_sync.hpp's; this file adds the replica ring, the dry run, progress and JSON.
#include "sync.hpp"

#include "replicas.hpp"
#include "unreplicated.hpp"
#include "json/json.hpp"

#include "client/remote_pool.hpp"
#include "client/replica_sync.hpp"
#include "pmdk/behind_record.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace rpmem::tool
{

namespace
{

using client::remote_pool;

/** ", and 2 only in what libpmemobj never replicates (not moved)" or nothing. */
std::string unreplicated_note(const sync_result &res)
{
	if (res.unreplicated_blocks == 0)
		return {};
	return fmt::format(", and {} only in what libpmemobj never replicates (not moved)",
	                   res.unreplicated_blocks);
}

/**
 * Drops, from the differing blocks of a libpmemobj pool, those that differ only in bytes
 * libpmemobj never persists (so never replicates: run-time fields, huge-chunk footers, free
 * space; lib/pmdk/obj_heap): each such candidate is read back from the replica and compared
 * with those bytes masked, as verify does. Only for a master known good (the direction to
 * the replicas): the walk trusts the master's heap.
 */
std::vector<client::byte_span> drop_unreplicated_only(remote_pool &pool, const master &m,
                                                      std::vector<client::byte_span> ranges,
                                                      std::uint32_t block_size, sync_result &res)
{
	const auto skip = ignored(m);
	if (skip.empty() || ranges.empty())
		return ranges;
	const std::uint64_t begin = m.data_offset();
	std::vector<client::byte_span> kept;
	std::vector<std::uint8_t> buf(block_size);
	std::size_t next = 0, probe = 0;
	for (const auto &r : ranges) {
		for (std::uint64_t b = r.begin; b < r.end;) {
			// Blocks are counted from the data offset; r is made of whole ones.
			const std::uint64_t e =
			    std::min(r.end, begin + ((b - begin) / block_size + 1) * block_size);
			while (probe < skip.size() && skip[probe].end <= b)
				++probe;
			bool keep = true;
			if (probe < skip.size() && skip[probe].begin < e) {
				pool.read(buf.data(), b, e - b, 0);
				mask_ignored(m, skip, next, buf.data(), b, e - b);
				keep = std::memcmp(buf.data(), m.base() + b, e - b) != 0;
			}
			if (keep) {
				if (!kept.empty() && kept.back().end == b)
					kept.back().end = e;
				else
					kept.push_back({b, e});
			} else {
				++res.unreplicated_blocks;
				--res.differing_blocks;
			}
			b = e;
		}
	}
	return kept;
}

/** One replica's sync, as it goes: what it knows of the replica and what it will do. */
struct replica_sync_job {
	const poolset::poolset &ps;
	const master &m;
	ring &rg;
	std::size_t r;
	const replicate_args &a;
	std::string name;
	sync_result res;
	std::unique_ptr<remote_pool> pool;
	control::pool_attr have{}, want{};
	bool repair = false;
	std::vector<client::byte_span> ranges;
};

/** Opens the replica, or, when it was lost or is damaged, creates it (marked possibly behind:
 *  an interrupted copy leaves it so) with the attributes its neighbours expect; a damaged
 *  one's parts are removed first. False: a dry run found it missing or damaged (res says so). */
bool open_or_create(replica_sync_job &j)
{
	const auto &rep = j.ps.replicas[j.r];
	unsigned lanes = 1;
	try {
		j.pool = remote_pool::open(rep.target, rep.descriptor, j.m.base(), j.m.size(),
		                           &lanes, &j.have);
		return true;
	} catch (const rpmem::error &e) {
		const bool damaged = damaged_replica(e);
		if (e.errnum() != ENOENT && !damaged)
			throw;
		const char *state = damaged ? "damaged" : "missing";
		control::pool_attr want{};
		if (j.m.header()) {
			if (!j.rg.self(j.r))
				throw failure(fmt::format(
				    "{}: the replica is {} and the UUID its neighbours link "
				    "to is unknown (its neighbours are not reachable): re-create "
				    "it with `pmempool sync {}`",
				    j.name, state, j.ps.file));
			want = expected_attr(j.m, j.rg, j.r, want);
			want.uuid = *j.rg.self(j.r);
		}
		j.res.created = true;
		j.res.damaged = damaged;
		j.res.method = "full";
		if (j.a.dry_run) {
			j.res.to_move = j.m.size() - j.m.data_offset();
			say(j.a.json, "{}: {} ({}): would {}create it and copy {}\n", j.name, state,
			    e.message(), damaged ? "remove its parts, re-" : "",
			    size_text(j.res.to_move));
			j.res.status = state;
			return false;
		}
		if (damaged) {
			// rpmemd will not open it, and what it held is the master's, which sync
			// writes over every replica in any case: made anew, then copied whole.
			say(j.a.json, "{}: damaged ({}): removing its parts and re-creating it\n",
			    j.name, e.message());
			remote_pool::remove(rep.target, rep.descriptor, client::remove_force);
		} else {
			say(j.a.json, "{}: missing ({}): creating it\n", j.name, e.message());
		}
		const auto during = pmdk::with_behind_mark(want, j.m.header().has_value());
		j.pool = remote_pool::create(rep.target, rep.descriptor, j.m.base(), j.m.size(),
		                             &lanes, j.m.header() ? &during : nullptr);
		j.have = during;
		return true;
	}
}

/** What to write: the header attributes the ring expects (repair when they differ), and the
 *  blocks that differ (everything for a replica created just now). */
void plan(replica_sync_job &j)
{
	// (A replica created just now is marked by this sync, not found marked.)
	j.res.was_behind = !j.res.created && pmdk::marked_behind(j.have);
	if (j.m.header()) {
		j.rg.learn(j.r, j.have.uuid, j.have.prev_uuid, j.have.next_uuid);
		j.want = expected_attr(j.m, j.rg, j.r, j.have);
		j.repair = !attr_differences(j.want, j.have, j.rg, j.r).empty();
	}
	if (j.res.created) {
		j.ranges.push_back({j.m.data_offset(), j.m.size()});
	} else {
		j.ranges = what_differs(*j.pool, j.m, j.a, j.res, j.name);
		if (j.res.method == "delta")
			j.ranges = drop_unreplicated_only(*j.pool, j.m, std::move(j.ranges),
			                                  j.a.block_size, j.res);
	}
	for (const auto &x : j.ranges)
		j.res.to_move += x.size();
	j.res.ranges = j.ranges.size();
	j.res.header_repaired = j.repair;
}

/** --dry-run: says what would be done. */
void report_dry_run(replica_sync_job &j)
{
	auto &res = j.res;
	const bool nothing = j.ranges.empty() && !j.repair && !res.was_behind;
	res.status = nothing ? "in_sync" : "would_sync";
	if (j.repair)
		say(j.a.json, "{}: would repair its header attributes from the master's\n", j.name);
	if (res.was_behind)
		say(j.a.json, "{}: marked possibly behind the master: would clear the mark\n",
		    j.name);
	say(j.a.json, "{}: {} ({} in {} range(s) would move; {})\n", j.name,
	    nothing ? "in sync" : "would synchronize", size_text(res.to_move), res.ranges,
	    res.method == "delta"
	        ? fmt::format("{} of {} blocks of {} differ{}", res.differing_blocks, res.blocks,
	                      size_text(j.a.block_size), unreplicated_note(res))
	        : "whole pool");
}

/** Moves the blocks and repairs the header, the replica marked possibly behind meanwhile
 *  (client/replica_sync.hpp), so an interrupted sync (client, rpmemd or link gone at any
 *  point) leaves it marked and the next one redoes it. Returns whether anything was written. */
bool apply(replica_sync_job &j, progress::style style)
{
	if (j.repair)
		say(j.a.json, "{}: header attributes repaired from the master's\n", j.name);
	const auto during = pmdk::with_behind_mark(j.want, true);
	client::replica_destination dest(*j.pool, j.m.header() ? &during : nullptr,
	                                 j.m.header() ? &j.want : nullptr);
	std::optional<progress> bar;
	if (!j.ranges.empty())
		bar.emplace(fmt::format("sync {}", j.name), j.res.to_move,
		            j.a.json ? progress::style::none : style);
	const bool writes = client::apply_sync(
	    dest, j.ranges,
	    {.found_marked = j.res.was_behind || j.res.created, .other_writes = j.repair},
	    [&](std::uint64_t done, std::uint64_t) { bar->update(done); });
	if (bar)
		bar->finish();
	j.res.moved = j.res.to_move;
	if (j.m.header() && j.res.was_behind && !j.res.created)
		say(j.a.json, "{}: no longer marked possibly behind the master\n", j.name);
	return writes;
}

sync_result sync_replica(const poolset::poolset &ps, const master &m, ring &ring, std::size_t r,
                         const replicate_args &a, progress::style style)
{
	using clock = std::chrono::steady_clock;
	const auto start = clock::now();
	replica_sync_job j{ps, m, ring, r, a, replica_name(ps, r), {}, {}, {}, {}, false, {}};
	j.res.replica = r;
	if (!open_or_create(j))
		return j.res;
	plan(j);
	if (a.dry_run) {
		report_dry_run(j);
		j.pool->close();
		j.res.seconds = std::chrono::duration<double>(clock::now() - start).count();
		return j.res;
	}
	const bool writes = apply(j, style);
	j.pool->close();
	auto &res = j.res;
	res.seconds = std::chrono::duration<double>(clock::now() - start).count();
	res.status = writes || res.was_behind ? "synchronized" : "in_sync";
	if (res.method == "delta")
		say(a.json,
		    "{}: {} ({} moved in {} range(s); {} compared by {} block checksums, {} of {} "
		    "blocks differed{}; {:.2f} s)\n",
		    j.name, writes ? "synchronized" : "in sync, nothing moved",
		    size_text(res.moved), res.ranges, size_text(res.compared),
		    size_text(a.block_size), res.differing_blocks, res.blocks,
		    unreplicated_note(res), res.seconds);
	else
		say(a.json, "{}: synchronized ({} written, the whole pool; {:.2f} s)\n", j.name,
		    size_text(res.moved), res.seconds);
	return res;
}

void add_json(json &j, const poolset::poolset &ps, const sync_result &res)
{
	const auto &rep = ps.replicas[res.replica];
	j.begin_object()
	    .member("replica", std::uint64_t{res.replica})
	    .member("target", rep.target)
	    .member("descriptor", rep.descriptor)
	    .member("status", res.status);
	if (!res.error.empty()) {
		j.member("error", res.error).end_object();
		return;
	}
	j.member("method", res.method);
	if (!res.fallback.empty())
		j.member("fallback", res.fallback);
	j.member("created", res.created)
	    .member("was_damaged", res.damaged)
	    .member("header_repaired", res.header_repaired)
	    .member("was_marked_behind", res.was_behind)
	    .member("compared_bytes", res.compared)
	    .member("blocks", res.blocks)
	    .member("differing_blocks", res.differing_blocks)
	    .member("ranges", std::uint64_t{res.ranges})
	    .member("bytes_to_move", res.to_move)
	    .member("moved_bytes", res.moved)
	    .member("seconds", res.seconds)
	    .member("unreplicated_blocks", res.unreplicated_blocks)
	    .member("compare_seconds", res.compare_seconds)
	    .member("local_checksum_seconds", res.local_checksum_seconds)
	    .end_object();
}

} // namespace

/** The ranges to move between the master and an open replica: the differing blocks (block
 *  checksums), or the whole pool with --full or where rpmemd cannot checksum (said why). */
std::vector<client::byte_span> what_differs(client::remote_pool &pool, const master &m,
                                            const replicate_args &a, sync_result &res,
                                            const std::string &name)
{
	const std::uint64_t begin = m.data_offset();
	auto plan = client::plan_sync(pool, m.base(), begin, m.size(), a.full, a.block_size);
	res.method = plan.method;
	res.fallback = plan.fallback;
	if (plan.method == "delta") {
		res.compared = m.size() - begin;
		res.blocks = plan.diff.blocks;
		res.differing_blocks = plan.diff.differing_blocks;
		res.compare_seconds = plan.diff.compare_seconds;
		res.local_checksum_seconds = plan.diff.local_seconds;
	} else if (!plan.fallback.empty()) {
		say(a.json, "{}: {}: copying the whole pool instead\n", name, plan.fallback);
	}
	return std::move(plan.ranges);
}

std::string resync_replica(const poolset::poolset &ps, const master &m, ring &ring, std::size_t r)
{
	replicate_args quiet;
	quiet.poolset = ps.file;
	quiet.json = true; // no text lines
	auto res = sync_replica(ps, m, ring, r, quiet, progress::style::none);
	std::string what = res.created
	                       ? fmt::format("{}re-created and {} copied",
	                                     res.damaged ? "its damaged parts removed, " : "",
	                                     size_text(res.moved))
	                   : res.moved ? fmt::format("synchronized, {} moved in {} range(s)",
	                                             size_text(res.moved), res.ranges)
	                               : "nothing moved";
	if (res.header_repaired)
		what += "; header attributes set from the master's";
	if (res.was_behind)
		what += "; no longer marked possibly behind";
	return what;
}

namespace
{

/** The arguments sync was given, checked: --block-size parsed, --from and --replica apart. */
replicate_args checked(const replicate_args &a)
{
	const std::uint64_t bs = parse_size_arg(a.block_size_text, "--block-size");
	if (bs < control::min_checksum_block || bs > control::max_checksum_block || (bs & (bs - 1)))
		throw failure(
		    fmt::format("invalid --block-size '{}': give a power of two from 4KiB "
		                "to 64MiB",
		                a.block_size_text),
		    exit_usage);
	if (a.from >= 0 && a.replicas.size() > 0)
		throw failure(
		    "--from and --replica exclude each other: --from R rebuilds the master "
		    "from replica R",
		    exit_usage);
	auto args = a;
	args.block_size = static_cast<std::uint32_t>(bs);
	return args;
}

/** One replica's sync (or the master's rebuild from it); with --json a failure is its
 *  entry's status, else it ends the command. */
sync_result sync_one(const poolset::poolset &ps, master &m, ring &ring, std::size_t r,
                     const replicate_args &a, progress::style style, int &result)
{
	try {
		return a.from >= 0 ? rebuild_master(ps, m, r, a, style)
		                   : sync_replica(ps, m, ring, r, a, style);
	} catch (const std::exception &e) {
		const auto *err = dynamic_cast<const rpmem::error *>(&e);
		const auto *fail = dynamic_cast<const failure *>(&e);
		if (!err && !fail)
			throw;
		auto what = fmt::format("{}: {}", replica_name(ps, r), e.what());
		if (!a.json)
			throw failure(what);
		sync_result res;
		res.replica = r;
		res.status = "error";
		res.error = what;
		result = exit_failed;
		return res;
	}
}

} // namespace

int cmd_sync(const replicate_args &given)
{
	const auto a = checked(given);
	auto ps = load(a.poolset);
	auto which =
	    selected(ps, a.from >= 0 ? std::vector{static_cast<unsigned>(a.from)} : a.replicas);
	auto style = progress::parse_style(a.progress);
	master m(ps);
	if (a.from < 0 && m.rebuilding())
		throw failure(fmt::format(
		    "{}: the master is marked as being rebuilt from a replica (an interrupted "
		    "`rpmem sync --from`): finish that first (`rpmem sync --from R {}`)",
		    ps.file, ps.file));
	ring ring(ps, m);
	json j;
	std::uint64_t to_move = 0, moved = 0;
	int result = exit_ok;
	j.begin_object()
	    .member("poolset", a.poolset)
	    .member("dry_run", a.dry_run)
	    .member("direction", a.from >= 0 ? "to_master" : "to_replicas")
	    .member("block_size", std::uint64_t{a.block_size})
	    .key("replicas")
	    .begin_array();
	for (auto r : which) {
		const auto res = sync_one(ps, m, ring, r, a, style, result);
		to_move += res.to_move;
		moved += res.moved;
		add_json(j, ps, res);
	}
	if (a.from < 0 && !a.dry_run && result == exit_ok) {
		// In line with the master now: off the master's record of replicas behind.
		std::set<std::string> synced;
		for (auto r : which)
			synced.insert(pmdk::behind_record::key(ps.replicas[r]));
		pmdk::behind_record(ps).remove(synced);
	}
	if (a.json) {
		j.end_array()
		    .member("bytes_to_move", to_move)
		    .member("moved_bytes", moved)
		    .member("exit_status", result)
		    .end_object();
		fmt::print("{}\n", j.str());
	}
	return result;
}

} // namespace rpmem::tool
