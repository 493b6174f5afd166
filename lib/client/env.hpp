// SPDX-License-Identifier: BSD-3-Clause
// Client settings from the environment (PMDK's variables plus ours), read once per process.
#pragma once

#include "fabric/mr_mode.hpp"
#include "fabric/spin_policy.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rpmem::client
{

struct settings {
	std::vector<std::string> commands{"rpmemd"}; // RPMEM_CMD split at '|', used round-robin
	std::uint32_t max_nlanes = UINT32_MAX;       // RPMEM_MAX_NLANES
	std::string providers;                       // "verbs,tcp,sockets" after the overrides
	std::chrono::milliseconds op_timeout{5000};  // RPMEM_TIMEOUT: data-path silence bound
	std::chrono::milliseconds control_timeout{10000}; // RPMEM_CONTROL_TIMEOUT
	std::chrono::milliseconds keepalive{1500}; // RPMEM_KEEPALIVE: ping interval (0: off);
	                                           // below a third of rpmemd's heartbeat-timeout
	std::int64_t inline_max = -1;              // RPMEM_INLINE_MAX (-1: the daemon's)
	// RPMEM_SPIN=1 polls completion queues, RPMEM_SPIN=0 always blocks; unset: poll for an
	// adaptive budget while a core is free, then block.
	fabric::wait_mode wait = fabric::wait_mode::adaptive;
	// RPMEM_MR_MODE: the MR mode asked of the provider (auto, basic, scalable).
	fabric::mr_mode mr_mode = fabric::mr_mode::automatic;
	// Tests only: pass and honour local descriptors as if the provider required FI_MR_LOCAL
	// (tcp and sockets never do, and ignore the descriptors), to run that path here.
	bool force_local_mr = false;
	// RPMEM_PIPELINE_CHUNK: persists of twice this or more go in pipelined chunks (0: off).
	// Unset: each connection chooses by its provider (lane_batch.hpp, pipeline_chunk_for).
	std::optional<std::uint64_t> pipeline_chunk;
	// A replica's outage (synchronous C ABI): reconnect attempts every
	// RPMEM_RECONNECT_DELAY ms (doubling, at most 2 s apart) while calls wait, for up to
	// RPMEM_RECONNECT_TIMEOUT ms (0: no waiting); then RPMEM_ON_OUTAGE decides: continue (go
	// on without the replica, fenced and tracked, caught up when it is back) or fail (every
	// call fails, as PMDK). client/resilient_pool.hpp.
	std::chrono::milliseconds reconnect_delay{50};
	std::chrono::milliseconds reconnect_timeout{10000};
	bool outage_continue = true;
	// RPMEM_CALL_TIMEOUT (continue only): the longest one call waits for the replica, slow,
	// frozen or being reconnected, before it goes on without it (NVMe's fast_io_fail_tmo).
	// Unset: RPMEM_TIMEOUT + RPMEM_RECONNECT_TIMEOUT; 0: no bound.
	std::chrono::milliseconds call_timeout{15000};
	// RPMEM_CATCH_UP_HOLD_BYTES: a catch-up round this small is its last, moved with the
	// calls held (client/replica_sync.hpp, last_catch_up_round; 0: only when the rounds stop
	// converging, or the 16th).
	std::uint64_t catch_up_hold_bytes = 1u << 20;
	// RPMEM_REPLICATION=async: librpmem's persists return once snapshotted, and a thread
	// replicates them in order (lib/async/remote_writer.hpp); sync (the default): each call
	// returns when the bytes are durable on the replica.
	bool async = false;
	std::size_t async_max_lag_bytes = 64u << 20;        // RPMEM_ASYNC_MAX_LAG_BYTES
	std::chrono::milliseconds async_max_lag_time{1000}; // RPMEM_ASYNC_MAX_LAG_MS
	// RPMEM_ASYNC_ON_FAILURE, once a replica stayed away RPMEM_RECONNECT_TIMEOUT: continue
	// (the default, as RPMEM_ON_OUTAGE): the calls go on, the replica is lost and caught up
	// when it is back; fail: every call from then on fails.
	bool async_keep_going = true;
	// PMDK's variables that are set but mean nothing here, each with why
	// (RPMEM_WORK_QUEUE_SIZE: PMDK's transmit queue depth per lane): process_settings() logs
	// them once (warning).
	std::vector<std::string> ignored;
};

/** The process's settings, read from the environment on first use (throws as read_settings,
 *  again on every call, while a variable is bad). */
const settings &process_settings();

/** Reads settings from an environment lookup (tests pass their own). Throws rpmem::error
 *  (EINVAL) naming the variable when a numeric one is not a number in its range, or
 *  RPMEM_SPIN or RPMEM_MR_MODE has a value it cannot take. RPMEM_LOG_LEVEL (0 to 4) and
 *  RPMEM_STATS_INTERVAL (at least 100) are checked here too, though the log and the metrics
 *  file read them themselves: a bad one fails create, open and remove as any other. */
settings read_settings(const char *(*getenv_fn)(const char *));

/** The next RPMEM_CMD entry (PMDK: one rotation shared by create, open and remove). */
std::string next_command();

/** PMDK's integer parsing for RPMEM_* variables: whole string base 10, else nullopt-like -1. */
long long parse_env_int(const char *value);

} // namespace rpmem::client
