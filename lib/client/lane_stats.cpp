// SPDX-License-Identifier: BSD-3-Clause
#include "client/lane_stats.hpp"

#include <algorithm>

namespace rpmem::client
{

void lane_counters::round_trip(std::chrono::steady_clock::time_point start)
{
	auto ns = static_cast<std::uint64_t>(
	    std::max<std::int64_t>(1, std::chrono::duration_cast<std::chrono::nanoseconds>(
	                                  std::chrono::steady_clock::now() - start)
	                                  .count()));
	bump(round_trips);
	bump(latency[lane_stats::latency_bucket(ns)]);
}

lane_stats lane_counters::snapshot() const
{
	lane_stats s;
	s.persists = persists.load(std::memory_order_relaxed);
	s.flushes = flushes.load(std::memory_order_relaxed);
	s.drains = drains.load(std::memory_order_relaxed);
	s.reads = reads.load(std::memory_order_relaxed);
	s.deep_persists = deep_persists.load(std::memory_order_relaxed);
	s.bytes_persisted = bytes_persisted.load(std::memory_order_relaxed);
	s.bytes_read = bytes_read.load(std::memory_order_relaxed);
	s.round_trips = round_trips.load(std::memory_order_relaxed);
	for (std::size_t b = 0; b < s.latency_ns_log2.size(); ++b)
		s.latency_ns_log2[b] = latency[b].load(std::memory_order_relaxed);
	return s;
}

} // namespace rpmem::client
