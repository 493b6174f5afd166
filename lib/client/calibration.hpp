// SPDX-License-Identifier: BSD-3-Clause
// What a data path measures when it connects, on this provider, machine and replica: whether a
// small range is made durable sooner inside the request or written by RDMA (the persistence
// method's own way), and how long a small persist's round trip takes (the budget of adaptive
// waits starts from it). PMDK and the first rpmem fixed both by constants; the answer differs
// per provider and method (APM on sockets: an RDMA write and read beat a send and its reply).
#pragma once

#include "client/lane_batch.hpp"

#include <chrono>
#include <cstdint>

namespace rpmem::client
{

class persist_method;
struct lane_state;

struct calibration {
	path_costs small, large;                // the least of each way's samples, per size
	std::uint64_t inline_threshold = 0;     // what inline_crossover() made of them
	std::chrono::nanoseconds round_trip{0}; // a small persist, the cheaper way
};

/**
 * Persists of `small` and `large` bytes at offset `at` on lane `l` with method `m`, inline
 * and by RDMA, alternating, `rounds` of each after one unmeasured round. The bytes come from
 * `src` (registered under `desc`), which must hold what the replica has at `at` already (read
 * it first): the probes then change nothing on the replica. The lane's batch must be empty;
 * it is left empty, with its old threshold.
 */
calibration calibrate(persist_method &m, lane_state &l, std::uint64_t at, const std::uint8_t *src,
                      void *desc, std::uint64_t small, std::uint64_t large, unsigned rounds);

} // namespace rpmem::client
