// SPDX-License-Identifier: BSD-3-Clause
// rpmem sync --from R: the master rebuilt from replica R, moving only the blocks that differ,
// through the sync protocol of client/replica_sync.hpp (the master marked as being rebuilt
// meanwhile).
#include "sync.hpp"

#include "replicas.hpp"

#include "pmdk/pool_header.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <optional>

namespace rpmem::tool
{

namespace
{

using client::remote_pool;

/** Opens replica r as the source of the master's rebuild: it must hold the master's pool set,
 *  and one marked possibly behind is taken only with --force. */
std::unique_ptr<remote_pool> open_source(const poolset::poolset &ps, master &m, std::size_t r,
                                         const replicate_args &a, sync_result &res)
{
	const auto &rep = ps.replicas[r];
	unsigned lanes = 1;
	control::pool_attr have{};
	auto pool =
	    remote_pool::open(rep.target, rep.descriptor, m.base(), m.size(), &lanes, &have);
	res.was_behind = pmdk::marked_behind(have);
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
		    "{}: the replica is marked possibly behind the master (its writer could leave "
		    "it "
		    "behind and did not close it cleanly, or a sync did not finish): it may miss "
		    "what the master holds; rebuild from "
		    "it anyway with --force, or from another replica",
		    replica_name(ps, r)));
	return pool;
}

} // namespace

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
	const auto name = fmt::format("master from {}", replica_name(ps, r));
	sync_result res;
	res.replica = r;
	auto pool = open_source(ps, m, r, a, res);
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
	// The master is marked as being rebuilt while bytes move (client/replica_sync.hpp):
	// libpmemobj refuses it meanwhile, and an interrupted rebuild is finished by running it
	// again.
	client::local_destination dest(
	    *pool, m.base(), [&](std::uint64_t off, std::uint64_t n) { m.persist(off, n); },
	    [&](bool on) { m.mark_rebuilding(on); });
	std::optional<progress> bar;
	if (!ranges.empty())
		bar.emplace(fmt::format("sync {}", name), res.to_move,
		            a.json ? progress::style::none : style);
	client::apply_sync(dest, ranges, {.found_marked = was_rebuilding},
	                   [&](std::uint64_t done, std::uint64_t) { bar->update(done); });
	if (bar)
		bar->finish();
	pool->close();
	res.moved = res.to_move;
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

} // namespace rpmem::tool
