// SPDX-License-Identifier: BSD-3-Clause
// rpmem::pool_stats — what a pool's lanes have done: operations, bytes, and round-trip
// latencies bucketed by powers of two (latency_ns_log2[b]: calls of [2^b, 2^(b+1)) ns). The
// one declaration: the client counts per lane in this form (lib/client/lane_stats.hpp) and
// rpmem::pool::stats returns it.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace rpmem
{

struct pool_stats {
	std::uint64_t persists = 0; // persist calls (and non-relaxed flushes)
	std::uint64_t flushes = 0;  // relaxed flushes
	std::uint64_t drains = 0;   // drains that had something to make durable
	std::uint64_t reads = 0;
	std::uint64_t deep_persists = 0;
	std::uint64_t bytes_persisted = 0;
	std::uint64_t bytes_read = 0;
	std::uint64_t round_trips = 0;
	std::array<std::uint64_t, 40> latency_ns_log2{};

	/** The bucket of latency_ns_log2 a duration of `ns` nanoseconds counts in: [2^b,
	 *  2^(b+1)), the last one open-ended (rpmemd's execution times use the same rule). */
	static constexpr std::size_t latency_bucket(std::uint64_t ns) noexcept
	{
		const std::size_t b = ns < 2 ? 0 : static_cast<std::size_t>(std::bit_width(ns) - 1);
		return b < std::tuple_size_v<decltype(latency_ns_log2)> - 1
		           ? b
		           : std::tuple_size_v<decltype(latency_ns_log2)> - 1;
	}

	pool_stats &operator+=(const pool_stats &o) noexcept
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

	/** The latency below which a fraction q (0..1) of round trips completed (bucket bound). */
	std::uint64_t quantile_ns(double q) const noexcept
	{
		const auto want = static_cast<std::uint64_t>(q * double(round_trips));
		std::uint64_t seen = 0;
		for (std::size_t b = 0; b < latency_ns_log2.size(); ++b) {
			seen += latency_ns_log2[b];
			if (seen > want || (seen == round_trips && seen))
				return std::uint64_t(2) << b;
		}
		return 0;
	}
};

} // namespace rpmem
