// SPDX-License-Identifier: BSD-3-Clause
// replicated_pool's staging ring (lib/async/staging_ring.hpp): FIFO allocation, what a
// wrap charges, when it is full, and that freeing the oldest makes room again.
#include "async/staging_ring.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <deque>
#include <random>

using rpmem::async::staging_ring;

TEST_CASE("staging ring: capacity in whole pages, chunks of a quarter", "[unit][staging]")
{
	staging_ring r;
	r.init(10000);
	const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
	CHECK(r.capacity() % page == 0);
	CHECK(r.capacity() >= 10000);
	CHECK(r.max_chunk() == r.capacity() / 4);
	std::memset(r.base(), 0xab, r.capacity()); // mapped and writable
}

TEST_CASE("staging ring: FIFO allocation, full, wrap charges the skipped tail", "[unit][staging]")
{
	staging_ring r;
	r.init(4096 * 4); // 16 KiB
	const std::size_t cap = r.capacity();
	std::size_t pos = 0, charge = 0;

	REQUIRE(r.alloc(6000, &pos, &charge));
	CHECK(pos == 0);
	CHECK(charge == 6000);
	REQUIRE(r.alloc(6000, &pos, &charge));
	CHECK(pos == 6000);
	CHECK(charge == 6000);
	// 12000 of 16384 used: 5000 fits neither after the head (4384 left) nor before the
	// tail (the oldest starts at 0).
	CHECK_FALSE(r.alloc(5000, &pos, &charge));
	r.release(6000); // the oldest is gone: [0, 6000) is free
	// Wraps: placed at 0, charged the 4384 bytes skipped at the end too.
	REQUIRE(r.alloc(5000, &pos, &charge));
	CHECK(pos == 0);
	CHECK(charge == cap - 12000 + 5000);
	// Between head (5000) and tail (6000): 1000 bytes.
	CHECK_FALSE(r.alloc(1001, &pos, &charge));
	REQUIRE(r.alloc(1000, &pos, &charge));
	CHECK(pos == 5000);
	CHECK_FALSE(r.alloc(1, &pos, &charge)); // full
	r.release(6000);
	r.release(cap - 12000 + 5000);
	r.release(1000);
	// Empty again: allocation restarts at 0.
	REQUIRE(r.alloc(cap, &pos, &charge));
	CHECK(pos == 0);
	CHECK(charge == cap);
}

TEST_CASE("staging ring: random FIFO traffic never overlaps live snapshots", "[unit][staging]")
{
	staging_ring r;
	r.init(64 * 1024);
	struct live {
		std::size_t pos, len, charge;
		unsigned char fill;
	};
	std::deque<live> q;
	std::size_t used = 0;
	std::mt19937_64 rng(5);
	for (int i = 0; i < 20000; ++i) {
		if (q.empty() || rng() % 3) {
			std::size_t len = 1 + rng() % r.max_chunk();
			std::size_t pos = 0, charge = 0;
			if (!r.alloc(len, &pos, &charge)) {
				// Refused only when no free gap holds len contiguously. The oldest
				// snapshot holds the bytes a wrap skipped before it, so the live
				// region starts `used` bytes before the newest one's end.
				REQUIRE(!q.empty());
				const std::size_t cap = r.capacity();
				const std::size_t head = (q.back().pos + q.back().len) % cap;
				const std::size_t tail = (head + cap - used) % cap;
				if (used == cap)
					continue;
				if (head >= tail)
					CHECK((len > cap - head && len > tail));
				else
					CHECK(len > tail - head);
				continue;
			}
			REQUIRE(pos + len <= r.capacity());
			REQUIRE(charge >= len);
			auto fill = static_cast<unsigned char>(rng());
			std::memset(r.base() + pos, fill, len);
			q.push_back({pos, len, charge, fill});
			used += charge;
		} else {
			// The oldest snapshot is intact: no later one was placed over it.
			auto &o = q.front();
			for (std::size_t k = 0; k < o.len; k += 97)
				REQUIRE(static_cast<unsigned char>(r.base()[o.pos + k]) == o.fill);
			r.release(o.charge);
			used -= o.charge;
			q.pop_front();
		}
		REQUIRE(used <= r.capacity());
	}
}
