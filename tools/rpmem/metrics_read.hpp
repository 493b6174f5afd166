// SPDX-License-Identifier: BSD-3-Clause
// rpmem top's reader of the metrics files librpmem writes (RPMEM_STATS_FILE; schema:
// librpmem(7), METRICS; writer: lib/client/stats_format): the Prometheus text exposition format
// or the JSON object, back into one record per pool. Pure: no file, no terminal. Samples of
// other exporters (a node_exporter textfile directory holds theirs too) are skipped; a file
// holding no rpmem metric at all is said to be none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rpmem::tool
{

/** One pool as a metrics file reports it. Counters as the file has them (doubles: the
 *  Prometheus format has nothing else); optional members only where the file has them. */
struct pool_sample {
	std::string target, descriptor;
	std::optional<std::uint64_t> replica; // replicated_pool: its number in the pool set
	std::string provider, method, mode, state;
	double lanes = 0;
	double persists = 0, flushes = 0, drains = 0, reads = 0, deep_persists = 0;
	double bytes_persisted = 0, bytes_read = 0;
	double round_trips = 0, errors = 0;
	double last_persist = 0; // seconds since the epoch; 0: none yet
	// round-trip latency quantiles, seconds
	std::optional<double> p50, p90, p99, p999;
	// asynchronous mode
	std::optional<double> lag_bytes, lag_seconds, throttled, lag_bound_bytes, lag_bound_seconds;
	// what a lost or catching up replica lacks (0 in sync)
	std::optional<double> bytes_to_go;
};

/** A whole metrics file: when it was written (seconds since the epoch) and its pools. */
struct metrics_file {
	double written = 0;
	std::vector<pool_sample> pools;
};

/** Parses a metrics file's text: JSON when its first non-blank character is '{', else the
 *  Prometheus text format. nullopt, and why in *why, when it is malformed or holds no rpmem
 *  metric. */
std::optional<metrics_file> parse_metrics(std::string_view text, std::string *why = nullptr);

} // namespace rpmem::tool
