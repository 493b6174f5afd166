// SPDX-License-Identifier: BSD-3-Clause
// The data path as a composition: connections (connection.hpp) carry lanes (lane.hpp) whose
// requests are built in their lane batch (lane_batch.hpp) and made durable by the persistence
// method rpmemd chose (persist_method.hpp). This file connects them and holds the public calls.
#include "client/data_path.hpp"

#include "client/calibration.hpp"
#include "client/connection.hpp"
#include "client/env.hpp"
#include "client/lane.hpp"
#include "client/lane_map.hpp"
#include "client/log.hpp"
#include "client/persist_method.hpp"
#include "fabric/eq.hpp"
#include "fabric/fabric.hpp"
#include "fabric/info.hpp"
#include "fabric/mr.hpp"
#include "lane/lane_msg.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <vector>

namespace rpmem::client
{

namespace fab = rpmem::fabric;
namespace ln = rpmem::lane;

struct data_path::impl {
	impl(const control::fabric_params &f, const std::string &h, void *addr, std::size_t size,
	     std::uint32_t nlanes, const settings &s);
	~impl() { shutdown(); }

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
	std::vector<std::uint8_t> msg_buf;
	std::vector<std::uint8_t> chunk_buf;
	std::vector<std::uint64_t> raw_buf;
	std::vector<std::uint8_t> resp_buf;
	std::unique_ptr<fab::memory_region> pool_mr, msg_mr, raw_mr, resp_mr, chunk_mr;
	// A second registered region ranges may be sent from (register_source).
	std::unique_ptr<fab::memory_region> src_mr;
	const std::uint8_t *src_base = nullptr;
	std::size_t src_size = 0;
	std::unique_ptr<persist_method> method;
	std::atomic<bool> down{false};
};

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
	fab::request req;
	req.provider = fabric.provider;
	req.mr = cfg.mr_mode;
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
	lanes_per_conn = busiest_connection(nlanes, fabric.nendpoints);

	res.max_msg = std::max<std::size_t>(g.max_msg_size, 4096);
	res.send_after_write = g.send_after_write();
	res.announce_writes = g.announce_writes_pays();
	res.remote = {fabric.raddr, fabric.rkey};
	res.pipeline_chunk = cfg.pipeline_chunk;
	// A daemon that takes several requests per lane lets large persists be pipelined
	// (GPSPM only: APM has no flush step to overlap). Ordered writes are required: a chunk's
	// request must not overtake its data.
	if (fabric.method == control::persist_method::gpspm && res.send_after_write &&
	    queue_depth >= 2 * lanes_per_conn && cfg.pipeline_chunk > 0)
		res.pipeline = std::min<std::uint32_t>(queue_depth / lanes_per_conn, 8);
	eq = std::make_unique<fab::eq>(*domain);
	watch = std::make_unique<shutdown_watch>(*eq, health);
}

void data_path::impl::register_buffers()
{
	pool_mr = std::make_unique<fab::memory_region>(*domain, pool, pool_size,
	                                               FI_WRITE | FI_READ | FI_SEND);
	lane0_spare = queue_depth != lanes_per_conn;
	msg_buf.assign((std::size_t(nlanes) + (lane0_spare ? 1 : 0)) * slot_size, 0);
	msg_mr =
	    std::make_unique<fab::memory_region>(*domain, msg_buf.data(), msg_buf.size(), FI_SEND);
	raw_buf.assign(nlanes, 0);
	raw_mr = std::make_unique<fab::memory_region>(
	    *domain, raw_buf.data(), raw_buf.size() * sizeof(std::uint64_t), FI_READ);
	resp_buf.assign(std::size_t(fabric.nendpoints) * queue_depth * ln::response_size, 0);
	resp_mr = std::make_unique<fab::memory_region>(*domain, resp_buf.data(), resp_buf.size(),
	                                               FI_RECV);
	if (res.pipeline > 1) {
		chunk_buf.assign(
		    std::size_t(nlanes) * (res.pipeline - 1) * path_resources::chunk_slot, 0);
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
		p.cq_size = std::size_t(queue_depth) * 4 + 64 +
		            std::size_t(lanes_per_conn) * max_writes_in_flight(fabric.method);
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
		l.raw = &raw_buf[i];
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
	std::vector<std::uint8_t> bytes(max_inline);
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

data_path::data_path(const control::fabric_params &fabric, const std::string &host, void *pool_addr,
                     std::size_t pool_size, std::uint32_t nlanes, const settings &s)
{
	try {
		impl_ = std::make_unique<impl>(fabric, host, pool_addr, pool_size, nlanes, s);
	} catch (const rpmem::error &e) {
		// The fabric layer's own errors (out of descriptors, memory registration) do not
		// know which replica they were for.
		if (e.message().starts_with(host + ":"))
			throw;
		throw rpmem::error(e.errnum(),
		                   fmt::format("{}: connecting the pool's {} lanes "
		                               "over {} fabric connection(s): {}",
		                               host, nlanes, fabric.nendpoints, e.message()));
	}
}

data_path::~data_path() = default;

void data_path::set_liveness(std::function<std::chrono::steady_clock::time_point()> heard)
{
	impl_->live.heard = std::move(heard);
}

std::uint32_t data_path::nlanes() const
{
	return impl_->nlanes;
}

void data_path::persist(std::uint64_t offset, std::uint64_t length, unsigned lane)
{
	persist(offset, length, lane, true);
}

void data_path::persist_post(std::uint64_t offset, std::uint64_t length, unsigned lane)
{
	persist(offset, length, lane, false);
}

void data_path::persist(std::uint64_t offset, std::uint64_t length, unsigned lane, bool wait_now)
{
	auto &d = *impl_;
	auto &l = d.use(lane);
	if (length == 0)
		return;
	// Small ranges travel inline (the daemon stores aligned words whole); large ones are
	// written zero-copy. A relaxed persist may tear, so it takes the same path: inline is
	// cheaper.
	auto start = std::chrono::steady_clock::now();
	d.method->persist(l, {offset, length}, wait_now);
	lane_counters::bump(l.counters.persists);
	lane_counters::bump(l.counters.bytes_persisted, length);
	if (wait_now)
		l.counters.round_trip(start);
}

void data_path::flush(std::uint64_t offset, std::uint64_t length, unsigned lane)
{
	auto &d = *impl_;
	if (!length)
		return;
	auto &l = d.use(lane);
	d.method->flush(l, {offset, length}, d.pool + offset, d.res.pool_desc);
	lane_counters::bump(l.counters.flushes);
	lane_counters::bump(l.counters.bytes_persisted, length);
}

void data_path::flush_from(const void *src, std::uint64_t offset, std::uint64_t length,
                           unsigned lane)
{
	auto &d = *impl_;
	if (!length)
		return;
	auto *p = static_cast<const std::uint8_t *>(src);
	if (!d.src_mr || p < d.src_base || length > d.src_size ||
	    p - d.src_base > static_cast<std::ptrdiff_t>(d.src_size - length))
		throw rpmem::error(EINVAL,
		                   fmt::format("{}: flush source [{}, +{}) is not inside the "
		                               "registered source region",
		                               d.host, src, length));
	// Inline bytes join the batch being built while drain_ahead's request is in flight;
	// anything else waits for it.
	auto &l = d.lanes[lane].ahead && d.lanes[lane].batch.travels_inline(length) ? d.lanes[lane]
	                                                                            : d.use(lane);
	d.method->flush(l, {offset, length}, p, d.src_mr->desc());
	lane_counters::bump(l.counters.flushes);
	lane_counters::bump(l.counters.bytes_persisted, length);
}

void data_path::drain(unsigned lane)
{
	drain(lane, true);
}

void data_path::drain_post(unsigned lane)
{
	drain(lane, false);
}

void data_path::drain_ahead(unsigned lane)
{
	auto &d = *impl_;
	auto &l = d.lanes[lane];
	if (l.posted)
		d.use(lane);
	l.conn->check_broken();
	if (l.batch.empty())
		return;
	// Only a batch of inline ranges, and only with nothing else in flight: an RDMA write
	// must not land before an earlier request is applied, and a write's completion would
	// be counted as the request's.
	if (!l.spare_slot || l.batch.last_written() ||
	    (!l.ahead && l.sync.outstanding.load(std::memory_order_acquire) != 0)) {
		drain(lane, false); // as drain_post: the next call on the lane completes it
		return;
	}
	d.method->send_ahead(l);
	l.ahead = true;
	lane_counters::bump(l.counters.drains);
	// The request before this one used the slot the lane builds in next: it must be done.
	// rpmemd answers a lane's requests in order (one worker per connection).
	l.conn->wait(l.sync, 1);
}

void data_path::drain(unsigned lane, bool wait_now)
{
	auto &d = *impl_;
	auto &l = d.use(lane);
	l.conn->check_broken();
	if (!d.method->pending(l))
		return;
	auto start = std::chrono::steady_clock::now();
	d.method->drain(l, wait_now);
	lane_counters::bump(l.counters.drains);
	if (wait_now)
		l.counters.round_trip(start);
}

void data_path::complete(unsigned lane)
{
	auto &l = impl_->lanes[lane];
	if (l.posted || l.ahead)
		impl_->use(lane);
	else
		l.conn->check_broken();
}

void data_path::deep_persist(std::uint64_t offset, std::uint64_t length, unsigned lane)
{
	auto &d = *impl_;
	auto &l = d.use(lane);
	auto start = std::chrono::steady_clock::now();
	d.method->deep_persist(l, {offset, length});
	lane_counters::bump(l.counters.deep_persists);
	lane_counters::bump(l.counters.bytes_persisted, length);
	l.counters.round_trip(start);
}

void data_path::read(void *buf, std::uint64_t offset, std::uint64_t length, unsigned lane)
{
	auto &d = *impl_;
	auto &l = d.use(lane);
	if (length == 0)
		return;
	auto *p = static_cast<std::uint8_t *>(buf);
	auto start = std::chrono::steady_clock::now();
	if (!d.local_mr) {
		d.method->read(l, buf, {offset, length}, nullptr, true);
	} else if (p >= d.pool && p + length <= d.pool + d.pool_size) {
		d.method->read(l, buf, {offset, length}, d.res.pool_desc, true);
	} else {
		// The provider needs a local descriptor: register the caller's buffer for this
		// read (rpmem_read is rare: pool recovery, pmempool sync).
		fab::memory_region mr(*d.domain, buf, length, FI_READ);
		d.method->read(l, buf, {offset, length}, mr.desc(), true);
	}
	lane_counters::bump(l.counters.reads);
	lane_counters::bump(l.counters.bytes_read, length);
	l.counters.round_trip(start);
}

std::size_t data_path::batch_cost(std::uint64_t length) const
{
	return impl_->lanes[0].batch.cost(length);
}

std::size_t data_path::batch_capacity() const
{
	return impl_->payload_max;
}

bool data_path::travels_inline(std::uint64_t length) const
{
	return impl_->lanes[0].batch.travels_inline(length);
}

bool data_path::sends_ahead(unsigned lane) const
{
	return lane < impl_->nlanes && impl_->lanes[lane].spare_slot;
}

void data_path::register_source(const void *addr, std::size_t size)
{
	auto &d = *impl_;
	if (d.src_mr)
		throw rpmem::error(
		    EBUSY, fmt::format("{}: a source region is already registered", d.host));
	d.src_mr = std::make_unique<fab::memory_region>(*d.domain, const_cast<void *>(addr), size,
	                                                FI_WRITE | FI_SEND);
	d.src_base = static_cast<const std::uint8_t *>(addr);
	d.src_size = size;
}

lane_stats data_path::stats(unsigned lane) const
{
	auto &d = *impl_;
	if (lane < d.nlanes)
		return d.lanes[lane].counters.snapshot();
	lane_stats total;
	for (const auto &l : d.lanes)
		total += l.counters.snapshot();
	return total;
}

void data_path::shutdown()
{
	impl_->shutdown();
}

} // namespace rpmem::client
