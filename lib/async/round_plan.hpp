// SPDX-License-Identifier: BSD-3-Clause
// How asynchronous replication cuts its queue of snapshots into rounds: each round is sent to a
// replica as relaxed flushes and one drain, and the replica holds a prefix of the persists at
// every moment only if no round lets a later range overtake an earlier one.
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
 * no replica, a range RDMA-written after one that travels inline. rpmemd
 * applies inline bytes when the request arrives, after every write posted before the request:
 * a write following inline bytes in the same round would reach the replica before them, so a
 * replica could hold a later persist without an earlier one (writes before inline bytes are
 * fine: they land first, in order). Each replica measures its own inline threshold at
 * connect, so a range may travel inline to one replica and be written to another: the rule is
 * checked for each replica, with its own lanes. At least one range.
 * Lanes: travels_inline(len), batch_cost(len), batch_capacity() (as client::data_path has
 * them).
 */
template <class LanesPtrs, class LengthOf>
std::size_t round_end(const LanesPtrs &replicas, std::size_t n, std::size_t from,
                      std::size_t max_ranges, LengthOf length_of)
{
	struct state {
		std::size_t used = 0;     // request bytes the round takes
		bool inline_seen = false; // the round carries inline bytes to this replica
	};
	std::vector<state> st(std::size(replicas));
	std::size_t to = from;
	for (; to < n && to - from < max_ranges; ++to) {
		const std::size_t len = length_of(to);
		bool end = false;
		std::size_t k = 0;
		for (const auto *lanes : replicas) {
			const auto &s = st[k++];
			end = end || s.used + lanes->batch_cost(len) > lanes->batch_capacity() ||
			      (s.inline_seen && !lanes->travels_inline(len));
		}
		if (to > from && end)
			break;
		k = 0;
		for (const auto *lanes : replicas) {
			auto &s = st[k++];
			s.used += lanes->batch_cost(len);
			s.inline_seen = s.inline_seen || lanes->travels_inline(len);
		}
	}
	return to;
}

} // namespace rpmem::async
