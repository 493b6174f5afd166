// SPDX-License-Identifier: BSD-3-Clause
// lib/client/dirty_map (what changed while a replica was away) and lib/client/call_gate (the
// gate the calls pass and a catch-up closes for its last round) and lib/client/fresh_blocks (a
// catch-up round's mover) and lib/client/catch_up_window (which persists may go to a replica
// catching up), as pure objects.
#include "client/call_gate.hpp"
#include "client/catch_up_window.hpp"
#include "client/dirty_map.hpp"
#include "client/fresh_blocks.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

using namespace rpmem::client;

TEST_CASE("dirty_map: marks cover whole blocks, take merges neighbours and clears",
          "[client][dirty]")
{
	dirty_map m(1u << 20, 4096);
	CHECK(m.empty());
	m.mark(10, 1);                // block 0
	m.mark(4096 * 3 - 1, 2);      // blocks 2 and 3
	m.mark(4096 * 64, 4096);      // block 64: the second word
	m.mark(4096 * 63, 1);         // block 63: ends the first word, joins block 64
	m.mark(0, 0);                 // nothing
	m.mark(2u << 20, 4096);       // past the pool: nothing
	CHECK(m.bytes() == 5 * 4096); // blocks 0, 2, 3, 63 and 64
	auto r = m.take();
	REQUIRE(r.size() == 3);
	CHECK(r[0] == byte_span{0, 4096});
	CHECK(r[1] == byte_span{2 * 4096, 4 * 4096});
	CHECK(r[2] == byte_span{63 * 4096, 65 * 4096});
	CHECK(m.empty());
	CHECK(m.take().empty());
}

TEST_CASE("dirty_map::marked answers for the block holding an offset, as take would",
          "[client][dirty]")
{
	dirty_map m(4096 * 130 + 10, 4096); // 131 blocks: three words, the last block short
	m.mark(4096 * 64 + 5, 1);           // block 64: the first bit of the second word
	m.mark(4096 * 130, 1);              // block 130: the short last one
	for (std::uint64_t b = 0; b < 131; ++b) {
		INFO("block " << b);
		const bool want = b == 64 || b == 130;
		CHECK(m.marked(b * 4096) == want);
		CHECK(m.marked(b * 4096 + (b == 130 ? 9 : 4095)) == want);
	}
	CHECK_FALSE(m.marked(4096 * 130 + 10)); // past the pool
	CHECK_FALSE(m.marked(~std::uint64_t{0}));
	m.take();
	CHECK_FALSE(m.marked(4096 * 64));
	CHECK_FALSE(m.marked(4096 * 130));
}

namespace
{
/** A destination that records what it was given. */
struct recorder final : sync_destination {
	std::vector<byte_span> moved;
	int marks = 0, clears = 0;
	void mark() override { ++marks; }
	void clear() override { ++clears; }
	void move(std::uint64_t offset, std::uint64_t length) override
	{
		moved.push_back({offset, offset + length});
	}
};
} // namespace

TEST_CASE("fresh_blocks sends a round's ranges less the blocks marked again since, unless "
          "it is the last round",
          "[client][dirty]")
{
	dirty_map m(4096 * 100, 4096);
	recorder r;
	fresh_blocks f(r, m);
	f.mark();
	CHECK(r.marks == 1);
	// Nothing marked: one range, whole, even one not aligned to blocks.
	f.move(100, 4096 * 3);
	REQUIRE(r.moved.size() == 1);
	CHECK(r.moved[0] == byte_span{100, 100 + 4096 * 3});
	r.moved.clear();
	// Blocks 5, 6 and 9 written again: [4 KiB*4, 4 KiB*12) goes as 4, 7-8 and 10-11.
	m.mark(4096 * 5 + 7, 4096); // 5 and 6
	m.mark(4096 * 9, 1);
	f.move(4096 * 4, 4096 * 8);
	REQUIRE(r.moved.size() == 3);
	CHECK(r.moved[0] == byte_span{4096 * 4, 4096 * 5});
	CHECK(r.moved[1] == byte_span{4096 * 7, 4096 * 9});
	CHECK(r.moved[2] == byte_span{4096 * 10, 4096 * 12});
	CHECK(f.moved == 4096 * 3 + 4096 * 5); // the first range, and 5 blocks of this one
	CHECK(f.skipped == 4096 * 3);
	// A range starting or ending inside a marked block skips only its part of it.
	r.moved.clear();
	f.move(4096 * 5 + 100, 4096 * 2); // [5+100, 7+100): all marked but the part of 7
	REQUIRE(r.moved.size() == 1);
	CHECK(r.moved[0] == byte_span{4096 * 7, 4096 * 7 + 100});
	// The last round skips nothing.
	r.moved.clear();
	f.skipping = false;
	f.move(4096 * 4, 4096 * 8);
	REQUIRE(r.moved.size() == 1);
	CHECK(r.moved[0] == byte_span{4096 * 4, 4096 * 12});
	f.clear();
	CHECK(r.clears == 1);
}

TEST_CASE("dirty_map: the last block is clipped to the pool, and a long range spans words",
          "[client][dirty]")
{
	dirty_map m(4096 * 200 + 100, 4096); // 201 blocks, the last 100 bytes long
	m.mark(0, 4096 * 200 + 100);
	CHECK(m.bytes() == 4096 * 200 + 100);
	auto r = m.take();
	REQUIRE(r.size() == 1);
	CHECK(r[0] == byte_span{0, 4096 * 200 + 100});
}

TEST_CASE("dirty_map::block_for keeps the map at most 16 Mi blocks", "[client][dirty]")
{
	CHECK(dirty_map::block_for(64u << 20) == 4096);
	CHECK(dirty_map::block_for(std::uint64_t{64} << 30) == 4096);
	CHECK(dirty_map::block_for(std::uint64_t{1} << 40) == 65536);
}

TEST_CASE("dirty_map: a block marked while a round is taken is in that round or the next",
          "[client][dirty]")
{
	// Writers mark their own blocks; a taker takes rounds meanwhile. Every block a writer
	// marked after its last round was taken must be in a round: none is lost.
	constexpr std::uint64_t blocks = 4096;
	dirty_map m(blocks * 4096, 4096);
	std::vector<std::atomic<std::uint32_t>> marked(blocks), taken(blocks);
	std::atomic<bool> stop{false};
	std::vector<std::thread> writers;
	for (int t = 0; t < 4; ++t)
		writers.emplace_back([&, t] {
			std::mt19937 rng(t);
			for (int i = 0; i < 20000; ++i) {
				const std::uint64_t b = rng() % blocks;
				marked[b].fetch_add(1);
				m.mark(b * 4096 + rng() % 4096, 1);
			}
		});
	std::thread taker([&] {
		while (!stop)
			for (const auto &r : m.take())
				for (auto b = r.begin / 4096; b < r.end / 4096; ++b)
					taken[b].fetch_add(1);
	});
	for (auto &w : writers)
		w.join();
	stop = true;
	taker.join();
	for (const auto &r : m.take())
		for (auto b = r.begin / 4096; b < r.end / 4096; ++b)
			taken[b].fetch_add(1);
	for (std::uint64_t b = 0; b < blocks; ++b)
		if (marked[b] > 0)
			REQUIRE(taken[b] > 0);
}

TEST_CASE("catch_up_window: a persist goes directly unless a move in flight overlaps it or "
          "all its blocks are marked",
          "[client][dirty]")
{
	dirty_map m(1u << 20, 4096);
	catch_up_window w(m);
	CHECK(w.may_forward(100, 8));
	CHECK_FALSE(w.may_forward(100, 0)); // nothing to send
	w.moving(8192, 8192);               // blocks 2 and 3 in flight
	CHECK_FALSE(w.may_forward(8192, 1));
	CHECK_FALSE(w.may_forward(16383, 1));
	CHECK_FALSE(w.may_forward(4096, 4097));  // ends in the move
	CHECK_FALSE(w.may_forward(0, 1u << 20)); // covers it
	CHECK(w.may_forward(4096, 4096));        // ends where the move begins
	CHECK(w.may_forward(16384, 10));         // begins where it ends
	w.moved();
	CHECK(w.may_forward(8192, 1));
	m.mark(40960, 8192);                     // blocks 10 and 11
	CHECK_FALSE(w.may_forward(40960, 8192)); // a later move carries it
	CHECK_FALSE(w.may_forward(40970, 1));
	CHECK(w.may_forward(36864, 4097)); // block 9 is not marked
	CHECK(w.may_forward(45056, 4097)); // nor block 12
}

TEST_CASE("catch_up_window: persists sent directly during a catch-up, moves racing them, leave "
          "the replica equal to the master",
          "[client][dirty]")
{
	// A model of a catch-up: the master and the replica are words; a mover takes rounds from
	// the map and copies each block word by word, as a transfer reads the master while it is
	// in flight; writers write their own words, then "persist" them: a copy to the replica
	// when the window lets them, else a mark. Then the final step (writers stopped) moves
	// what is marked. Without the window's move check, a move that read a word before its
	// writer wrote it lands after that writer's copy and the replica keeps the old word.
	constexpr std::uint64_t block = 256, words_per_block = block / 4, blocks = 64;
	constexpr std::uint64_t words = blocks * words_per_block;
	dirty_map m(blocks * block, block);
	catch_up_window w(m);
	std::vector<std::atomic<std::uint32_t>> master(words), replica(words);
	m.mark(0, blocks * block); // the outage: every block changed
	std::atomic<bool> stop{false};
	std::atomic<std::uint64_t> forwarded{0}, recorded{0};
	auto move = [&](std::uint64_t from, std::uint64_t to, bool yield) {
		for (std::uint64_t i = from / 4; i < to / 4; ++i) {
			const auto v = master[i].load();
			if (yield)
				std::this_thread::yield(); // the transfer in flight
			replica[i].store(v);
		}
	};
	std::thread mover([&] {
		while (!stop)
			for (const auto &r : m.take())
				for (auto b = r.begin; b < r.end; b += block) {
					w.moving(b, block);
					move(b, b + block, true);
					w.moved();
				}
	});
	std::vector<std::thread> writers;
	for (unsigned t = 0; t < 3; ++t)
		writers.emplace_back([&, t] {
			std::mt19937 rng(t);
			for (std::uint32_t n = 1; n <= 30000; ++n) {
				const std::uint64_t i =
				    (rng() % (words / 3)) * 3 + t; // its own words
				master[i].store(n);
				if (w.may_forward(i * 4, 4)) {
					replica[i].store(master[i].load());
					forwarded.fetch_add(1);
				} else {
					m.mark(i * 4, 4);
					recorded.fetch_add(1);
				}
			}
		});
	for (auto &t : writers)
		t.join();
	stop = true;
	mover.join();
	for (const auto &r : m.take()) // the final step, the calls held
		move(r.begin, r.end, false);
	INFO(forwarded.load() << " persists sent directly, " << recorded.load() << " recorded");
	CHECK(forwarded.load() > 0);
	std::uint64_t differ = 0;
	for (std::uint64_t i = 0; i < words; ++i)
		differ += master[i].load() != replica[i].load();
	CHECK(differ == 0);
}

TEST_CASE("lane_turns: a call and a move asking again and again take turns", "[client][dirty]")
{
	// A mover takes turns back to back, as a catch-up does, and a caller too, as a writer
	// persisting back to back on lane 0: neither waits for more than the other's one turn.
	// A plain mutex lets the one that asks again first take it again, many times in a row.
	lane_turns lane;
	std::atomic<bool> stop{false};
	std::atomic<std::uint64_t> moves{0}, calls{0};
	std::uint64_t worst_call = 0, worst_move = 0;
	auto busy = [] {
		for (int i = 0; i < 100; ++i) // the move or call in flight
			std::this_thread::yield();
	};
	std::thread mover([&] {
		while (!stop) {
			const auto before = calls.load();
			const auto turn = lane.take();
			worst_move = std::max(worst_move, calls.load() - before);
			moves.fetch_add(1);
			busy();
		}
	});
	for (int i = 0; i < 300; ++i) {
		const auto before = moves.load();
		const auto turn = lane.take();
		worst_call = std::max(worst_call, moves.load() - before);
		calls.fetch_add(1);
		busy();
	}
	stop = true;
	mover.join();
	INFO(moves.load() << " moves, " << calls.load() << " calls");
	CHECK(worst_call <= 1);
	CHECK(worst_move <= 1);
}

TEST_CASE("call_gate: close waits for the calls inside and holds new ones until open",
          "[client][gate]")
{
	call_gate g;
	std::atomic<int> entered{0};
	g.enter(); // a call inside
	std::atomic<bool> closed{false};
	std::thread closer([&] {
		g.close();
		closed = true;
	});
	while (!g.closed())
		std::this_thread::yield();
	// The closer cannot finish while the call is inside; a new call waits at the gate.
	std::thread late([&] {
		call_gate::pass in(g);
		entered.fetch_add(1);
	});
	std::this_thread::sleep_for(std::chrono::milliseconds(20));
	CHECK(entered == 0);
	CHECK(!closed);
	g.leave(); // the call leaves: the gate closes
	closer.join();
	CHECK(entered == 0); // still held
	g.open();
	late.join();
	CHECK(entered == 1);
}

TEST_CASE("call_gate: overlapping closers hold the calls until the last one opens",
          "[client][gate]")
{
	// A healer installing a session while the call bound's watch gives the replica up: each
	// closes the gate for its own step, and neither step may let calls in for the other.
	call_gate g;
	g.close();
	g.close(); // the second closer: no call inside, so at once
	std::atomic<int> entered{0};
	std::thread late([&] {
		call_gate::pass in(g);
		entered.fetch_add(1);
	});
	g.open(); // the first is done
	std::this_thread::sleep_for(std::chrono::milliseconds(20));
	CHECK(g.closed());
	CHECK(entered == 0); // still held by the second
	g.open();
	late.join();
	CHECK(entered == 1);
	CHECK_FALSE(g.closed());
}
