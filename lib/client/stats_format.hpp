// SPDX-License-Identifier: BSD-3-Clause
// The metrics file's two formats (RPMEM_STATS_FILE; schema: librpmem(7), METRICS): Prometheus
// text and JSON, both written from one table of metrics (stats_format.cpp), so a metric added
// there appears in both. Pure: no file, no thread (stats_export writes the file).
#pragma once

#include "rpmem/pool_stats.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rpmem::client
{

/** One pool's report. */
struct pool_report {
	std::string target, descriptor, provider, method;
	// replicated_pool: the replica's number in the pool set (a label: two replicas may share
	// a target and descriptor); none for a pool opened on its own.
	std::optional<std::size_t> replica;
	std::string mode = "sync"; // "sync" or "async" (RPMEM_REPLICATION)
	// "connected" (in sync), "reconnecting", "lost" (the calls go on without it, recording
	// what it misses), "catching_up", "failed" (a call failed on the connection) or "closed"
	std::string state = "connected";
	unsigned lanes = 0;
	rpmem::pool_stats stats;
	std::uint64_t errors = 0;               // calls on the pool that failed
	std::int64_t last_persist_unix_ns = 0;  // last successful persist/drain; 0: none yet
	std::optional<std::uint64_t> lag_bytes; // async only
	std::optional<double> lag_seconds;      // async only: age of the oldest unreplicated
	// async only, where known: persists that waited because the replica fell behind (the lag
	// bound, or no room left to copy them aside)
	std::optional<std::uint64_t> throttled;
	// async only: the lag's bounds (RPMEM_ASYNC_MAX_LAG_BYTES, RPMEM_ASYNC_MAX_LAG_MS;
	// replicated_pool::options), past which persists wait: how near them the lag is
	std::optional<std::uint64_t> lag_bound_bytes;
	std::optional<double> lag_bound_seconds;
	// Where a replica can be left behind (client::resilient_pool, replicated_pool under
	// failure_policy::degrade): the bytes it lacks while lost or catching up (0 in sync).
	std::optional<std::uint64_t> bytes_to_go;
};

/** The Prometheus text exposition format (version 0.0.4) of the reports, written to `file`:
 *  the file-wide samples (when it was written, how many of its pools are open) carry its path
 *  as label `file`, so that the files of several processes in one node_exporter textfile
 *  directory never hold the same series. */
std::string prometheus_text(const std::vector<pool_report> &pools, std::int64_t now_unix_ns,
                            std::string_view file);
/** The same as one JSON object: {"time_unix_ns":..,"pools":[...]} */
std::string json_text(const std::vector<pool_report> &pools, std::int64_t now_unix_ns);

} // namespace rpmem::client
