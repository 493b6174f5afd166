// SPDX-License-Identifier: BSD-3-Clause
// How asynchronous replication cuts its queue into rounds (lib/replication/round_plan.hpp):
// the request's capacity, the range limit, and the prefix rule — no RDMA write after inline
// bytes in one round (breaking it let a killed writer leave a replica with a later persist and
// an earlier one missing).
#include "replication/round_plan.hpp"

#include <catch2/catch.hpp>

#include <vector>

using rpmem::replication::round_end;

namespace
{

/** A lane whose requests hold 1000 payload bytes; ranges up to 100 bytes travel inline
 * (costing their bytes + 16), larger ones are written and cost 16. */
struct fake_lanes {
	bool travels_inline(std::size_t len) const { return len <= 100; }
	std::size_t batch_cost(std::size_t len) const
	{
		return (travels_inline(len) ? len : 0) + 16;
	}
	std::size_t batch_capacity() const { return 1000; }
};

/** The rounds of a whole queue, as [from, to) pairs. */
std::vector<std::pair<std::size_t, std::size_t>> rounds(const std::vector<std::size_t> &lens,
                                                        std::size_t max_ranges = 32)
{
	std::vector<std::pair<std::size_t, std::size_t>> out;
	for (std::size_t from = 0; from < lens.size();) {
		auto to = round_end(fake_lanes{}, lens.size(), from, max_ranges,
		                    [&](std::size_t i) { return lens[i]; });
		REQUIRE(to > from);
		out.emplace_back(from, to);
		from = to;
	}
	return out;
}

using R = std::vector<std::pair<std::size_t, std::size_t>>;

} // namespace

TEST_CASE("round plan: writes then inline bytes share a round, a write after inline bytes "
          "starts the next",
          "[unit][round_plan]")
{
	// records (written), commit (inline), records (written), commit (inline): the second
	// records must not leave before the first commit is applied.
	CHECK(rounds({5000, 16, 5000, 16}) == R{{0, 2}, {2, 4}});
	CHECK(rounds({16, 5000}) == R{{0, 1}, {1, 2}});
	CHECK(rounds({5000, 6000, 16, 32, 64}) == R{{0, 5}});
	CHECK(rounds({16, 32, 5000, 5000, 8}) == R{{0, 2}, {2, 5}});
	CHECK(rounds({5000, 5000, 5000}) == R{{0, 3}});
}

TEST_CASE("round plan: a round holds what fits one request and at most max_ranges ranges",
          "[unit][round_plan]")
{
	// 100-byte inline ranges cost 116: eight fit in 1000 bytes.
	CHECK(rounds(std::vector<std::size_t>(10, 100)) == R{{0, 8}, {8, 10}});
	CHECK(rounds(std::vector<std::size_t>(5, 5000), 2) == R{{0, 2}, {2, 4}, {4, 5}});
	// A range that alone exceeds the request still makes a round of its own.
	struct tiny : fake_lanes {
		std::size_t batch_capacity() const { return 10; }
	};
	CHECK(round_end(tiny{}, 3, 0, 32, [](std::size_t) { return 50; }) == 1);
}
