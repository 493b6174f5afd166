// SPDX-License-Identifier: BSD-3-Clause
// One lane of a data path: an ordering domain with one request slot (lane 0: two), used by one
// thread at a time. It travels on one connection (lane l on connection l % connections).
#pragma once

#include "client/connection.hpp"
#include "client/lane_batch.hpp"
#include "client/lane_stats.hpp"

#include <cstdint>

namespace rpmem::client
{

struct lane_state {
	lane_sync sync;                     // what the connection's reaper updates
	lane_batch batch;                   // the request being built in the slot
	connection *conn = nullptr;         // the connection the lane travels on
	std::uint32_t index = 0;            // the lane's number
	std::uint8_t *chunk_msgs = nullptr; // pipeline - 1 small slots for chunk requests
	std::uint64_t *raw = nullptr;       // target of APM read-backs (registered for FI_READ)
	bool posted = false;                // a split-phase request is in flight
	// Lane 0's second request slot (null elsewhere, or where rpmemd takes one request per
	// lane): drain_ahead() sends the batch and builds the next one here meanwhile.
	std::uint8_t *spare_slot = nullptr;
	bool ahead = false; // drain_ahead() left a request in flight
	lane_counters counters;
};

} // namespace rpmem::client
