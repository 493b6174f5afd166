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
	bump(latency[std::min<std::size_t>(63 - __builtin_clzll(ns), latency.size() - 1)]);
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

lane_stats &lane_stats::operator+=(const lane_stats &o)
{
	persists += o.persists;
	flushes += o.flushes;
	drains += o.drains;
	reads += o.reads;
	deep_persists += o.deep_persists;
	bytes_persisted += o.bytes_persisted;
	bytes_read += o.bytes_read;
	round_trips += o.round_trips;
	for (std::size_t b = 0; b < latency_ns_log2.size(); ++b)
		latency_ns_log2[b] += o.latency_ns_log2[b];
	return *this;
}

std::uint64_t lane_stats::quantile_ns(double q) const
{
	std::uint64_t want = static_cast<std::uint64_t>(q * double(round_trips));
	std::uint64_t seen = 0;
	for (std::size_t b = 0; b < latency_ns_log2.size(); ++b) {
		seen += latency_ns_log2[b];
		if (seen > want || (seen == round_trips && seen))
			return std::uint64_t(2) << b;
	}
	return 0;
}

} // namespace rpmem::client
