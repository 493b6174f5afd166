// SPDX-License-Identifier: BSD-3-Clause
// Client settings from the environment (PMDK's variables plus ours), read once per process.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace rpmem::client
{

struct settings {
	std::vector<std::string> commands{"rpmemd"}; // RPMEM_CMD split at '|', used round-robin
	std::uint32_t max_nlanes = UINT32_MAX;       // RPMEM_MAX_NLANES
	std::uint32_t work_queue_size = 50;          // RPMEM_WORK_QUEUE_SIZE (PMDK's tx depth)
	std::string providers;                       // "verbs,tcp,sockets" after the overrides
	std::chrono::milliseconds op_timeout{5000};  // RPMEM_TIMEOUT: data-path silence bound
	std::chrono::milliseconds control_timeout{10000}; // RPMEM_CONTROL_TIMEOUT
	std::chrono::milliseconds keepalive{1500}; // RPMEM_KEEPALIVE: ping interval (0: off);
	                                           // below a third of rpmemd's heartbeat-timeout
	std::int64_t inline_max = -1;              // RPMEM_INLINE_MAX (-1: the daemon's)
	bool spin = false;                         // RPMEM_SPIN=1: poll completions
	std::uint64_t pipeline_chunk = 256u << 10; // RPMEM_PIPELINE_CHUNK: persists of twice
	                                           // this or more go in pipelined chunks (0: off)
};

/** The process's settings, read from the environment on first use. */
const settings &process_settings();

/** Reads settings from an environment lookup (tests pass their own). */
settings read_settings(const char *(*getenv_fn)(const char *));

/** The next RPMEM_CMD entry (PMDK: one rotation shared by create, open and remove). */
std::string next_command();

/** PMDK's integer parsing for RPMEM_* variables: whole string base 10, else nullopt-like -1. */
long long parse_env_int(const char *value);

} // namespace rpmem::client
