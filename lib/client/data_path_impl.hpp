// SPDX-License-Identifier: BSD-3-Clause
// The data path's state, shared by its two halves: data_path_setup.cpp connects it (domain,
// registrations, connections, the probe at connect) and data_path.cpp holds the public calls.
// Private to lib/client.
#pragma once

#include "client/connection.hpp"
#include "client/data_path.hpp"
#include "client/env.hpp"
#include "client/lane.hpp"
#include "client/persist_method.hpp"
#include "fabric/eq.hpp"
#include "fabric/fabric.hpp"
#include "fabric/info.hpp"
#include "fabric/mr.hpp"
#include "fabric/page_buffer.hpp"
#include "fabric/queue_sizing.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace rpmem::client
{

namespace fab = rpmem::fabric;

struct data_path::impl {
	impl(const control::fabric_params &f, const std::string &h, void *addr, std::size_t size,
	     std::uint32_t nlanes, const settings &s);
	~impl() { shutdown(); }

	fab::queue_demand queue_demand(std::uint32_t depth) const;
	void open_domain();
	void register_buffers();
	void make_connections();
	void connect_all();
	void tune();
	void shutdown();

	/** The lane, after completing a request posted by a split-phase call or left in flight
	 *  by drain_ahead(). */
	lane_state &use(unsigned lane)
	{
		auto &l = lanes[lane];
		if (l.posted || l.ahead) {
			l.posted = l.ahead = false;
			l.conn->wait(l.sync);
		}
		return l;
	}

	control::fabric_params fabric;
	std::string host;
	std::uint8_t *pool;
	std::size_t pool_size;
	std::uint32_t nlanes;
	settings cfg;
	liveness live;
	path_health health;
	// Payload bytes one lane request holds (rpmemd's offer), the largest range that can travel
	// inline in it (one entry of that size fits the payload), and the largest that does:
	// measured at connect (tune()), or RPMEM_INLINE_MAX.
	std::size_t payload_max = 0;
	std::uint64_t max_inline = 0;
	std::uint64_t inline_threshold = 0;
	std::size_t slot_size = 0;
	// Requests in flight per connection, and receives posted for their responses: rpmemd's
	// queue depth, lowered to what this side's provider takes (granted::posted_recv_limit).
	std::uint32_t queue_depth = 0;
	std::uint32_t lanes_per_conn = 0;
	// Each endpoint's queue depths as granted: its completion queue holds them all.
	fab::endpoint_sizes sizes;
	// Lane 0 gets a second request slot (drain_ahead) where rpmemd takes a request more than
	// one per lane: receives beyond the lanes' (queue depth above them), or credits that
	// bound every send.
	bool lane0_spare = false;
	bool local_mr = false;
	path_resources res;

	fab::info source; // lives as long as the endpoints made from it
	std::unique_ptr<fab::fabric_domain> domain;
	std::unique_ptr<fab::eq> eq;
	std::unique_ptr<shutdown_watch> watch;
	std::vector<std::unique_ptr<connection>> conns;
	std::vector<lane_state> lanes;
	std::vector<lane_sync *> syncs;
	// Registered: whole pages of their own (page_buffer.hpp: fork safety).
	fab::page_buffer msg_buf;
	fab::page_buffer chunk_buf;
	fab::page_buffer raw_buf; // one std::uint64_t per lane
	fab::page_buffer resp_buf;
	std::unique_ptr<fab::memory_region> pool_mr, msg_mr, raw_mr, resp_mr, chunk_mr;
	// A second registered region ranges may be sent from (register_source).
	std::unique_ptr<fab::memory_region> src_mr;
	const std::uint8_t *src_base = nullptr;
	std::size_t src_size = 0;
	std::unique_ptr<persist_method> method;
	std::atomic<bool> down{false};
};

} // namespace rpmem::client
