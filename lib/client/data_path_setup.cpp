// SPDX-License-Identifier: BSD-3-Clause
// Connecting the data path: the domain with the registration mode asked, the registered
// buffers, the connections rpmemd announced with their lanes, and the probe at connect that
// sets the inline threshold and the first polling budget (calibration.hpp).
#include "client/calibration.hpp"
#include "client/data_path_impl.hpp"
#include "client/env.hpp"
#include "client/lane_map.hpp"
#include "client/log.hpp"
#include "fabric/library.hpp"
#include "fabric/pinning.hpp"
#include "lane/lane_msg.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace rpmem::client
{

namespace ln = rpmem::lane;

data_path::impl::impl(const control::fabric_params &f, const std::string &h, void *addr,
                      std::size_t size, std::uint32_t n, const settings &s)
    : fabric(f), host(h), pool(static_cast<std::uint8_t *>(addr)), pool_size(size), nlanes(n),
      cfg(s)
{
	if (fabric.nendpoints == 0 || fabric.nendpoints > 1024 || nlanes == 0 ||
	    fabric.queue_depth == 0)
		throw rpmem::error(EPROTO, fmt::format("{}: rpmemd announced {} connections, {} "
		                                       "lanes, queue depth {}",
		                                       host, fabric.nendpoints, nlanes,
		                                       fabric.queue_depth));
	live.op_timeout = cfg.op_timeout;
	open_domain();
	register_buffers();
	make_connections();
	method = make_persist_method(fabric.method, res, domain->granted(), host);
	connect_all();
	tune();
}

void data_path::impl::open_domain()
{
	lanes_per_conn = busiest_connection(nlanes, fabric.nendpoints);
	fab::request req;
	req.provider = fabric.provider;
	req.mr = cfg.mr_mode;
	const auto asked = fab::ask_sizes(queue_demand(fabric.queue_depth));
	req.tx_size = asked.tx_size;
	req.rx_size = asked.rx_size;
	// A libfabric that cannot be loaded is its own error (ELIBACC, what to install), not a
	// provider that cannot reach rpmemd.
	fab::library::load();
	try {
		source = fab::info::for_connect(fabric.address, fabric.port, req);
	} catch (const rpmem::error &e) {
		throw rpmem::error(ENOMEDIUM, fmt::format("{}: the libfabric provider '{}' rpmemd "
		                                          "chose cannot reach {}:{} from here: {}",
		                                          host, fabric.provider, fabric.address,
		                                          fabric.port, e.message()));
	}
	domain = std::make_unique<fab::fabric_domain>(source);
	const auto &g = domain->granted();
	local_mr = g.local_mr() || cfg.force_local_mr;
	queue_depth = std::min(fabric.queue_depth, g.posted_recv_limit());
	if (fabric.inline_max < ln::entry_header_size + 8)
		throw rpmem::error(EPROTO, fmt::format("{}: rpmemd announced an inline payload of "
		                                       "{} bytes: too small for one entry",
		                                       host, fabric.inline_max));
	payload_max = fabric.inline_max;
	max_inline = (payload_max - ln::entry_header_size) & ~std::uint64_t(7);
	inline_threshold = max_inline;
	if (cfg.inline_max >= 0)
		inline_threshold =
		    std::min<std::uint64_t>(max_inline, static_cast<std::uint64_t>(cfg.inline_max));
	slot_size = (ln::request_header_size + payload_max + 63) / 64 * 64;
	sizes = {g.tx_size, g.rx_size};

	res.max_msg = std::max<std::size_t>(g.max_msg_size, 4096);
	res.send_after_write = g.send_after_write();
	res.announce_writes = g.announce_writes_pays();
	res.remote = {fabric.raddr, fabric.rkey};
	res.pipeline_chunk = pipeline_chunk_for(cfg.pipeline_chunk, g.progress_thread);
	// A daemon that takes several requests per lane lets large persists be pipelined
	// (GPSPM only: APM has no flush step to overlap). Ordered writes are required: a chunk's
	// request must not overtake its data.
	if (fabric.method == control::persist_method::gpspm && res.send_after_write &&
	    queue_depth >= 2 * lanes_per_conn && res.pipeline_chunk > 0)
		res.pipeline = std::min<std::uint32_t>(queue_depth / lanes_per_conn, 8);
	eq = std::make_unique<fab::eq>(*domain);
	watch = std::make_unique<shutdown_watch>(*eq, health);
}

/**
 * What one connection keeps in flight with `depth` requests: a receive per response; a send
 * per request, a write beside each (a large GPSPM range) and the lanes' commit writes. APM's
 * writes between drains are not bounded: beyond these a post waits for completions (post()).
 */
fab::queue_demand data_path::impl::queue_demand(std::uint32_t depth) const
{
	fab::queue_demand d;
	d.endpoints = 1;
	d.receives = depth;
	d.transmits = 2 * std::size_t(depth) +
	              std::size_t(lanes_per_conn) * max_writes_in_flight(fabric.method);
	return d;
}

void data_path::impl::register_buffers()
{
	if (auto why = fab::pinning_refusal(fab::current_pin_limits(domain->provider()), pool_size,
	                                    fmt::format("the {}-byte pool", pool_size)))
		throw rpmem::error(ENOMEM, fmt::format("{}: {}", host, *why));
	pool_mr = std::make_unique<fab::memory_region>(*domain, pool, pool_size,
	                                               FI_WRITE | FI_READ | FI_SEND);
	lane0_spare = queue_depth != lanes_per_conn;
	msg_buf = fab::page_buffer((std::size_t(nlanes) + (lane0_spare ? 1 : 0)) * slot_size);
	msg_mr =
	    std::make_unique<fab::memory_region>(*domain, msg_buf.data(), msg_buf.size(), FI_SEND);
	raw_buf = fab::page_buffer(std::size_t(nlanes) * sizeof(std::uint64_t));
	raw_mr =
	    std::make_unique<fab::memory_region>(*domain, raw_buf.data(), raw_buf.size(), FI_READ);
	resp_buf =
	    fab::page_buffer(std::size_t(fabric.nendpoints) * queue_depth * ln::response_size);
	resp_mr = std::make_unique<fab::memory_region>(*domain, resp_buf.data(), resp_buf.size(),
	                                               FI_RECV);
	if (res.pipeline > 1) {
		chunk_buf = fab::page_buffer(std::size_t(nlanes) * (res.pipeline - 1) *
		                             path_resources::chunk_slot);
		chunk_mr = std::make_unique<fab::memory_region>(*domain, chunk_buf.data(),
		                                                chunk_buf.size(), FI_SEND);
	}
	res.pool = pool;
	res.pool_desc = pool_mr->desc();
	res.msg_desc = msg_mr->desc();
	res.raw_desc = raw_mr->desc();
	res.chunk_desc = chunk_mr ? chunk_mr->desc() : nullptr;
}

void data_path::impl::make_connections()
{
	lanes = std::vector<lane_state>(nlanes);
	for (auto &l : lanes)
		syncs.push_back(&l.sync);
	for (std::uint32_t i = 0; i < fabric.nendpoints; ++i) {
		connection_params p;
		p.index = i;
		p.host = host;
		p.queue_depth = queue_depth;
		p.cq_size = fab::cq_entries(queue_demand(queue_depth), sizes);
		p.need_credits = lanes_per_conn > queue_depth;
		p.wait = cfg.wait;
		auto *resp = resp_buf.data() + std::size_t(i) * queue_depth * ln::response_size;
		conns.push_back(std::make_unique<connection>(*domain, source, *eq, p, health,
		                                             *watch, live, syncs, fabric.nendpoints,
		                                             resp, resp_mr->desc()));
		health.watch(conns.back().get());
	}
	for (std::uint32_t i = 0; i < nlanes; ++i) {
		auto &l = lanes[i];
		l.index = i;
		l.sync.ctx.index = i;
		l.batch = lane_batch(msg_buf.data() + std::size_t(i) * slot_size, payload_max,
		                     inline_threshold);
		l.raw = raw_buf.as<std::uint64_t>() + i;
		if (i == 0 && lane0_spare)
			l.spare_slot = msg_buf.data() + std::size_t(nlanes) * slot_size;
		if (res.pipeline > 1)
			l.chunk_msgs = chunk_buf.data() + std::size_t(i) * (res.pipeline - 1) *
			                                      path_resources::chunk_slot;
		l.conn = conns[connection_of(i, fabric.nendpoints)].get();
	}
}

void data_path::impl::connect_all()
{
	for (auto &c : conns) {
		std::uint8_t pd[ln::conn_data_size];
		ln::encode(ln::conn_data{fabric.secret, c->index()}, pd);
		c->connect(pd);
	}
	std::uint32_t connected = 0;
	auto deadline = std::chrono::steady_clock::now() + cfg.control_timeout;
	while (connected < conns.size()) {
		auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
		    deadline - std::chrono::steady_clock::now());
		if (left.count() <= 0)
			throw rpmem::error(
			    ETIMEDOUT, fmt::format("{}: fabric connections to {}:{} ({}) not "
			                           "established within {} ms",
			                           host, fabric.address, fabric.port,
			                           fabric.provider, cfg.control_timeout.count()));
		auto ev = eq->read(left);
		if (!ev)
			continue;
		if (ev->is_error())
			throw rpmem::error(ECONNREFUSED,
			                   fmt::format("{}: fabric connection to {}:{} ({}) "
			                               "failed: {}",
			                               host, fabric.address, fabric.port,
			                               fabric.provider, ev->err_text));
		if (ev->type == FI_CONNECTED)
			++connected;
		else if (ev->type == FI_SHUTDOWN)
			throw rpmem::error(
			    ECONNRESET, fmt::format("{}: rpmemd closed a fabric connection while "
			                            "connecting",
			                            host));
	}
	for (auto &c : conns)
		c->post_receives();
}

/**
 * Measures on lane 0 whether small ranges are made durable sooner inline or by RDMA with this
 * method here, and how long a small persist takes (calibration.hpp): the inline threshold of
 * every lane (unless RPMEM_INLINE_MAX set it) and the first polling budget of adaptive waits.
 * The probes rewrite, at the end of the pool, the bytes the replica already holds there.
 */
void data_path::impl::tune()
{
	constexpr std::uint64_t small = 64, first_probe_offset = 4096; // past any pool header
	constexpr unsigned rounds = 5;
	if (pool_size < first_probe_offset + max_inline || max_inline <= small)
		return; // too small a pool to probe without touching its header: the defaults
	const std::uint64_t at = (pool_size - max_inline) & ~std::uint64_t(63);
	fab::page_buffer bytes(max_inline);
	fab::memory_region mr(*domain, bytes.data(), bytes.size(), FI_READ | FI_WRITE | FI_SEND);
	auto &l = lanes[0];
	method->read(l, bytes.data(), {at, max_inline}, mr.desc(), true);
	auto c = calibrate(*method, l, at, bytes.data(), mr.desc(), small, max_inline, rounds);
	if (cfg.inline_max < 0) {
		inline_threshold = c.inline_threshold;
		for (auto &each : lanes)
			each.batch = lane_batch(each.batch.slot(), payload_max, inline_threshold);
	}
	for (auto &cn : conns)
		cn->calibrate_wait(c.round_trip);
	log(3,
	    "{}: {} over {}: inline up to {} bytes ({} B: inline {:.1f} us, RDMA {:.1f} us; {} B: "
	    "inline {:.1f} us, RDMA {:.1f} us){}",
	    host, control::to_string(method->kind()), fabric.provider, inline_threshold,
	    c.small.size, c.small.inline_us, c.small.rma_us, c.large.size, c.large.inline_us,
	    c.large.rma_us, cfg.inline_max >= 0 ? " as RPMEM_INLINE_MAX says" : "");
}

void data_path::impl::shutdown()
{
	if (down.exchange(true))
		return;
	if (!health.broken()) {
		for (auto &c : conns) {
			try {
				c->ep().shutdown();
			} catch (const rpmem::error &) {
				// Already gone: nothing to tell the peer.
			}
		}
	}
	health.fail(ECONNRESET, "the pool was closed");
}

} // namespace rpmem::client
