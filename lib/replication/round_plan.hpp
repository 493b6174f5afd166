// SPDX-License-Identifier: BSD-3-Clause
// How asynchronous replication cuts its queue of snapshots into rounds: each round is sent to a
// replica as relaxed flushes and one drain, and the replica holds a prefix of the persists at
// every moment only if no round lets a later range overtake an earlier one.
#pragma once

#include <algorithm>
#include <cstddef>

namespace rpmem::replication
{

/**
 * The end of the round that starts at range `from` of n ranges (length_of(i) is range i's
 * length): ranges whose costs fit one lane request, at most max_ranges of them, and no
 * RDMA-written range after an inline one. rpmemd applies inline bytes when the request
 * arrives, after every write posted before the request: a write following inline bytes in
 * the same round would reach the replica before them, so a replica could hold a later persist
 * without an earlier one (writes before inline bytes are fine: they land first, in order).
 * At least one range. Lanes: travels_inline(len), batch_cost(len), batch_capacity() (as
 * client::data_path has them).
 */
template <class Lanes, class LengthOf>
std::size_t round_end(const Lanes &lanes, std::size_t n, std::size_t from, std::size_t max_ranges,
                      LengthOf length_of)
{
	std::size_t used = 0, to = from;
	bool inline_seen = false;
	for (; to < n && to - from < max_ranges; ++to) {
		const std::size_t len = length_of(to);
		const bool inl = lanes.travels_inline(len);
		const std::size_t cost = lanes.batch_cost(len);
		if (to > from && (used + cost > lanes.batch_capacity() || (!inl && inline_seen)))
			break;
		used += cost;
		inline_seen = inline_seen || inl;
	}
	return to;
}

} // namespace rpmem::replication
