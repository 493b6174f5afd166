// SPDX-License-Identifier: BSD-3-Clause
// What a lane has done: operations, bytes, and how long its round trips took. The lane's own
// thread counts (relaxed atomics, no lock); any thread may take a snapshot while it runs.
#pragma once

#include "rpmem/pool_stats.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace rpmem::client
{

/** What one lane (or the whole pool) has done: the public rpmem::pool_stats. */
using lane_stats = rpmem::pool_stats;

/** The counters behind lane_stats: the lane's thread bumps them, any thread may read them. */
struct lane_counters {
	std::atomic<std::uint64_t> persists{0}, flushes{0}, drains{0}, reads{0}, deep_persists{0};
	std::atomic<std::uint64_t> bytes_persisted{0}, bytes_read{0}, round_trips{0};
	std::array<std::atomic<std::uint64_t>, 40> latency{};

	static void bump(std::atomic<std::uint64_t> &c, std::uint64_t n = 1)
	{
		c.fetch_add(n, std::memory_order_relaxed);
	}
	/** One round trip that started at `start` ended now. */
	void round_trip(std::chrono::steady_clock::time_point start);
	lane_stats snapshot() const;
};

} // namespace rpmem::client
