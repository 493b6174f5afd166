// SPDX-License-Identifier: BSD-3-Clause
// How rpmemd sizes the fabric target of one pool: connections, worker threads, queue depths and
// completion queues, from the lanes the client asked for, the machine's cores, what the
// provider granted and the threads the process already runs. Pure: unit-tested without
// libfabric (tests/unit/target_plan_test.cpp).
#pragma once

#include "fabric/queue_sizing.hpp"

#include <cstddef>
#include <cstdint>

namespace rpmemd
{

inline constexpr std::uint32_t max_lanes = 65536;
inline constexpr std::uint32_t max_endpoints = 16;
inline constexpr std::uint32_t max_queue_depth = 256;
/** Requests one lane may have in flight when the queue has room (see data_path's pipeline). */
inline constexpr std::uint32_t pipeline_depth = 8;

struct target_plan_input {
	std::uint32_t lanes = 1; // asked for by the client
	unsigned cores = 1;      // online CPUs
	unsigned nthreads = 0;   // --nthreads (0: automatic)
	std::size_t ep_cnt = 0;  // endpoints the domain grants (0: no limit)
	std::size_t cq_cnt = 0;  // completion queues the domain grants (0: no limit)
	std::uint32_t posted_recv_limit = UINT32_MAX; // receives an endpoint may have posted
	unsigned threads_running = 1;  // the process's threads before the workers start
	bool announced_writes = false; // APM or commit: writes bring remote CQ data too
	// The queue depths the provider granted for plan().asked (0: not asked yet): the
	// completion queues are sized for these.
	rpmem::fabric::endpoint_sizes granted;
};

struct target_plan {
	std::uint32_t lanes = 0;
	std::uint32_t endpoints = 0;   // fabric connections
	unsigned workers = 0;          // worker threads, one completion queue each
	std::uint32_t per_conn = 0;    // lanes per connection (rounded up)
	std::uint32_t queue_depth = 0; // requests in flight per connection
	// Endpoints of the busiest worker, and what each keeps in flight (queue_sizing.hpp).
	rpmem::fabric::queue_demand demand;
	rpmem::fabric::endpoint_sizes asked; // each endpoint's queue depths to ask for
	rpmem::fabric::endpoint_sizes sizes; // granted, else asked: what the CQs are sized for
	std::size_t cq_size = 0;             // entries of each completion queue
};

/**
 * Two connections per core (lanes that share a connection share its completion queue, and a
 * waiter then often needs a second wake-up: measured on 2 cores, tcp, 4 threads on 4 lanes
 * gained 17 % at 64 KiB and 35 % at 4 KiB with 4 connections instead of 2), at most
 * max_endpoints and never more than lanes; one worker per core (or --nthreads), within a
 * thread budget of 2 x cores + 4 for the whole daemon (providers with progress threads of their
 * own, like sockets, leave fewer for workers); room for pipeline_depth requests per lane when
 * the queue allows it; and what the provider grants bounds all of it. Each endpoint asks for
 * a response (inject) per request and room for the requests' receives; each completion queue
 * holds every slot of every endpoint its worker serves (queue_sizing.hpp: verbs' credits).
 */
target_plan plan_target(const target_plan_input &in);

} // namespace rpmemd
