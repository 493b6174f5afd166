// SPDX-License-Identifier: BSD-3-Clause
// rpmem verify POOLSET and rpmem sync POOLSET: the master's local parts against each REMOTE
// replica, range by range. verify reads the replica back through the data path
// (remote_pool::read) and reports the ranges that differ; sync persists the master's ranges
// to the replica (creating it if it was lost) and repairs its header links.
#include "client/json.hpp"
#include "master.hpp"
#include "progress.hpp"
#include "replicas.hpp"
#include "tool.hpp"

#include "client/block_diff.hpp"
#include "client/remote_pool.hpp"
#include "pmdk/obj_heap.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <optional>
#include <span>
#include <sys/mman.h>
#include <unistd.h>

namespace rpmem::tool
{

namespace
{

using client::remote_pool;
using uuid = std::array<std::uint8_t, 16>;

constexpr std::uint64_t verify_chunk = 1u << 20;
constexpr std::uint64_t block = 4096;

struct range {
	std::uint64_t begin, end;
};

/** Appends the byte ranges where a and b (at pool offset base) differ, merging neighbours. */
void diff_chunk(const std::uint8_t *a, const std::uint8_t *b, std::uint64_t len, std::uint64_t base,
                std::vector<range> &out)
{
	for (std::uint64_t off = 0; off < len; off += block) {
		std::uint64_t n = std::min(block, len - off);
		if (std::memcmp(a + off, b + off, n) == 0)
			continue;
		std::uint64_t first = off, last = off + n - 1;
		while (a[first] == b[first])
			++first;
		while (a[last] == b[last])
			--last;
		range d{base + first, base + last + 1};
		if (!out.empty() && out.back().end + block > d.begin)
			out.back().end = d.end;
		else
			out.push_back(d);
	}
}

/** What libpmemobj never persists, so never replicates (lib/pmdk/obj_heap.hpp): its
 *  descriptor's run-time fields, huge-chunk footers, free space. Empty for other pools. */
std::vector<pmdk::byte_range> ignored(const master &m)
{
	if (!m.header() || signature_text(m.header()->signature) != "PMEMOBJ")
		return {};
	return pmdk::obj_unreplicated(std::span<const std::uint8_t>(m.base(), m.size()));
}

/** Makes the replica's copy (buf, at pool offset off, n bytes) equal the master's in the
 *  ranges not compared. `next` walks the sorted ranges along with the chunks. */
void mask_ignored(const master &m, const std::vector<pmdk::byte_range> &skip, std::size_t &next,
                  std::uint8_t *buf, std::uint64_t off, std::uint64_t n)
{
	while (next < skip.size() && skip[next].end <= off)
		++next;
	for (std::size_t i = next; i < skip.size() && skip[i].begin < off + n; ++i) {
		auto from = std::max(skip[i].begin, off), to = std::min(skip[i].end, off + n);
		std::memcpy(buf + (from - off), m.base() + from, to - from);
	}
}

/** What verify found on one replica. */
struct verify_result {
	std::size_t replica = 0;
	bool marked_behind = false;
	std::vector<std::string> header_problems;
	std::vector<range> diffs;
	std::uint64_t diff_bytes = 0;
	std::uint64_t compared = 0; // bytes compared
	std::uint64_t skipped = 0;  // bytes libpmemobj never replicates, not compared
	std::size_t skipped_ranges = 0;
	std::string error; // could not compare at all (json mode; text mode throws)
	bool in_sync() const { return error.empty() && diffs.empty() && header_problems.empty(); }
};

verify_result verify_replica(const poolset::poolset &ps, const master &m, ring &ring, std::size_t r)
{
	const auto &rep = ps.replicas[r];
	verify_result res;
	res.replica = r;
	scratch buf(m.size());
	unsigned lanes = 1;
	control::pool_attr have{};
	auto pool =
	    remote_pool::open(rep.target, rep.descriptor, buf.data(), m.size(), &lanes, &have);
	res.marked_behind = have.compat_features & pmdk::feat_compat_rpmem_behind;
	if (m.header()) {
		ring.learn(r, have.uuid, have.prev_uuid, have.next_uuid);
		auto want = expected_attr(m, ring, r, have);
		res.header_problems = attr_differences(want, have, ring, r);
	} else if (!have.is_zero()) {
		res.header_problems.push_back("the replica has a pool header, the master has none "
		                              "(OPTION NOHDRS)");
	}
	const std::uint64_t begin = m.data_offset();
	const auto skip = ignored(m);
	for (const auto &s : skip)
		res.skipped += s.end > begin ? s.end - std::max(s.begin, begin) : 0;
	res.skipped_ranges = skip.size();
	res.compared = m.size() - begin - res.skipped;
	std::size_t next = 0;
	for (std::uint64_t off = begin; off < m.size(); off += verify_chunk) {
		std::uint64_t n = std::min(verify_chunk, m.size() - off);
		pool->read(buf.data(), off, n, 0);
		mask_ignored(m, skip, next, buf.data(), off, n);
		diff_chunk(m.base() + off, buf.data(), n, off, res.diffs);
	}
	pool->close();
	for (const auto &d : res.diffs)
		res.diff_bytes += d.end - d.begin;
	return res;
}

void print_text(const poolset::poolset &ps, const verify_result &res, std::size_t max_ranges)
{
	const auto name = replica_name(ps, res.replica);
	if (res.marked_behind)
		fmt::print("{}: marked possibly behind the master (an asynchronous writer did not "
		           "close it cleanly); the comparison below says whether it is; `rpmem "
		           "sync` clears the mark\n",
		           name);
	for (const auto &d : res.header_problems)
		fmt::print("{}: header: {}\n", name, d);
	if (res.in_sync()) {
		fmt::print(
		    "{}: in sync ({} compared{})\n", name, size_text(res.compared),
		    res.skipped_ranges == 0
		        ? ""
		        : fmt::format("; {} in {} range(s) skipped: what libpmemobj never "
		                      "replicates (run-time fields, huge-chunk footers, free "
		                      "space)",
		                      size_text(res.skipped), res.skipped_ranges));
		return;
	}
	if (!res.diffs.empty())
		fmt::print("{}: {} range(s) differ, {} in all:\n", name, res.diffs.size(),
		           size_text(res.diff_bytes));
	for (std::size_t i = 0; i < res.diffs.size() && i < max_ranges; ++i)
		fmt::print("  0x{:x}-0x{:x} ({} bytes)\n", res.diffs[i].begin, res.diffs[i].end,
		           res.diffs[i].end - res.diffs[i].begin);
	if (res.diffs.size() > max_ranges)
		fmt::print("  ... and {} more (--max-ranges)\n", res.diffs.size() - max_ranges);
}

void add_json(json &j, const poolset::poolset &ps, const verify_result &res, std::size_t max_ranges)
{
	const auto &rep = ps.replicas[res.replica];
	j.begin_object()
	    .member("replica", std::uint64_t{res.replica})
	    .member("target", rep.target)
	    .member("descriptor", rep.descriptor)
	    .member("status", !res.error.empty() ? "error"
	                      : res.in_sync()    ? "in_sync"
	                                         : "differ");
	if (!res.error.empty()) {
		j.member("error", res.error).end_object();
		return;
	}
	j.member("marked_behind", res.marked_behind).key("header_problems").begin_array();
	for (const auto &p : res.header_problems)
		j.value(p);
	j.end_array()
	    .member("compared_bytes", res.compared)
	    .member("skipped_bytes", res.skipped)
	    .member("skipped_ranges", std::uint64_t{res.skipped_ranges})
	    .member("differing_bytes", res.diff_bytes)
	    .member("differing_range_count", std::uint64_t{res.diffs.size()})
	    .key("differing_ranges")
	    .begin_array();
	for (std::size_t i = 0; i < res.diffs.size() && i < max_ranges; ++i)
		j.begin_object()
		    .member("begin", res.diffs[i].begin)
		    .member("end", res.diffs[i].end)
		    .end_object();
	j.end_array().end_object();
}

/** What sync did (or, with --dry-run, would do) to one replica. */
struct sync_result {
	std::size_t replica = 0;
	std::string status;   // in_sync, synchronized, would_sync, missing, error
	std::string method;   // delta (block checksums) or full
	std::string fallback; // why a delta was not possible, when it was wanted
	bool created = false; // missing, re-created (a dry run: would be)
	bool header_repaired = false;
	bool was_behind = false; // marked possibly behind before
	std::uint64_t compared = 0, blocks = 0, differing_blocks = 0;
	std::uint64_t to_move = 0, moved = 0;
	std::size_t ranges = 0;
	double seconds = 0;
	double compare_seconds = 0, local_checksum_seconds = 0;
	std::uint64_t unreplicated_blocks = 0; // differed only in what libpmemobj never replicates
	std::string error;
};

/** ", and 2 only in what libpmemobj never replicates (not moved)" or nothing. */
std::string unreplicated_note(const sync_result &res)
{
	if (res.unreplicated_blocks == 0)
		return {};
	return fmt::format(", and {} only in what libpmemobj never replicates (not moved)",
	                   res.unreplicated_blocks);
}

/** The ranges to move between the master and an open replica: the differing blocks (block
 *  checksums), or the whole pool with --full or where rpmemd cannot checksum (said why). */
std::vector<client::byte_span> what_differs(remote_pool &pool, const master &m,
                                            const replicate_args &a, sync_result &res,
                                            const std::string &name)
{
	const std::uint64_t begin = m.data_offset();
	if (a.full) {
		res.method = "full";
		return {{begin, m.size()}};
	}
	try {
		auto d = client::compare_blocks(pool, m.base(), begin, m.size(), a.block_size);
		res.method = "delta";
		res.compared = m.size() - begin;
		res.blocks = d.blocks;
		res.differing_blocks = d.differing_blocks;
		res.compare_seconds = d.compare_seconds;
		res.local_checksum_seconds = d.local_seconds;
		return std::move(d.ranges);
	} catch (const rpmem::error &e) {
		if (e.errnum() != ENOTSUP)
			throw;
		res.method = "full";
		res.fallback = e.message();
		say(a.json, "{}: {}: copying the whole pool instead\n", name, e.message());
		return {{begin, m.size()}};
	}
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

sync_result sync_replica(const poolset::poolset &ps, const master &m, ring &ring, std::size_t r,
                         const replicate_args &a, progress::style style)
{
	using clock = std::chrono::steady_clock;
	const auto start = clock::now();
	const auto &rep = ps.replicas[r];
	const auto name = replica_name(ps, r);
	sync_result res;
	res.replica = r;
	unsigned lanes = 1;
	control::pool_attr have{};
	std::unique_ptr<remote_pool> pool;
	const std::uint64_t begin = m.data_offset();
	try {
		pool = remote_pool::open(rep.target, rep.descriptor, m.base(), m.size(), &lanes,
		                         &have);
	} catch (const rpmem::error &e) {
		if (e.errnum() != ENOENT)
			throw;
		// The replica was lost: create it with the attributes its neighbours expect.
		control::pool_attr want{};
		if (m.header()) {
			if (!ring.self(r))
				throw failure(fmt::format(
				    "{}: the replica is missing and the UUID its neighbours link "
				    "to is unknown (its neighbours are not reachable): re-create "
				    "it "
				    "with `pmempool sync {}`",
				    name, ps.file));
			want = expected_attr(m, ring, r, want);
			want.uuid = *ring.self(r);
		}
		res.created = true;
		res.method = "full";
		if (a.dry_run) {
			res.to_move = m.size() - begin;
			say(a.json, "{}: missing ({}): would create it and copy {}\n", name,
			    e.message(), size_text(res.to_move));
			res.status = "missing";
			return res;
		}
		say(a.json, "{}: missing ({}): creating it\n", name, e.message());
		lanes = 1;
		// Created marked possibly behind: an interrupted copy leaves it so.
		auto during = want;
		if (m.header())
			during.compat_features |= pmdk::feat_compat_rpmem_behind;
		pool = remote_pool::create(rep.target, rep.descriptor, m.base(), m.size(), &lanes,
		                           m.header() ? &during : nullptr);
		have = during;
	}
	// (A replica created just now is marked by this sync, not found marked.)
	res.was_behind = !res.created && (have.compat_features & pmdk::feat_compat_rpmem_behind);
	control::pool_attr want{};
	bool repair = false;
	if (m.header()) {
		ring.learn(r, have.uuid, have.prev_uuid, have.next_uuid);
		want = expected_attr(m, ring, r, have);
		repair = !attr_differences(want, have, ring, r).empty();
	}

	// What differs: by block checksums unless a full copy is asked for or needed.
	std::vector<client::byte_span> ranges;
	if (res.created) {
		ranges.push_back({begin, m.size()});
	} else {
		ranges = what_differs(*pool, m, a, res, name);
		if (res.method == "delta")
			ranges =
			    drop_unreplicated_only(*pool, m, std::move(ranges), a.block_size, res);
	}
	for (const auto &x : ranges)
		res.to_move += x.size();
	res.ranges = ranges.size();
	res.header_repaired = repair;

	if (a.dry_run) {
		const bool nothing = ranges.empty() && !repair && !res.was_behind;
		res.status = nothing ? "in_sync" : "would_sync";
		if (repair)
			say(a.json, "{}: would repair its header attributes from the master's\n",
			    name);
		if (res.was_behind)
			say(a.json, "{}: marked possibly behind the master: would clear the mark\n",
			    name);
		say(a.json, "{}: {} ({} in {} range(s) would move; {})\n", name,
		    nothing ? "in sync" : "would synchronize", size_text(res.to_move), res.ranges,
		    res.method == "delta"
		        ? fmt::format("{} of {} blocks of {} differ{}", res.differing_blocks,
		                      res.blocks, size_text(a.block_size), unreplicated_note(res))
		        : "whole pool");
		pool->close();
		res.seconds = std::chrono::duration<double>(clock::now() - start).count();
		return res;
	}

	// Marked possibly behind while anything is written, so an interrupted sync (client,
	// rpmemd or link gone at any point) leaves the replica marked and the next one redoes it.
	const bool writes = !ranges.empty() || repair;
	if (m.header() && writes && !res.created) {
		auto during = want;
		during.compat_features |= pmdk::feat_compat_rpmem_behind;
		pool->set_attr(&during);
	}
	if (repair)
		say(a.json, "{}: header attributes repaired from the master's\n", name);
	if (!ranges.empty()) {
		progress bar(fmt::format("sync {}", name), res.to_move,
		             a.json ? progress::style::none : style);
		client::push_ranges(*pool, ranges,
		                    [&](std::uint64_t done, std::uint64_t) { bar.update(done); });
		bar.finish();
	}
	res.moved = res.to_move;
	if (m.header() && (writes || res.was_behind || res.created)) {
		pool->set_attr(&want); // every byte moved is durable: no longer behind
		if (res.was_behind && !res.created)
			say(a.json, "{}: no longer marked possibly behind the master\n", name);
	}
	pool->close();
	res.seconds = std::chrono::duration<double>(clock::now() - start).count();
	res.status = writes || res.was_behind ? "synchronized" : "in_sync";
	if (res.method == "delta")
		say(a.json,
		    "{}: {} ({} moved in {} range(s); {} compared by {} block checksums, {} of {} "
		    "blocks differed{}; {:.2f} s)\n",
		    name, writes ? "synchronized" : "in sync, nothing moved", size_text(res.moved),
		    res.ranges, size_text(res.compared), size_text(a.block_size),
		    res.differing_blocks, res.blocks, unreplicated_note(res), res.seconds);
	else
		say(a.json, "{}: synchronized ({} written, the whole pool; {:.2f} s)\n", name,
		    size_text(res.moved), res.seconds);
	return res;
}

/**
 * rpmem sync --from R: the master rebuilt from replica R, moving only the blocks that differ
 * (rpmem_read of each into the master's mapping, persisted locally). While bytes move, the
 * master's header carries an incompat feature bit libpmemobj does not know, so an application
 * cannot open a half-rebuilt master and an interrupted rebuild is finished by running it again.
 */
sync_result rebuild_master(const poolset::poolset &ps, master &m, std::size_t r,
                           const replicate_args &a, progress::style style)
{
	using clock = std::chrono::steady_clock;
	const auto start = clock::now();
	const auto &rep = ps.replicas[r];
	const auto name = fmt::format("master from {}", replica_name(ps, r));
	sync_result res;
	res.replica = r;
	unsigned lanes = 1;
	control::pool_attr have{};
	auto pool =
	    remote_pool::open(rep.target, rep.descriptor, m.base(), m.size(), &lanes, &have);
	res.was_behind = have.compat_features & pmdk::feat_compat_rpmem_behind;
	if (m.header()) {
		const auto want = pmdk::header_attr(*m.header());
		if (have.is_zero() || have.poolset_uuid != want.poolset_uuid)
			throw failure(fmt::format(
			    "{}: the replica holds another pool set (pool set UUID {}, the "
			    "master's is {}): nothing to rebuild the master from",
			    replica_name(ps, r), uuid_text(have.poolset_uuid),
			    uuid_text(want.poolset_uuid)));
	}
	if (res.was_behind && !a.force)
		throw failure(fmt::format(
		    "{}: the replica is marked possibly behind the master (an asynchronous writer "
		    "or a sync did not finish): it may miss what the master holds; rebuild from "
		    "it anyway with --force, or from another replica",
		    replica_name(ps, r)));
	auto ranges = what_differs(*pool, m, a, res, name);
	for (const auto &x : ranges)
		res.to_move += x.size();
	res.ranges = ranges.size();
	const bool was_rebuilding = m.rebuilding();
	if (a.dry_run) {
		const bool nothing = ranges.empty() && !was_rebuilding;
		res.status = nothing ? "in_sync" : "would_sync";
		say(a.json, "{}: {} ({} in {} range(s) would move to the master{})\n", name,
		    nothing ? "in sync" : "would rebuild", size_text(res.to_move), res.ranges,
		    was_rebuilding ? "; the master is marked as being rebuilt" : "");
		pool->close();
		res.seconds = std::chrono::duration<double>(clock::now() - start).count();
		return res;
	}
	if (!ranges.empty() && m.header() && !was_rebuilding)
		m.mark_rebuilding(true);
	if (!ranges.empty()) {
		progress bar(fmt::format("sync {}", name), res.to_move,
		             a.json ? progress::style::none : style);
		client::pull_ranges(
		    *pool, m.base(), ranges,
		    [&](std::uint64_t off, std::uint64_t n) { m.persist(off, n); },
		    [&](std::uint64_t done, std::uint64_t) { bar.update(done); });
		bar.finish();
	}
	pool->close();
	res.moved = res.to_move;
	if (m.header() && m.rebuilding())
		m.mark_rebuilding(false); // every byte read is durable in the master
	res.seconds = std::chrono::duration<double>(clock::now() - start).count();
	res.status = ranges.empty() && !was_rebuilding ? "in_sync" : "synchronized";
	say(a.json, "{}: {} ({} read in {} range(s); {}; {:.2f} s)\n", name,
	    ranges.empty() ? "in sync, nothing moved" : "rebuilt", size_text(res.moved), res.ranges,
	    res.method == "delta"
	        ? fmt::format("{} of {} blocks differed", res.differing_blocks, res.blocks)
	        : "the whole pool",
	    res.seconds);
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

int cmd_verify(const replicate_args &a)
{
	poolset::poolset ps;
	std::unique_ptr<master> m;
	std::vector<std::size_t> which;
	try {
		ps = load(a.poolset);
		which = selected(ps, a.replicas);
		m = std::make_unique<master>(ps);
	} catch (const failure &f) {
		throw failure(f.what(), exit_usage); // could not compare at all
	}
	ring ring(ps, *m);
	int result = exit_ok;
	json j;
	if (a.json)
		j.begin_object().member("poolset", a.poolset).key("replicas").begin_array();
	for (auto r : which) {
		verify_result res;
		try {
			res = verify_replica(ps, *m, ring, r);
		} catch (const rpmem::error &e) {
			if (!a.json)
				throw failure(
				    fmt::format("{}: {}", replica_name(ps, r), rpmem::describe(e)),
				    exit_usage);
			res.replica = r;
			res.error = rpmem::describe(e);
			result = exit_usage;
		}
		if (!res.in_sync() && result == exit_ok)
			result = exit_differ;
		if (a.json)
			add_json(j, ps, res, a.max_ranges);
		else
			print_text(ps, res, a.max_ranges);
	}
	if (a.json) {
		j.end_array()
		    .member("in_sync", result == exit_ok)
		    .member("exit_status", result)
		    .end_object();
		fmt::print("{}\n", j.str());
	}
	return result;
}

std::string resync_replica(const poolset::poolset &ps, const master &m, ring &ring, std::size_t r)
{
	replicate_args quiet;
	quiet.poolset = ps.file;
	quiet.json = true; // no text lines
	auto res = sync_replica(ps, m, ring, r, quiet, progress::style::none);
	std::string what = res.created
	                       ? fmt::format("re-created and {} copied", size_text(res.moved))
	                   : res.moved ? fmt::format("synchronized, {} moved in {} range(s)",
	                                             size_text(res.moved), res.ranges)
	                               : "nothing moved";
	if (res.header_repaired)
		what += "; header attributes set from the master's";
	if (res.was_behind)
		what += "; no longer marked possibly behind";
	return what;
}

int cmd_sync(const replicate_args &a)
{
	auto ps = load(a.poolset);
	auto which = selected(ps, a.replicas);
	auto style = progress::parse_style(a.progress);
	const std::uint64_t bs = parse_size_arg(a.block_size_text, "--block-size");
	if (bs < control::min_checksum_block || bs > control::max_checksum_block || (bs & (bs - 1)))
		throw failure(
		    fmt::format("invalid --block-size '{}': give a power of two from 4KiB "
		                "to 64MiB",
		                a.block_size_text),
		    exit_usage);
	auto args = a;
	args.block_size = static_cast<std::uint32_t>(bs);
	if (a.from >= 0 && a.replicas.size() > 0)
		throw failure(
		    "--from and --replica exclude each other: --from R rebuilds the master "
		    "from replica R",
		    exit_usage);
	if (a.from >= 0)
		which = selected(ps, {static_cast<unsigned>(a.from)});
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
	if (a.json)
		j.begin_object()
		    .member("poolset", a.poolset)
		    .member("dry_run", a.dry_run)
		    .member("direction", a.from >= 0 ? "to_master" : "to_replicas")
		    .member("block_size", std::uint64_t{bs})
		    .key("replicas")
		    .begin_array();
	for (auto r : which) {
		sync_result res;
		try {
			res = a.from >= 0 ? rebuild_master(ps, m, r, args, style)
			                  : sync_replica(ps, m, ring, r, args, style);
		} catch (const std::exception &e) {
			const auto *err = dynamic_cast<const rpmem::error *>(&e);
			const auto *fail = dynamic_cast<const failure *>(&e);
			if (!err && !fail)
				throw;
			auto what = fmt::format("{}: {}", replica_name(ps, r), e.what());
			if (!a.json)
				throw failure(what);
			res.replica = r;
			res.status = "error";
			res.error = what;
			result = exit_failed;
		}
		to_move += res.to_move;
		moved += res.moved;
		if (a.json)
			add_json(j, ps, res);
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
