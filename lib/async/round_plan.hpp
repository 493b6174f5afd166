// SPDX-License-Identifier: BSD-3-Clause
// How asynchronous replication cuts its queue of snapshots into rounds: each round is sent to a
// replica as relaxed flushes and one drain, and the replica holds a prefix of the persists at
// every moment only if no round lets a later range overtake an earlier one, in memory or on
// the way to the media.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <vector>

namespace rpmem::async
{

/**
 * The end of the round that starts at range `from` of n ranges (length_of(i) is range i's
 * length), for a round sent to every replica in `replicas` (each a pointer to its lanes):
 * ranges whose costs fit one lane request of each replica, at most max_ranges of them, and, on
 * every replica, an RDMA-written range only as the round's first. rpmemd applies a request's
 * entries in order, each durable before the next one's inline bytes are written, but the
 * writes posted before the request have all landed by then, unflushed, where any of them may
 * reach the media first: one written range per round keeps the replica's media a prefix of
 * the persists even if its host loses power. (And a write after inline bytes would land
 * before rpmemd applied them: a later persist ahead of an earlier one even in memory.) Each
 * replica measures its own inline threshold at connect, so a range may travel inline to one
 * replica and be written to another: the rule is checked for each replica, with its own
 * lanes. At least one range.
 * Lanes: travels_inline(len), batch_cost(len), batch_capacity() (as client::data_path has
 * them).
 */
template <class LanesPtrs, class LengthOf>
std::size_t round_end(const LanesPtrs &replicas, std::size_t n, std::size_t from,
                      std::size_t max_ranges, LengthOf length_of)
{
	std::vector<std::size_t> used(std::size(replicas), 0); // request bytes, per replica
	std::size_t to = from;
	for (; to < n && to - from < max_ranges; ++to) {
		const std::size_t len = length_of(to);
		bool end = false;
		std::size_t k = 0;
		for (const auto *lanes : replicas) {
			end = end || used[k++] + lanes->batch_cost(len) > lanes->batch_capacity() ||
			      !lanes->travels_inline(len);
		}
		if (to > from && end)
			break;
		k = 0;
		for (const auto *lanes : replicas)
			used[k++] += lanes->batch_cost(len);
	}
	return to;
}

} // namespace rpmem::async
