// SPDX-License-Identifier: BSD-3-Clause
// How asynchronous replication cuts its queue into rounds (lib/async/round_plan.hpp):
// the request's capacity, the range limit, and the prefix rule — an RDMA-written range only
// opens a round (a write after inline bytes let a killed writer leave a replica with a later
// persist and an earlier one missing; two writes in one round both land unflushed, where a
// power failure of the replica may keep the second without the first).
#include "async/round_plan.hpp"

#include <catch2/catch.hpp>

#include <vector>

using rpmem::async::round_end;

namespace
{

/** A lane whose requests hold `capacity` payload bytes; ranges up to `threshold` bytes travel
 * inline (costing their bytes + 16), larger ones are written and cost 16. */
struct fake_lanes {
	std::size_t threshold = 100;
	std::size_t capacity = 1000;
	bool travels_inline(std::size_t len) const { return len <= threshold; }
	std::size_t batch_cost(std::size_t len) const
	{
		return (travels_inline(len) ? len : 0) + 16;
	}
	std::size_t batch_capacity() const { return capacity; }
};

/** The rounds of a whole queue, as [from, to) pairs. */
std::vector<std::pair<std::size_t, std::size_t>>
rounds(const std::vector<std::size_t> &lens, std::size_t max_ranges = 32,
       const std::vector<fake_lanes> &replicas = {fake_lanes{}})
{
	std::vector<const fake_lanes *> lanes;
	for (const auto &r : replicas)
		lanes.push_back(&r);
	std::vector<std::pair<std::size_t, std::size_t>> out;
	for (std::size_t from = 0; from < lens.size();) {
		auto to = round_end(lanes, lens.size(), from, max_ranges,
		                    [&](std::size_t i) { return lens[i]; });
		REQUIRE(to > from);
		out.emplace_back(from, to);
		from = to;
	}
	return out;
}

using R = std::vector<std::pair<std::size_t, std::size_t>>;

} // namespace

TEST_CASE("round plan: a written range opens a round, inline ranges may follow it",
          "[unit][round_plan]")
{
	// records (written), commit (inline), records (written), commit (inline): the second
	// records must not leave before the first commit is applied.
	CHECK(rounds({5000, 16, 5000, 16}) == R{{0, 2}, {2, 4}});
	CHECK(rounds({16, 5000}) == R{{0, 1}, {1, 2}});
	CHECK(rounds({5000, 16, 32, 64}) == R{{0, 4}});
	CHECK(rounds({16, 32, 5000, 8}) == R{{0, 2}, {2, 4}});
	// Two written ranges never share a round.
	CHECK(rounds({5000, 6000, 16, 32, 64}) == R{{0, 1}, {1, 5}});
	CHECK(rounds({5000, 5000, 5000}) == R{{0, 1}, {1, 2}, {2, 3}});
}

TEST_CASE("round plan: a round holds what fits one request and at most max_ranges ranges",
          "[unit][round_plan]")
{
	// 100-byte inline ranges cost 116: eight fit in 1000 bytes.
	CHECK(rounds(std::vector<std::size_t>(10, 100)) == R{{0, 8}, {8, 10}});
	CHECK(rounds(std::vector<std::size_t>(5, 50), 2) == R{{0, 2}, {2, 4}, {4, 5}});
	// A range that alone exceeds the request still makes a round of its own.
	const fake_lanes tiny{100, 10};
	const std::vector<const fake_lanes *> one{&tiny};
	CHECK(round_end(one, 3, 0, 32, [](std::size_t) { return 50; }) == 1);
}

TEST_CASE("round plan: with several replicas the rule holds for each, whatever threshold it "
          "measured",
          "[unit][round_plan]")
{
	// Replica A sends 3000 bytes inline, replica B writes them: after the 16-byte commit
	// (inline on both), the 3000-byte range would overtake it on B. Planned with A's lanes
	// alone, [16, 3000] was one round.
	const std::vector<fake_lanes> ab{{4096, 8000}, {100, 8000}};
	CHECK(rounds({16, 3000}, 32, ab) == R{{0, 1}, {1, 2}});
	CHECK(rounds({3000, 16}, 32, ab) == R{{0, 2}});
	// Written to B: each 3000-byte range opens a round of its own.
	CHECK(rounds({3000, 3000, 3000}, 32, ab) == R{{0, 1}, {1, 2}, {2, 3}});
	// The request that fills first ends the round: A carries 3000-byte ranges inline.
	const std::vector<fake_lanes> both_inline{{4096, 8000}, {4096, 7000}};
	CHECK(rounds({3000, 3000, 3000}, 32, both_inline) == R{{0, 2}, {2, 3}});
}
