// SPDX-License-Identifier: BSD-3-Clause
// The fabric target: one passive endpoint on the address SSH arrived on, a handful of
// connections (each presenting the session's secret), and worker threads (target_worker.cpp)
// that execute lane requests. This file: the setup, in named steps, the accept thread, stop.
#include "fabric_target.hpp"
#include "target_listen.hpp"

#include "log.hpp"

#include "fabric/pinning.hpp"
#include "lane/lane_msg.hpp"
#include "rpmem/error.hpp"

#include <rdma/fi_endpoint.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <netdb.h>
#include <pthread.h>
#include <sstream>
#include <sys/random.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace rpmemd
{

using namespace std::chrono_literals;

namespace fabric_detail
{

namespace
{

// Payload bytes of one lane request: a 4 KiB persist inline plus room for a few more entries.
inline constexpr std::uint32_t default_inline_max = 4096 + 256;
// A session of few lanes gets larger requests, within the same receive memory as 16 lanes of
// the default: an asynchronous writer (one lane) sends a round of small persists as one
// request, so a round trip carries up to 64 KiB of them instead of 4 KiB.
inline constexpr std::uint32_t large_inline_max = (64u << 10) + 256;
inline constexpr std::uint32_t inline_budget_lanes = 16;

std::uint32_t inline_max_for(std::uint32_t nlanes)
{
	const std::uint64_t share =
	    std::uint64_t(default_inline_max) * inline_budget_lanes / nlanes;
	return static_cast<std::uint32_t>(
	    std::clamp<std::uint64_t>(share, default_inline_max, large_inline_max));
}
inline constexpr auto accept_timeout = 30s;

unsigned cpu_count()
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? static_cast<unsigned>(n) : 1;
}

/** The persistence method to announce (target_method.hpp); why APM, asked for, is not. */
ctl::persist_method announced_method(const target_params &p, const fab::granted &g)
{
	const auto choice = choose_method(p.methods, g.provider, g.rma_pmem);
	if (!choice.apm_refused.empty())
		log_notice(
		    "persist-apm is set, but APM is not offered for this pool: {}; {} instead",
		    choice.apm_refused, ctl::to_string(choice.method));
	return choice.method;
}

/** Threads of this process right now (the provider's own included), from /proc/self/task. */
unsigned thread_count()
{
	std::error_code ec;
	unsigned n = 0;
	for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
	     !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
		++n;
	return n;
}

} // namespace

fabric_target::fabric_target(const target_params &p)
    : region_(*p.region), wait_(p.wait), stall_timeout_(p.stall_timeout)
{
	nlanes_ = std::clamp<std::uint32_t>(p.nlanes, 1, max_lanes);
	listen(p);
	const ctl::persist_method method = announced_method(p, domain_->granted());
	allocate(size(p, method));
	announce(p, method);
	start_threads();
}

/** Opens the domain and starts listening: connection requests wait in the EQ until the accept
 *  thread starts. */
void fabric_target::listen(const target_params &p)
{
	// Kept for the target's lifetime: the sockets provider's listener refers to it.
	listen_info_ = listen_info(p.address, p.providers, p.mr_mode);
	const auto &fi = listen_info_;
	domain_ = std::make_unique<fab::fabric_domain>(fi);
	const auto &g = domain_->granted();
	if (g.inject_size < rpmem::lane::response_size)
		throw rpmem::error(ENOTSUP, fmt::format("provider {} cannot inject a {}-byte "
		                                        "response (inject_size {})",
		                                        g.provider, rpmem::lane::response_size,
		                                        g.inject_size));
	inline_max_ = std::min<std::uint32_t>(
	    inline_max_for(nlanes_),
	    static_cast<std::uint32_t>(std::min<std::size_t>(
	        g.max_msg_size - rpmem::lane::request_header_size, UINT32_MAX)));
	slot_size_ = rpmem::lane::request_header_size + inline_max_;
	limits_ = {nlanes_, inline_max_};
	eq_ = std::make_unique<fab::eq>(*domain_);
	if (p.ports) {
		fab::request req;
		req.provider = g.provider;
		req.mr = p.mr_mode;
		pep_ = listen_in_range(*domain_, *eq_, p.address, req, *p.ports, port_info_);
		return;
	}
	pep_ = std::make_unique<fab::passive_endpoint>(*domain_, fi);
	pep_->bind(*eq_);
	pep_->listen();
}

/** Connections, workers and queue depths (target_plan.hpp). Sized once the listener runs:
 *  sockets starts progress threads with the domain and the listener, and they count against
 *  the daemon's thread budget. */
target_plan fabric_target::size(const target_params &p, ctl::persist_method method)
{
	const auto &g = domain_->granted();
	target_plan_input in;
	in.lanes = p.nlanes;
	in.cores = cpu_count();
	in.nthreads = p.nthreads;
	in.ep_cnt = g.ep_cnt;
	in.cq_cnt = g.cq_cnt;
	in.threads_running = thread_count();
	// The client's rule (granted::announce_writes_pays), on the same provider: only then do
	// APM's and commit's writes bring completions too.
	in.announced_writes =
	    (method == ctl::persist_method::commit || method == ctl::persist_method::apm) &&
	    g.announce_writes_pays();
	target_plan plan = plan_target(in);
	// Ask the provider for the queue depths the plan needs and size for what it grants
	// (queue_sizing.hpp); fewer receives than asked lower the queue depth.
	fab::request req;
	req.provider = g.provider;
	req.mr = p.mr_mode;
	req.tx_size = plan.asked.tx_size;
	req.rx_size = plan.asked.rx_size;
	const auto sized = fab::info::for_listen(p.address, req).granted();
	in.granted = {sized.tx_size, sized.rx_size};
	in.posted_recv_limit = sized.posted_recv_limit();
	plan = plan_target(in);
	endpoint_sizes_ = plan.sizes;
	nendpoints_ = plan.endpoints;
	nworkers_ = plan.workers;
	queue_depth_ = plan.queue_depth;
	return plan;
}

/** The pool's registration, a completion queue per worker, the receive buffers, the
 *  connection slots and the session secret. */
void fabric_target::allocate(const target_plan &plan)
{
	const auto pins = fab::current_pin_limits(domain_->provider());
	if (auto why = fab::pinning_refusal(pins, region_.size(),
	                                    fmt::format("the {}-byte pool", region_.size())))
		throw rpmem::error(ENOMEM, *why);
	// Pinning takes time in proportion (seconds per tens of GiB), and the client's create or
	// open waits for it: say how long it took.
	const auto begin = std::chrono::steady_clock::now();
	pool_mr_ = std::make_unique<fab::memory_region>(*domain_, region_.base(), region_.size(),
	                                                FI_REMOTE_READ | FI_REMOTE_WRITE);
	if (pins.provider_pins && !pins.on_demand)
		log_info("registered (pinned) the {}-byte pool in {} ms", region_.size(),
		         std::chrono::duration_cast<std::chrono::milliseconds>(
		             std::chrono::steady_clock::now() - begin)
		             .count());
	cq_size_ = plan.cq_size;
	for (unsigned w = 0; w < nworkers_; ++w)
		cqs_.push_back(std::make_unique<fab::cq>(
		    *domain_, fab::cq_options{plan.cq_size, fab::cq_waiter(wait_).needs()}));
	buffers_ = fab::page_buffer(std::size_t(nendpoints_) * queue_depth_ * slot_size_);
	recv_mr_ = std::make_unique<fab::memory_region>(*domain_, buffers_.data(), buffers_.size(),
	                                                FI_RECV);
	for (std::uint32_t i = 0; i < nendpoints_; ++i) {
		conns_.push_back(std::make_unique<connection>());
		conns_.back()->index = i;
		conns_.back()->worker = i % nworkers_;
	}
	if (getrandom(params_.secret.data(), params_.secret.size(), 0) !=
	    static_cast<ssize_t>(params_.secret.size()))
		throw rpmem::error(errno, "getrandom failed: cannot make the session secret");
}

/** Guards the port against silent connections and fills in what the client is told. */
void fabric_target::announce(const target_params &p, ctl::persist_method method)
{
	const auto &g = domain_->granted();
	auto name = pep_->name();
	try {
		guard_ = std::make_unique<port_guard>(
		    name.port, guard_policy{p.auth_timeout, 64, rpmem::lane::conn_data_size});
	} catch (const rpmem::error &e) {
		log_warn("silent connections to the fabric port will not be closed: {}",
		         e.message());
	}
	params_.provider = g.provider;
	params_.address = p.address;
	params_.port = name.port;
	params_.rkey = pool_mr_->key();
	params_.raddr = pool_mr_->remote_base();
	params_.mr_mode = static_cast<std::uint64_t>(g.mr_mode);
	params_.nlanes = nlanes_;
	params_.nendpoints = nendpoints_;
	params_.inline_max = inline_max_;
	params_.queue_depth = queue_depth_;
	params_.method = method;
	log_info("fabric target on {}:{}: {}; {} lanes, {} connections, queue depth {} (tx {} "
	         "rx {} each), {} workers ({} waits), CQs of {}; {} threads before starting "
	         "them",
	         p.address, name.port, g.describe(), nlanes_, nendpoints_, queue_depth_,
	         endpoint_sizes_.tx_size, endpoint_sizes_.rx_size, nworkers_,
	         rpmem::fabric::to_string(wait_), cq_size_, thread_count());
}

void fabric_target::start_threads()
{
	// Named, so ps -L, top -H and debuggers tell the daemon's threads apart.
	accept_thread_ = std::thread([this] {
		pthread_setname_np(pthread_self(), "rpmemd-accept");
		accept_loop();
	});
	for (unsigned w = 0; w < nworkers_; ++w)
		workers_.emplace_back([this, w] {
			auto tname = fmt::format("rpmemd-w{}", w);
			pthread_setname_np(pthread_self(), tname.c_str());
			worker_loop(w);
		});
}

void fabric_target::stop()
{
	std::lock_guard lock(stop_mutex_);
	if (stopped_)
		return;
	stopped_ = true;
	stop_.store(true);
	if (fab::cq_waiter(wait_).needs() != fab::wait_object::none)
		for (auto &cq : cqs_)
			cq->signal();
	// Wake the accept thread now rather than at its next timeout.
	try {
		eq_->wake();
	} catch (const rpmem::error &e) {
		log_warn("could not wake the fabric event queue ({}); the accept thread "
		         "stops at its next timeout",
		         e.message());
	}
	for (auto &t : workers_)
		t.join();
	if (accept_thread_.joinable())
		accept_thread_.join();
	for (auto &c : conns_) {
		if (c->ep && c->connected.load()) {
			try {
				c->ep->shutdown();
			} catch (const rpmem::error &) {
				// The peer is gone already; nothing to tell it.
			}
		}
		c->ep.reset();
	}
	pool_mr_.reset();
}

void fabric_target::accept_loop()
{
	auto deadline = std::chrono::steady_clock::now() + accept_timeout;
	while (!stop_.load()) {
		std::optional<fab::eq_event> ev;
		try {
			// Short reads: the guard sweeps between them (tcp accepts
			// connections inside this call).
			ev = eq_->read(100ms);
		} catch (const rpmem::error &e) {
			log_err("fabric event queue failed: {}", e.message());
			failed_ = true;
			return;
		}
		if (ev)
			handle_event(*ev);
		sweep();
		if (!ev && !all_connected_ && std::chrono::steady_clock::now() > deadline) {
			log_err("the client did not connect all {} fabric connections within "
			        "{} s ({} connected; {} connection(s) to the port closed for "
			        "sending no request)",
			        nendpoints_, accept_timeout.count(), nconnected_.load(),
			        silent_closed_);
			failed_ = true;
			return;
		}
	}
}

/** Lets the guard close silent connections to the port, at most every 100 ms. */
void fabric_target::sweep()
{
	auto now = std::chrono::steady_clock::now();
	if (!guard_ || now - last_sweep_ < 100ms)
		return;
	last_sweep_ = now;
	auto r = guard_->sweep();
	silent_closed_ += r.closed_silent.size() + r.closed_over_cap.size();
}

connection *fabric_target::find(fid_t fid)
{
	for (auto &c : conns_)
		if (c->ep && c->ep->fid() == fid)
			return c.get();
	return nullptr;
}

void fabric_target::handle_event(fab::eq_event &ev)
{
	if (ev.is_error()) {
		log_warn("fabric connection event error: {}", ev.err_text);
		if (auto *c = find(ev.fid); c && c->connected)
			failed_ = true;
		return;
	}
	switch (ev.type) {
	case FI_CONNREQ:
		on_connreq(ev);
		break;
	case FI_CONNECTED:
		if (auto *c = find(ev.fid)) {
			c->connected = true;
			if (++nconnected_ == nendpoints_) {
				all_connected_ = true;
				last_activity_ = now_ns();
				close_listener();
				log_info("all {} fabric connections established, the listener "
				         "closed; {} threads",
				         nendpoints_, thread_count());
			}
		}
		break;
	case FI_SHUTDOWN:
		if (auto *c = find(ev.fid)) {
			if (!c->closed.exchange(true) && !stop_)
				log_warn("fabric connection {} closed by the client", c->index);
			failed_ = true;
		}
		break;
	default:
		break;
	}
}

/** Nothing more can connect once every connection is up: the port stops listening (a connection
 *  attempt is refused by the kernel) and the guard has nothing left to watch. On verbs this is
 *  what bounds unauthenticated attempts: rdma_cm has no socket for the guard, and libfabric 1.17
 *  leaks an rdma_cm id per request it rejects (verbs_cm.c, fixed in 1.21). */
void fabric_target::close_listener()
{
	pep_.reset();
	guard_.reset();
}

/** Accepts a connection only with the session's secret and an unused endpoint index. */
std::string fabric_target::refusal(const rpmem::lane::conn_data *cd, std::size_t size) const
{
	if (!cd)
		return fmt::format("{} bytes of connection data instead of {}", size,
		                   rpmem::lane::conn_data_size);
	unsigned char diff = 0; // constant time: no timing oracle on the secret
	for (std::size_t i = 0; i < cd->secret.size(); ++i)
		diff |= static_cast<unsigned char>(cd->secret[i] ^ params_.secret[i]);
	if (diff)
		return "wrong session secret";
	if (cd->endpoint >= nendpoints_)
		return fmt::format("endpoint index {} out of range", cd->endpoint);
	if (conns_[cd->endpoint]->ep)
		return fmt::format("endpoint {} is already connected", cd->endpoint);
	return {};
}

void fabric_target::on_connreq(fab::eq_event &ev)
{
	if (!pep_) {
		// Queued before the listener closed: every connection is up, nothing to accept.
		log_warn("a fabric connection request arrived after every connection was up: "
		         "ignored");
		return;
	}
	// Some transports pad private data (RDMA CM): only the first bytes are ours.
	auto cd = rpmem::lane::decode_conn_data(std::span<const std::uint8_t>(ev.data).first(
	    std::min(ev.data.size(), rpmem::lane::conn_data_size)));
	const std::string why = refusal(cd ? &*cd : nullptr, ev.data.size());
	if (!why.empty()) {
		std::string peer =
		    describe_address(ev.conn_info->dest_addr, ev.conn_info->dest_addrlen);
		if (guard_)
			guard_->refused(peer, why);
		else
			log_warn("refused a fabric connection request from {}: {}", peer, why);
		try {
			pep_->reject(ev.conn_info, {});
		} catch (const rpmem::error &e) {
			log_warn("rejecting it failed: {}", e.message());
		}
		return;
	}
	auto &c = *conns_[cd->endpoint];
	try {
		// The depths the completion queues were sized for (size()), not the listener's.
		ev.conn_info->tx_attr->size = endpoint_sizes_.tx_size;
		ev.conn_info->rx_attr->size = endpoint_sizes_.rx_size;
		c.ep = std::make_unique<fab::endpoint>(*domain_, ev.conn_info);
		c.ep->bind(*eq_);
		// Responses are injected (no completion); receives complete as usual.
		c.ep->bind(*cqs_[c.worker], FI_TRANSMIT | FI_SELECTIVE_COMPLETION);
		c.ep->bind(*cqs_[c.worker], FI_RECV);
		c.ep->enable();
		c.slots.resize(queue_depth_);
		c.live.store(c.ep.get(), std::memory_order_release);
		for (std::uint32_t i = 0; i < queue_depth_; ++i) {
			c.slots[i].conn = &c;
			c.slots[i].index = i;
			if (!post_recv(*c.ep, c, i))
				throw rpmem::error(EAGAIN, "the provider took no more receives");
		}
		c.ep->accept({});
	} catch (const rpmem::error &e) {
		log_err("accepting fabric connection {} failed: {}", cd->endpoint, e.message());
		failed_ = true;
		// No half-made endpoint stays behind: workers stop seeing it, and the index
		// is free again.
		c.live.store(nullptr);
		c.ep.reset();
	}
}

} // namespace fabric_detail

std::unique_ptr<target> start_target(const target_params &params)
{
	return std::make_unique<fabric_detail::fabric_target>(params);
}

} // namespace rpmemd
