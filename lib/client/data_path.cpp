// SPDX-License-Identifier: BSD-3-Clause
#include "client/data_path.hpp"

#include "client/env.hpp"
#include "common/lane_msg.hpp"
#include "fabric/cq.hpp"
#include "fabric/endpoint.hpp"
#include "fabric/eq.hpp"
#include "fabric/fabric.hpp"
#include "fabric/info.hpp"
#include "fabric/mr.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace rpmem::client
{

namespace fab = rpmem::fabric;
namespace ln = rpmem::lane;
using namespace std::chrono_literals;

namespace
{

// lane_op: a signalled operation a lane waits for; recv: a response buffer; silent: an
// unsignalled write, which only ever completes with an error.
enum class ctx_kind : std::uint8_t { lane_op, recv, silent };

/** Every posted operation's context: libfabric's FI_CONTEXT scratch space comes first. */
struct op_context {
	fi_context fctx;
	ctx_kind kind;
	std::uint32_t index; // lane number, or receive slot
};

/** Error completions that mean the connection is gone, not that one operation failed. */
bool connection_lost(int fi_err)
{
	switch (fi_err) {
	case FI_ECANCELED:
	case FI_ECONNRESET:
	case FI_ENOTCONN:
	case FI_ECONNABORTED:
	case EPIPE:
	case FI_ESHUTDOWN:
	case FI_ECONNREFUSED:
	case FI_ETIMEDOUT:
		return true;
	default:
		return false;
	}
}

} // namespace

/** Counters a lane's own thread updates and any thread may read. */
struct lane_counters {
	std::atomic<std::uint64_t> persists{0}, flushes{0}, drains{0}, reads{0}, deep_persists{0};
	std::atomic<std::uint64_t> bytes_persisted{0}, bytes_read{0}, round_trips{0};
	std::array<std::atomic<std::uint64_t>, 40> latency{};

	static void bump(std::atomic<std::uint64_t> &c, std::uint64_t n = 1)
	{
		c.fetch_add(n, std::memory_order_relaxed);
	}
	void round_trip(std::chrono::steady_clock::time_point start)
	{
		auto ns = static_cast<std::uint64_t>(
		    std::max<std::int64_t>(1, std::chrono::duration_cast<std::chrono::nanoseconds>(
		                                  std::chrono::steady_clock::now() - start)
		                                  .count()));
		bump(round_trips);
		bump(latency[std::min<std::size_t>(63 - __builtin_clzll(ns), latency.size() - 1)]);
	}
};

/** One lane: an ordering domain with one request slot. Used by one thread at a time. */
struct alignas(64) lane_state {
	lane_counters counters;
	std::atomic<std::uint32_t> outstanding{0}; // completions still expected
	std::atomic<std::uint32_t> err{0};
	// Responses for cookies [first_cookie, cookie] are the lane's; the lane's thread writes
	// them, the thread reaping its connection reads them.
	std::atomic<std::uint64_t> cookie{0};
	std::atomic<std::uint64_t> first_cookie{0};
	std::uint64_t next_cookie() { return cookie.fetch_add(1, std::memory_order_release) + 1; }
	std::uint8_t *msg = nullptr;        // request slot (registered for FI_SEND)
	std::uint8_t *chunk_msgs = nullptr; // pipeline - 1 small slots for a split persist
	std::uint64_t *raw = nullptr;       // target of APM reads (registered for FI_READ)
	op_context ctx{};
	struct connection *conn = nullptr;
	// The batch being built in the slot's payload: flushed ranges not yet durable.
	std::size_t batch_bytes = 0;
	std::uint64_t batch_entries = 0;
	bool batch_inline = false;     // some entry carries its data
	bool posted = false;           // a request was posted, not yet completed (split phase)
	std::uint64_t inline_lo = 0;   // extent of the batch's inline data (valid when
	std::uint64_t inline_hi = 0;   // batch_inline): see add()
	std::uint64_t last_offset = 0; // the latest range written by RDMA (APM reads it back)
	std::uint64_t last_length = 0;
};

/** One fabric connection shared by the lanes l with l % E == index. */
struct connection {
	std::uint32_t index = 0;
	std::unique_ptr<fab::cq> cq;
	std::unique_ptr<fab::endpoint> ep;
	std::vector<op_context> recv_ctx;
	std::mutex cq_mutex;                  // held by the thread reaping completions (leader)
	std::atomic<std::uint32_t> events{0}; // bumped to wake followers
	std::atomic<std::int32_t> credits{0}; // requests the daemon can still take
	bool need_credits = false;
	std::atomic<bool> broken{false};
	std::atomic<int> broken_err{0};
};

struct data_path::impl {
	impl(const control::fabric_params &f, const std::string &h, void *addr, std::size_t size,
	     std::uint32_t nlanes, const settings &s);
	~impl() { shutdown(); }

	void connect_all();
	void wait(lane_state &l);
	void progress(connection &c, bool block, lane_state *mine);
	void dispatch(connection &c, const fab::cq_entry &e);
	void fail_all(int err, const std::string &why);
	void check_broken(connection &c) const;
	template <class Post> void post(connection &c, Post &&op);
	void take_credit(connection &c);
	void send_request(lane_state &l, const ln::request &r, std::size_t payload,
	                  bool wait_now = true);
	/** Writes [off, off+len) of the replica from src (registered under desc). */
	void write(lane_state &l, std::uint64_t off, std::uint64_t len, bool signal,
	           const std::uint8_t *src, void *desc);
	void read_back(lane_state &l, void *buf, std::uint64_t off, std::uint64_t len, void *desc,
	               bool wait_now = true);
	/** Adds a range whose bytes are at src (the pool itself, or a registered source). */
	void add(lane_state &l, unsigned lane, std::uint64_t off, std::uint64_t len,
	         const std::uint8_t *src, void *desc);
	void add(lane_state &l, unsigned lane, std::uint64_t off, std::uint64_t len)
	{
		add(l, lane, off, len, pool + off, pool_mr->desc());
	}
	/** A large persist in pipelined chunks: all but the last go out now, each written and
	 * then announced by its own request, so rpmemd makes chunk k durable while chunk k+1
	 * is in transit. Returns what is left for the lane's own request (the last chunk). */
	std::uint64_t send_chunks(lane_state &l, unsigned lane, std::uint64_t off,
	                          std::uint64_t len);
	/** The lane, after completing a request posted by a split-phase call. */
	lane_state &use(unsigned lane)
	{
		auto &l = lanes[lane];
		if (l.posted)
			wait(l);
		return l;
	}
	void finish(lane_state &l, unsigned lane, bool wait_now = true);
	void send_batch(lane_state &l, unsigned lane, bool wait_now = true);
	bool fits(const lane_state &l, std::size_t n) const
	{
		return l.batch_bytes + n <= fabric.inline_max;
	}
	void check_eq();
	void shutdown();
	[[noreturn]] void throw_lane_error(const lane_state &l, const char *what) const;

	control::fabric_params fabric;
	std::string host;
	std::uint8_t *pool;
	std::size_t pool_size;
	std::uint32_t nlanes;
	settings cfg;
	std::function<std::chrono::steady_clock::time_point()> heard; // see set_liveness
	std::uint32_t inline_max = 0;
	std::size_t slot_size = 0;
	std::size_t max_msg = 0;
	std::uint32_t pipeline = 1; // requests one lane may have in flight
	// Requests in flight per connection, and receives posted for their responses: rpmemd's
	// queue depth, lowered to what this side's provider takes (granted::posted_recv_limit).
	std::uint32_t queue_depth = 0;
	static constexpr std::size_t chunk_slot = 64;
	bool saw = true;
	bool local_mr = false;

	fab::info source;
	std::unique_ptr<fab::fabric_domain> domain;
	std::unique_ptr<fab::eq> eq;
	std::mutex eq_mutex;
	std::vector<std::unique_ptr<connection>> conns;
	std::vector<lane_state> lanes;
	std::vector<std::uint8_t> msg_buf;
	std::vector<std::uint8_t> chunk_buf;
	std::vector<std::uint64_t> raw_buf;
	std::vector<std::uint8_t> resp_buf;
	std::unique_ptr<fab::memory_region> pool_mr, msg_mr, raw_mr, resp_mr, chunk_mr;
	// A second registered region ranges may be sent from (register_source).
	std::unique_ptr<fab::memory_region> src_mr;
	const std::uint8_t *src_base = nullptr;
	std::size_t src_size = 0;
	std::atomic<bool> down{false};
	// The first fail_all's reason; a call that fails with ETIMEDOUT reports it (wait() says
	// whether rpmemd fell silent or answered its keep-alive without completing).
	mutable std::mutex broken_why_mutex;
	std::string broken_why;
	std::chrono::milliseconds wait_cap() const { return cfg.op_timeout * 12; }
	std::string timeout_reason(bool capped) const
	{
		return capped
		           ? fmt::format("no completion from rpmemd for {} ms (12 x RPMEM_TIMEOUT) "
		                         "although it answers its keep-alive: the fabric path to "
		                         "it may be down, or its storage stuck",
		                         wait_cap().count())
		           : fmt::format("rpmemd is not answering: no completion and no keep-alive "
		                         "answer for {} ms (RPMEM_TIMEOUT); check the host and the "
		                         "link",
		                         cfg.op_timeout.count());
	}
	op_context silent_ctx{{}, ctx_kind::silent, 0};
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
	fab::request req;
	req.provider = fabric.provider;
	auto &fi = source; // lives as long as the endpoints made from it
	try {
		fi = fab::info::for_connect(fabric.address, fabric.port, req);
	} catch (const rpmem::error &e) {
		throw rpmem::error(ENOMEDIUM, fmt::format("{}: the libfabric provider '{}' rpmemd "
		                                          "chose cannot reach {}:{} from here: {}",
		                                          host, fabric.provider, fabric.address,
		                                          fabric.port, e.message()));
	}
	domain = std::make_unique<fab::fabric_domain>(fi);
	const auto &g = domain->granted();
	saw = g.send_after_write();
	local_mr = g.local_mr();
	max_msg = std::max<std::size_t>(g.max_msg_size, 4096);
	queue_depth = std::min(fabric.queue_depth, g.posted_recv_limit());
	// The largest range that still fits the daemon's payload as one inline entry.
	if (fabric.inline_max < ln::entry_header_size + 8)
		throw rpmem::error(EPROTO, fmt::format("{}: rpmemd announced an inline payload of "
		                                       "{} bytes: too small for one entry",
		                                       host, fabric.inline_max));
	inline_max = (fabric.inline_max - ln::entry_header_size) & ~7U;
	if (cfg.inline_max >= 0)
		inline_max =
		    std::min<std::uint32_t>(inline_max, static_cast<std::uint32_t>(cfg.inline_max));
	slot_size = (ln::request_header_size + fabric.inline_max + 63) / 64 * 64;

	eq = std::make_unique<fab::eq>(*domain);
	pool_mr = std::make_unique<fab::memory_region>(*domain, pool, pool_size,
	                                               FI_WRITE | FI_READ | FI_SEND);
	msg_buf.assign(std::size_t(nlanes) * slot_size, 0);
	msg_mr =
	    std::make_unique<fab::memory_region>(*domain, msg_buf.data(), msg_buf.size(), FI_SEND);
	raw_buf.assign(nlanes, 0);
	raw_mr = std::make_unique<fab::memory_region>(
	    *domain, raw_buf.data(), raw_buf.size() * sizeof(std::uint64_t), FI_READ);
	resp_buf.assign(std::size_t(fabric.nendpoints) * queue_depth * ln::response_size, 0);
	resp_mr = std::make_unique<fab::memory_region>(*domain, resp_buf.data(), resp_buf.size(),
	                                               FI_RECV);

	std::uint32_t lanes_per_conn = (nlanes + fabric.nendpoints - 1) / fabric.nendpoints;
	// A daemon that takes several requests per lane lets large persists be pipelined
	// (GPSPM only: APM has no flush step to overlap). Ordered writes are required: a chunk's
	// request must not overtake its data.
	if (fabric.method == control::persist_method::gpspm && saw &&
	    queue_depth >= 2 * lanes_per_conn && cfg.pipeline_chunk > 0)
		pipeline = std::min<std::uint32_t>(queue_depth / lanes_per_conn, 8);
	if (pipeline > 1) {
		chunk_buf.assign(std::size_t(nlanes) * (pipeline - 1) * chunk_slot, 0);
		chunk_mr = std::make_unique<fab::memory_region>(*domain, chunk_buf.data(),
		                                                chunk_buf.size(), FI_SEND);
	}
	for (std::uint32_t i = 0; i < fabric.nendpoints; ++i) {
		auto c = std::make_unique<connection>();
		c->index = i;
		c->cq = std::make_unique<fab::cq>(
		    *domain,
		    fab::cq_options{queue_depth * 4 + 64,
		                    cfg.spin ? fab::wait_object::none : fab::wait_object::unspec});
		c->ep = std::make_unique<fab::endpoint>(*domain, fi);
		c->ep->bind(*eq);
		// Transmits complete silently unless asked (FI_COMPLETION); receives always do.
		c->ep->bind(*c->cq, FI_TRANSMIT | FI_SELECTIVE_COMPLETION);
		c->ep->bind(*c->cq, FI_RECV);
		c->ep->enable();
		c->recv_ctx.resize(queue_depth);
		c->credits = static_cast<std::int32_t>(queue_depth);
		c->need_credits = lanes_per_conn > queue_depth;
		conns.push_back(std::move(c));
	}
	lanes = std::vector<lane_state>(nlanes);
	for (std::uint32_t l = 0; l < nlanes; ++l) {
		auto &ls = lanes[l];
		ls.msg = msg_buf.data() + std::size_t(l) * slot_size;
		ls.raw = &raw_buf[l];
		if (pipeline > 1)
			ls.chunk_msgs =
			    chunk_buf.data() + std::size_t(l) * (pipeline - 1) * chunk_slot;
		ls.ctx.kind = ctx_kind::lane_op;
		ls.ctx.index = l;
		ls.conn = conns[l % fabric.nendpoints].get();
	}
	connect_all();
}

void data_path::impl::connect_all()
{
	for (auto &c : conns) {
		for (std::uint32_t s = 0; s < queue_depth; ++s) {
			c->recv_ctx[s].kind = ctx_kind::recv;
			c->recv_ctx[s].index = s;
		}
		std::uint8_t pd[ln::conn_data_size];
		ln::encode(ln::conn_data{fabric.secret, c->index}, pd);
		c->ep->connect(pd);
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
	for (auto &c : conns) {
		for (std::uint32_t s = 0; s < queue_depth; ++s) {
			auto *buf = resp_buf.data() +
			            (std::size_t(c->index) * queue_depth + s) * ln::response_size;
			post(*c, [&] {
				return c->ep->recv(buf, ln::response_size, resp_mr->desc(),
				                   &c->recv_ctx[s]);
			});
		}
	}
}

void data_path::impl::fail_all(int err, const std::string &why)
{
	for (auto &c : conns) {
		int expected = 0;
		c->broken_err.compare_exchange_strong(expected, err);
		c->broken.store(true);
		c->events.fetch_add(1);
		c->events.notify_all();
		c->credits.fetch_add(1 << 20);
		c->credits.notify_all();
	}
	std::lock_guard lock(broken_why_mutex);
	if (broken_why.empty())
		broken_why = why;
}

void data_path::impl::check_broken(connection &c) const
{
	if (c.broken.load(std::memory_order_acquire)) {
		int err = c.broken_err.load();
		if (err != ETIMEDOUT)
			throw rpmem::error(
			    err ? err : ECONNRESET,
			    fmt::format("{}: the fabric connection to rpmemd is lost", host));
		std::lock_guard lock(broken_why_mutex);
		throw rpmem::error(ETIMEDOUT, fmt::format("{}: {}", host, broken_why));
	}
}

/** Looks for FI_SHUTDOWN on the event queue (the daemon went away). */
void data_path::impl::check_eq()
{
	std::unique_lock lock(eq_mutex, std::try_to_lock);
	if (!lock)
		return;
	while (auto ev = eq->read(0ms)) {
		if (ev->is_error() || ev->type == FI_SHUTDOWN)
			fail_all(ECONNRESET, "connection shut down");
	}
}

void data_path::impl::dispatch(connection &c, const fab::cq_entry &e)
{
	auto *ctx = static_cast<op_context *>(e.op_context);
	if (ctx->kind == ctx_kind::silent)
		return; // providers may report unsignalled writes anyway
	if (ctx->kind == ctx_kind::lane_op) {
		lanes[ctx->index].outstanding.fetch_sub(1, std::memory_order_acq_rel);
		return;
	}
	// A response: find its lane, then give the receive buffer back to the provider.
	auto *buf =
	    resp_buf.data() + (std::size_t(c.index) * queue_depth + ctx->index) * ln::response_size;
	auto resp = ln::decode_response({buf, std::min<std::size_t>(e.len, ln::response_size)});
	post(c, [&] { return c.ep->recv(buf, ln::response_size, resp_mr->desc(), ctx); });
	if (c.need_credits) {
		c.credits.fetch_add(1, std::memory_order_release);
		c.credits.notify_one();
	}
	if (!resp || resp->lane >= nlanes || lanes[resp->lane].conn != &c ||
	    resp->cookie < lanes[resp->lane].first_cookie.load(std::memory_order_acquire) ||
	    resp->cookie > lanes[resp->lane].cookie.load(std::memory_order_acquire)) {
		c.broken_err = EPROTO;
		c.broken = true;
		return;
	}
	auto &l = lanes[resp->lane];
	if (resp->err)
		l.err.store(resp->err, std::memory_order_relaxed);
	l.outstanding.fetch_sub(1, std::memory_order_acq_rel);
}

/** Reaps completions once (block: wait up to a bounded time). Caller holds c.cq_mutex. */
void data_path::impl::progress(connection &c, bool block, lane_state *mine)
{
	std::array<fab::cq_entry, 16> entries{};
	fab::cq_result res;
	if (block && !cfg.spin)
		res = c.cq->sread(entries, 100ms);
	else
		res = c.cq->read(entries);
	if (res.error) {
		auto *ctx = static_cast<op_context *>(res.error->op_context);
		int err = connection_lost(res.error->err) || !ctx ? ECONNRESET : EIO;
		if (ctx && ctx->kind == ctx_kind::silent) {
			// A lost write: nothing waits for it, and nothing after it can be trusted.
			fail_all(err == EIO ? EIO : ECONNRESET, res.error->text);
		} else if (ctx && ctx->kind == ctx_kind::lane_op && err == EIO) {
			lanes[ctx->index].err = EIO;
			lanes[ctx->index].outstanding.fetch_sub(1);
		} else {
			fail_all(err, res.error->text);
		}
	}
	bool others = false;
	for (std::size_t i = 0; i < res.count; ++i) {
		dispatch(c, entries[i]);
		auto *ctx = static_cast<op_context *>(entries[i].op_context);
		others |= ctx->kind == ctx_kind::recv || !mine || &lanes[ctx->index] != mine;
	}
	if (others) {
		c.events.fetch_add(1, std::memory_order_release);
		c.events.notify_all();
	}
	if (res.count == 0 && !res.error)
		check_eq();
}

void data_path::impl::wait(lane_state &l)
{
	l.posted = false;
	auto &c = *l.conn;
	// The last sign of life: the wait's start, a completion of this lane, or (heard) the
	// daemon's latest keep-alive answer. Silence for op_timeout ends the wait. Keep-alive
	// answers alone stretch it to wait_cap() at most: a daemon whose control channel answers
	// while the fabric path to it is cut (RDMA and SSH on different networks) must not keep
	// a caller waiting for ever.
	auto alive = std::chrono::steady_clock::now();
	auto progressed = alive; // the last completion of this lane
	auto left = l.outstanding.load(std::memory_order_acquire);
	while (l.outstanding.load(std::memory_order_acquire) != 0) {
		check_broken(c);
		auto seen = c.events.load(std::memory_order_acquire);
		if (l.outstanding.load(std::memory_order_acquire) == 0)
			break;
		if (c.cq_mutex.try_lock()) {
			try {
				while (l.outstanding.load(std::memory_order_acquire) != 0 &&
				       !c.broken.load()) {
					progress(c, true, &l);
					auto now = std::chrono::steady_clock::now();
					auto o = l.outstanding.load(std::memory_order_acquire);
					if (o != left) {
						left = o;
						alive = progressed = now;
					}
					if (o == 0 || now - alive <= cfg.op_timeout)
						continue;
					if (heard && now - progressed <= wait_cap())
						alive = std::max(alive, heard());
					if (now - alive <= cfg.op_timeout)
						continue;
					fail_all(ETIMEDOUT,
					         timeout_reason(now - progressed > wait_cap()));
				}
			} catch (...) {
				c.cq_mutex.unlock();
				c.events.fetch_add(1);
				c.events.notify_all();
				throw;
			}
			c.cq_mutex.unlock();
			c.events.fetch_add(1, std::memory_order_release);
			c.events.notify_all();
		} else {
			c.events.wait(seen, std::memory_order_acquire);
		}
	}
	check_broken(c);
	if (auto err = l.err.exchange(0))
		throw rpmem::error(static_cast<int>(err),
		                   fmt::format("{}: rpmemd refused the request: {}", host,
		                               std::strerror(static_cast<int>(err))));
}

template <class Post> void data_path::impl::post(connection &c, Post &&op)
{
	for (;;) {
		check_broken(c);
		if (op() == fab::post_status::posted)
			return;
		// The queue is full: reap completions (ours or anyone's) and retry.
		if (c.cq_mutex.try_lock()) {
			try {
				progress(c, false, nullptr);
			} catch (...) {
				c.cq_mutex.unlock();
				throw;
			}
			c.cq_mutex.unlock();
		} else {
			std::this_thread::yield();
		}
	}
}

void data_path::impl::take_credit(connection &c)
{
	if (!c.need_credits)
		return;
	for (;;) {
		check_broken(c);
		auto v = c.credits.load(std::memory_order_acquire);
		if (v > 0 && c.credits.compare_exchange_weak(v, v - 1))
			return;
		if (v <= 0) {
			// Someone must reap completions for credits to come back.
			if (c.cq_mutex.try_lock()) {
				try {
					progress(c, true, nullptr);
				} catch (...) {
					c.cq_mutex.unlock();
					throw;
				}
				c.cq_mutex.unlock();
				c.events.fetch_add(1);
				c.events.notify_all();
			} else {
				c.credits.wait(v);
			}
		}
	}
}

void data_path::impl::send_request(lane_state &l, const ln::request &r, std::size_t payload,
                                   bool wait_now)
{
	auto &c = *l.conn;
	take_credit(c);
	if (l.outstanding.load(std::memory_order_relaxed) == 0)
		l.first_cookie.store(r.cookie, std::memory_order_release);
	ln::encode(r, l.msg);
	l.outstanding.fetch_add(1, std::memory_order_relaxed);
	post(c, [&] {
		return c.ep->send(l.msg, ln::request_header_size + payload, msg_mr->desc(), &l.ctx);
	});
	if (wait_now)
		wait(l);
	else
		l.posted = true;
}

void data_path::impl::write(lane_state &l, std::uint64_t off, std::uint64_t len, bool signal,
                            const std::uint8_t *src, void *desc)
{
	auto &c = *l.conn;
	while (len) {
		std::uint64_t n = std::min<std::uint64_t>(len, max_msg);
		fab::rma_target dst{fabric.raddr + off, fabric.rkey};
		if (signal) {
			l.outstanding.fetch_add(1, std::memory_order_relaxed);
			post(c, [&] {
				return c.ep->writemsg(src, n, desc, dst, &l.ctx,
				                      FI_COMPLETION | FI_DELIVERY_COMPLETE);
			});
		} else {
			post(c, [&] { return c.ep->write(src, n, desc, dst, &silent_ctx); });
		}
		src += n;
		off += n;
		len -= n;
	}
}

void data_path::impl::read_back(lane_state &l, void *buf, std::uint64_t off, std::uint64_t len,
                                void *desc, bool wait_now)
{
	auto &c = *l.conn;
	auto *dst = static_cast<std::uint8_t *>(buf);
	while (len) {
		std::uint64_t n = std::min<std::uint64_t>(len, max_msg);
		fab::rma_target src{fabric.raddr + off, fabric.rkey};
		l.outstanding.fetch_add(1, std::memory_order_relaxed);
		post(c, [&] { return c.ep->readmsg(dst, n, desc, src, &l.ctx, FI_COMPLETION); });
		dst += n;
		off += n;
		len -= n;
	}
	if (wait_now)
		wait(l);
	else
		l.posted = true;
}

/** Adds a range to the lane's batch: inline when it fits, else written by RDMA right now. */
void data_path::impl::add(lane_state &l, unsigned lane, std::uint64_t off, std::uint64_t len,
                          const std::uint8_t *src, void *desc)
{
	const auto with_data = ln::entry_size(len, true);
	if (len <= inline_max) {
		if (!fits(l, with_data) && l.batch_entries)
			send_batch(l, lane);
		l.batch_bytes +=
		    ln::encode(off, len, src, l.msg + ln::request_header_size + l.batch_bytes);
		l.inline_lo = l.batch_inline ? std::min(l.inline_lo, off) : off;
		l.inline_hi = l.batch_inline ? std::max(l.inline_hi, off + len) : off + len;
		l.batch_inline = true;
		++l.batch_entries;
		return;
	}
	// rpmemd applies a batch's inline data when the batch arrives, after every write posted
	// before it: inline bytes this newer write covers are sent first, or they would land on
	// top of it.
	if (l.batch_inline && off < l.inline_hi && off + len > l.inline_lo)
		send_batch(l, lane);
	write(l, off, len, !saw, src, desc);
	if (!saw)
		wait(l); // without send-after-write order the write must land before the message
	if (!fits(l, ln::entry_header_size))
		send_batch(l, lane);
	l.batch_bytes +=
	    ln::encode(off, len, nullptr, l.msg + ln::request_header_size + l.batch_bytes);
	++l.batch_entries;
	l.last_offset = off;
	l.last_length = len;
}

std::uint64_t data_path::impl::send_chunks(lane_state &l, unsigned lane, std::uint64_t off,
                                           std::uint64_t len)
{
	if (pipeline < 2 || len < 2 * cfg.pipeline_chunk || l.batch_entries)
		return len;
	// At most `pipeline` requests in flight, the lane's own slot carrying the last chunk.
	std::uint64_t chunk =
	    std::max<std::uint64_t>(cfg.pipeline_chunk, (len + pipeline - 1) / pipeline);
	chunk = (chunk + 4095) & ~std::uint64_t(4095);
	auto &c = *l.conn;
	l.first_cookie.store(l.cookie.load(std::memory_order_relaxed) + 1,
	                     std::memory_order_release);
	for (std::uint32_t i = 0; len > chunk && i + 1 < pipeline; ++i) {
		write(l, off, chunk, false, pool + off, pool_mr->desc());
		auto *m = l.chunk_msgs + std::size_t(i) * chunk_slot;
		ln::encode(ln::request{ln::op::persist, lane, 0, 1, l.next_cookie()}, m);
		ln::encode(off, chunk, nullptr, m + ln::request_header_size);
		l.outstanding.fetch_add(1, std::memory_order_relaxed);
		post(c, [&] {
			return c.ep->send(m, ln::request_header_size + ln::entry_header_size,
			                  chunk_mr->desc(), &l.ctx);
		});
		off += chunk;
		len -= chunk;
	}
	return len;
}

/** Makes the lane's batch durable: one round trip. */
void data_path::impl::finish(lane_state &l, unsigned lane, bool wait_now)
{
	if (fabric.method == control::persist_method::apm && !l.batch_inline) {
		// APM: the replica declared NIC writes durable; a read behind them proves arrival.
		std::uint64_t n = std::min<std::uint64_t>(l.last_length, 8);
		l.batch_bytes = 0;
		l.batch_entries = 0;
		read_back(l, l.raw, l.last_offset + l.last_length - n, n, raw_mr->desc(), wait_now);
		return;
	}
	send_batch(l, lane, wait_now);
}

void data_path::impl::send_batch(lane_state &l, unsigned lane, bool wait_now)
{
	std::size_t bytes = l.batch_bytes;
	std::uint64_t entries = l.batch_entries;
	l.batch_bytes = 0;
	l.batch_entries = 0;
	l.batch_inline = false;
	send_request(l, {ln::op::persist, lane, 0, entries, l.next_cookie()}, bytes, wait_now);
}

void data_path::impl::shutdown()
{
	if (down.exchange(true))
		return;
	for (auto &c : conns) {
		if (!c->broken.load()) {
			try {
				c->ep->shutdown();
			} catch (const rpmem::error &) {
				// Already gone: nothing to tell the peer.
			}
		}
	}
	fail_all(ECONNRESET, "closed");
}

data_path::data_path(const control::fabric_params &fabric, const std::string &host, void *pool_addr,
                     std::size_t pool_size, std::uint32_t nlanes, const settings &s)
    : impl_(std::make_unique<impl>(fabric, host, pool_addr, pool_size, nlanes, s))
{
}

data_path::~data_path() = default;

void data_path::set_liveness(std::function<std::chrono::steady_clock::time_point()> heard)
{
	impl_->heard = std::move(heard);
}

std::uint32_t data_path::nlanes() const
{
	return impl_->nlanes;
}

void data_path::persist(std::uint64_t offset, std::uint64_t length, unsigned lane)
{
	auto &d = *impl_;
	auto &l = d.use(lane);
	if (length == 0)
		return;
	// Small ranges travel inline (the daemon stores aligned words whole); large ones are
	// written zero-copy. A relaxed persist may tear, so it takes the same path: inline is
	// cheaper.
	auto start = std::chrono::steady_clock::now();
	auto rest = d.send_chunks(l, lane, offset, length);
	d.add(l, lane, offset + length - rest, rest);
	d.finish(l, lane);
	lane_counters::bump(l.counters.persists);
	lane_counters::bump(l.counters.bytes_persisted, length);
	l.counters.round_trip(start);
}

void data_path::flush(std::uint64_t offset, std::uint64_t length, unsigned lane)
{
	auto &d = *impl_;
	if (!length)
		return;
	auto &l = d.use(lane);
	d.add(l, lane, offset, length);
	lane_counters::bump(l.counters.flushes);
	lane_counters::bump(l.counters.bytes_persisted, length);
}

std::size_t data_path::batch_cost(std::uint64_t length) const
{
	return travels_inline(length) ? ln::entry_size(length, true) : ln::entry_header_size;
}

std::size_t data_path::batch_capacity() const
{
	return impl_->fabric.inline_max;
}

bool data_path::travels_inline(std::uint64_t length) const
{
	return length <= impl_->inline_max;
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
	auto &l = d.use(lane);
	d.add(l, lane, offset, length, p, d.src_mr->desc());
	lane_counters::bump(l.counters.flushes);
	lane_counters::bump(l.counters.bytes_persisted, length);
}

void data_path::persist_post(std::uint64_t offset, std::uint64_t length, unsigned lane)
{
	auto &d = *impl_;
	auto &l = d.use(lane);
	if (length == 0)
		return;
	auto rest = d.send_chunks(l, lane, offset, length);
	d.add(l, lane, offset + length - rest, rest);
	d.finish(l, lane, false);
	lane_counters::bump(l.counters.persists);
	lane_counters::bump(l.counters.bytes_persisted, length);
}

void data_path::drain_post(unsigned lane)
{
	auto &d = *impl_;
	auto &l = d.use(lane);
	d.check_broken(*l.conn);
	if (!l.batch_entries)
		return;
	d.finish(l, lane, false);
	lane_counters::bump(l.counters.drains);
}

void data_path::complete(unsigned lane)
{
	auto &d = *impl_;
	auto &l = d.lanes[lane];
	if (l.posted)
		d.wait(l);
	else
		d.check_broken(*l.conn);
}

void data_path::drain(unsigned lane)
{
	auto &d = *impl_;
	auto &l = d.use(lane);
	d.check_broken(*l.conn);
	if (!l.batch_entries)
		return;
	auto start = std::chrono::steady_clock::now();
	d.finish(l, lane);
	lane_counters::bump(l.counters.drains);
	l.counters.round_trip(start);
}

void data_path::deep_persist(std::uint64_t offset, std::uint64_t length, unsigned lane)
{
	auto &d = *impl_;
	auto &l = d.use(lane);
	auto start = std::chrono::steady_clock::now();
	// As in add(): older inline bytes under this write must not land after it.
	if (l.batch_inline && offset < l.inline_hi && offset + length > l.inline_lo)
		d.send_batch(l, lane);
	if (length)
		d.write(l, offset, length, !d.saw, d.pool + offset, d.pool_mr->desc());
	if (length && !d.saw)
		d.wait(l);
	// Only the header is sent: a batch of relaxed flushes behind it in the slot stays intact.
	d.send_request(l, {ln::op::deep_persist, lane, offset, length, l.next_cookie()}, 0);
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
		d.read_back(l, buf, offset, length, nullptr);
	} else if (p >= d.pool && p + length <= d.pool + d.pool_size) {
		d.read_back(l, buf, offset, length, d.pool_mr->desc());
	} else {
		throw rpmem::error(ENOTSUP, fmt::format("{}: provider {} needs registered buffers: "
		                                        "read into memory inside the pool",
		                                        d.host, d.fabric.provider));
	}
	lane_counters::bump(l.counters.reads);
	lane_counters::bump(l.counters.bytes_read, length);
	l.counters.round_trip(start);
}

lane_stats data_path::stats(unsigned lane) const
{
	auto &d = *impl_;
	lane_stats total;
	for (unsigned i = 0; i < d.nlanes; ++i) {
		if (lane < d.nlanes && i != lane)
			continue;
		const auto &c = d.lanes[i].counters;
		lane_stats one;
		one.persists = c.persists.load(std::memory_order_relaxed);
		one.flushes = c.flushes.load(std::memory_order_relaxed);
		one.drains = c.drains.load(std::memory_order_relaxed);
		one.reads = c.reads.load(std::memory_order_relaxed);
		one.deep_persists = c.deep_persists.load(std::memory_order_relaxed);
		one.bytes_persisted = c.bytes_persisted.load(std::memory_order_relaxed);
		one.bytes_read = c.bytes_read.load(std::memory_order_relaxed);
		one.round_trips = c.round_trips.load(std::memory_order_relaxed);
		for (std::size_t b = 0; b < one.latency_ns_log2.size(); ++b)
			one.latency_ns_log2[b] = c.latency[b].load(std::memory_order_relaxed);
		total += one;
	}
	return total;
}

lane_stats &lane_stats::operator+=(const lane_stats &o)
{
	persists += o.persists;
	flushes += o.flushes;
	drains += o.drains;
	reads += o.reads;
	deep_persists += o.deep_persists;
	bytes_persisted += o.bytes_persisted;
	bytes_read += o.bytes_read;
	round_trips += o.round_trips;
	for (std::size_t b = 0; b < latency_ns_log2.size(); ++b)
		latency_ns_log2[b] += o.latency_ns_log2[b];
	return *this;
}

std::uint64_t lane_stats::quantile_ns(double q) const
{
	std::uint64_t want = static_cast<std::uint64_t>(q * double(round_trips));
	std::uint64_t seen = 0;
	for (std::size_t b = 0; b < latency_ns_log2.size(); ++b) {
		seen += latency_ns_log2[b];
		if (seen > want || (seen == round_trips && seen))
			return std::uint64_t(2) << b;
	}
	return 0;
}

void data_path::shutdown()
{
	impl_->shutdown();
}

} // namespace rpmem::client
