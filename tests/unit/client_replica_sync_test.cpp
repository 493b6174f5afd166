// SPDX-License-Identifier: BSD-3-Clause
// lib/client/replica_sync (apply_sync, the protocol every sync keeps) and lib/client/block_diff
// (diff_sums): the promise "marked before the first byte moves, cleared after the last" tried
// against a destination that records every step and fails where it is told to.
#include "client/block_diff.hpp"
#include "client/deadline_guard.hpp"
#include "client/replica_sync.hpp"

#include "rpmem/error.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace rpmem::client;

namespace
{

/** A destination that records its steps ("mark", "move OFF+LEN", "clear") and throws at the
 *  given step. */
struct recorder final : sync_destination {
	std::vector<std::string> steps;
	std::size_t fail_at = SIZE_MAX;
	bool marked = false; // what the destination's header would say

	void step(std::string s)
	{
		if (steps.size() == fail_at)
			throw rpmem::error(ECONNRESET, "the link went down at " + s);
		steps.push_back(std::move(s));
	}
	void mark() override
	{
		step("mark");
		marked = true;
	}
	void move(std::uint64_t off, std::uint64_t n) override
	{
		step("move " + std::to_string(off) + "+" + std::to_string(n));
	}
	void clear() override
	{
		step("clear");
		marked = false;
	}
};

constexpr std::uint64_t MiB = 1u << 20;

} // namespace

TEST_CASE("apply_sync marks first, moves in chunks, clears last", "[client][sync]")
{
	recorder r;
	std::vector<std::uint64_t> done;
	CHECK(apply_sync(r, {{0, 5 * MiB}, {8 * MiB, 9 * MiB}}, {},
	                 [&](std::uint64_t d, std::uint64_t total) {
		                 CHECK(total == 6 * MiB);
		                 done.push_back(d);
	                 }));
	CHECK(r.steps == std::vector<std::string>{"mark", "move 0+4194304", "move 4194304+1048576",
	                                          "move 8388608+1048576", "clear"});
	CHECK(done == std::vector<std::uint64_t>{4 * MiB, 5 * MiB, 6 * MiB});
	CHECK_FALSE(r.marked);
}

TEST_CASE("apply_sync interrupted at any step leaves the destination marked", "[client][sync]")
{
	for (std::size_t at = 1; at <= 3; ++at) { // each move, and the clear
		recorder r;
		r.fail_at = at;
		CHECK_THROWS_AS(apply_sync(r, {{0, 4 * MiB}, {4 * MiB, 6 * MiB}}, {}),
		                rpmem::error);
		CHECK(r.steps.front() == "mark");
		CHECK(r.marked);
		CHECK(std::find(r.steps.begin(), r.steps.end(), "clear") == r.steps.end());
	}
	recorder r;
	r.fail_at = 0; // the mark itself failed: nothing moved
	CHECK_THROWS_AS(apply_sync(r, {{0, MiB}}, {}), rpmem::error);
	CHECK(r.steps.empty());
}

TEST_CASE("apply_sync: nothing to move touches nothing, unless the destination was marked",
          "[client][sync]")
{
	recorder quiet;
	CHECK_FALSE(apply_sync(quiet, {}, {}));
	CHECK(quiet.steps.empty());

	recorder found; // an earlier sync stopped, or the replica was created marked
	found.marked = true;
	CHECK_FALSE(apply_sync(found, {}, {.found_marked = true}));
	CHECK(found.steps == std::vector<std::string>{"clear"});
	CHECK_FALSE(found.marked);

	recorder moving; // found marked: not marked again, cleared after the bytes
	moving.marked = true;
	CHECK(apply_sync(moving, {{0, MiB}}, {.found_marked = true}));
	CHECK(moving.steps == std::vector<std::string>{"move 0+1048576", "clear"});

	recorder header; // the caller rewrites the header: marked while it does
	CHECK(apply_sync(header, {}, {.other_writes = true}));
	CHECK(header.steps == std::vector<std::string>{"mark", "clear"});
}

TEST_CASE("diff_sums merges neighbouring differing blocks and clips the last",
          "[client][sync][diff]")
{
	auto sum = [](std::uint64_t v) { return rpmem::control::block_sum{v, ~v}; };
	std::vector<rpmem::control::block_sum> a = {sum(1), sum(2), sum(3), sum(4), sum(5)};
	std::vector<rpmem::control::block_sum> b = {sum(1), sum(9), sum(9), sum(4), sum(9)};
	// Blocks of 4 KiB from 4096; the last block is short (the range ends at 4096 + 4.5 blocks).
	auto d = diff_sums(a, b, 4096, 4096 + 4 * 4096 + 2048, 4096);
	CHECK(d.blocks == 5);
	CHECK(d.differing_blocks == 3);
	REQUIRE(d.ranges.size() == 2);
	CHECK(d.ranges[0] == byte_span{4096 + 4096, 4096 + 3 * 4096});
	CHECK(d.ranges[1] == byte_span{4096 + 4 * 4096, 4096 + 4 * 4096 + 2048});
	CHECK(d.bytes() == 2 * 4096 + 2048);
	CHECK(diff_sums(a, a, 0, 5 * 4096, 4096).ranges.empty());
}

TEST_CASE("a catch-up takes its last round when it is small, stops converging, or is the 16th",
          "[client][sync]")
{
	using rpmem::client::last_catch_up_round;
	constexpr std::uint64_t M = 1u << 20;
	// Small: the first round already, with nothing before it.
	CHECK(last_catch_up_round(0, 0, 1));
	CHECK(last_catch_up_round(M, 0, 1));
	CHECK_FALSE(last_catch_up_round(M + 1, 0, 1));
	// Converging (each round at most half the one before) goes on ...
	CHECK_FALSE(last_catch_up_round(40 * M, 80 * M, 2));
	CHECK_FALSE(last_catch_up_round(20 * M, 40 * M, 3));
	// ... one that moves more than half of what the round before moved is the last: the
	// writers dirty as fast as rounds move, so another round would only repeat it.
	CHECK(last_catch_up_round(20 * M + 1, 40 * M, 3));
	CHECK(last_catch_up_round(50 * M, 40 * M, 2));
	// The first round has no round before it to compare with.
	CHECK_FALSE(last_catch_up_round(50 * M, 0, 1));
	// However it goes, the 16th is the last.
	CHECK_FALSE(last_catch_up_round(4 * M, 8 * M, 15));
	CHECK(last_catch_up_round(4 * M, 8 * M, 16));
	// "Small" as RPMEM_CATCH_UP_HOLD_BYTES says: 0 makes only an empty round small.
	CHECK(last_catch_up_round(200 * M, 0, 1, 256 * M));
	CHECK_FALSE(last_catch_up_round(M, 0, 1, 0));
	CHECK(last_catch_up_round(0, 0, 1, 0));
}

TEST_CASE("a catch-up of a replica dropped for being too slow takes its last round only when the "
          "rate of the round before says it is short",
          "[client][sync]")
{
	using rpmem::client::last_round_of_slow;
	using std::chrono::milliseconds;
	constexpr std::uint64_t M = 1u << 20;
	const milliseconds budget{500};
	// An empty round is the last, whatever came before.
	CHECK(last_round_of_slow(0, 0, milliseconds(0), budget));
	CHECK(last_round_of_slow(0, 4 * M, milliseconds(9000), budget));
	// The first round (nothing moved before it: no rate known) is never the last, however
	// small: over a slow link even 4 KiB may take long.
	CHECK_FALSE(last_round_of_slow(4096, 0, milliseconds(0), budget));
	// 4 MiB moved in 2 s (2 MiB/s): 1 MiB takes 500 ms, the budget; a byte more does not fit.
	CHECK(last_round_of_slow(M, 4 * M, milliseconds(2000), budget));
	CHECK_FALSE(last_round_of_slow(M + 1, 4 * M, milliseconds(2000), budget));
	// Round after round of what the writers dirty again (no convergence) stays unheld while
	// the link is slow, and is the last once the link is fast: the same bytes, moved in 10 ms.
	CHECK_FALSE(last_round_of_slow(4 * M, 4 * M, milliseconds(2000), budget));
	CHECK(last_round_of_slow(4 * M, 4 * M, milliseconds(10), budget));
}

TEST_CASE("the log line of a slow replica's catch-up says what its last round's measured rate "
          "predicted",
          "[client][sync]")
{
	using std::chrono::milliseconds;
	constexpr std::uint64_t M = 1u << 20;
	rpmem::client::slow_last_round r;
	// Not slow: nothing is added to the in-sync line.
	CHECK(r.note().empty());
	// A round the rate says is too long is not the last, and not remembered.
	CHECK_FALSE(r.decide(M + 1, 4 * M, milliseconds(2000), milliseconds(500)));
	CHECK(r.note().empty());
	// 1 MiB after 4 MiB moved in 2 s: 500 ms at that rate.
	CHECK(r.decide(M, 4 * M, milliseconds(2000), milliseconds(500)));
	CHECK(r.note() == "; its last round, 1048576 bytes, was taken by the link's measured rate: "
	                  "500.0 ms at it, within 500 ms");
	// An empty round (taken whatever came before) is due at once.
	CHECK(r.decide(0, 0, milliseconds(0), milliseconds(375)));
	CHECK(r.note() == "; its last round, 0 bytes, was taken by the link's measured rate: "
	                  "0.0 ms at it, within 375 ms");
}

TEST_CASE("a catch-up's held round is bounded: the guard acts once past its time, never when "
          "the round ends first or when it has no bound",
          "[client][sync]")
{
	using rpmem::client::deadline_guard;
	using std::chrono::milliseconds;
	std::atomic<int> fired{0};
	{
		deadline_guard g(milliseconds(20), [&] { ++fired; });
		// Until it acts (bounded: the test's timeout).
		while (!g.expired())
			std::this_thread::sleep_for(milliseconds(1));
	}
	CHECK(fired.load() == 1);
	{
		deadline_guard g(milliseconds(60000), [&] { ++fired; });
		CHECK_FALSE(g.expired());
	} // ended first: the destructor does not wait for the bound, and nothing runs
	{
		deadline_guard g(milliseconds(0), [&] { ++fired; });
		std::this_thread::sleep_for(milliseconds(5));
		CHECK_FALSE(g.expired());
	}
	CHECK(fired.load() == 1);
}
