// SPDX-License-Identifier: BSD-3-Clause
// What a lane has done: operations, bytes, and how long its round trips took. The lane's own
// thread counts (relaxed atomics, no lock); any thread may take a snapshot while it runs.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace rpmem::client
{

/** What one lane (or the whole pool) has done: operations, bytes, and how long round trips took
 * (latency_ns_log2[b] counts calls that took [2^b, 2^(b+1)) ns). */
struct lane_stats {
	std::uint64_t persists = 0; // persist calls (and non-relaxed flushes)
	std::uint64_t flushes = 0;  // relaxed flushes
	std::uint64_t drains = 0;   // drains that had something to make durable
	std::uint64_t reads = 0;
	std::uint64_t deep_persists = 0;
	std::uint64_t bytes_persisted = 0;
	std::uint64_t bytes_read = 0;
	std::uint64_t round_trips = 0;
	std::array<std::uint64_t, 40> latency_ns_log2{};

	lane_stats &operator+=(const lane_stats &o);
	/** The latency below which a fraction q (0..1) of round trips completed (bucket bound). */
	std::uint64_t quantile_ns(double q) const;
};

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
