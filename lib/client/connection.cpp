// SPDX-License-Identifier: BSD-3-Clause
#include "client/connection.hpp"

#include "client/lane_map.hpp"
#include "client/log.hpp"
#include "lane/lane_msg.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <exception>

namespace rpmem::client
{

namespace fab = rpmem::fabric;
namespace ln = rpmem::lane;
using namespace std::chrono_literals;

namespace
{

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

void path_health::fail(int err, const std::string &why)
{
	{
		std::lock_guard lock(mutex_);
		if (!broken_.load(std::memory_order_relaxed)) {
			why_ = why;
			err_ = err;
			broken_.store(true, std::memory_order_release);
		}
	}
	for (auto *c : conns_)
		c->wake_all();
}

void path_health::check(const std::string &host) const
{
	if (!broken())
		return;
	std::lock_guard lock(mutex_);
	if (err_ == ETIMEDOUT)
		throw rpmem::error(ETIMEDOUT, fmt::format("{}: {}", host, why_));
	throw rpmem::error(
	    err_ ? err_ : ECONNRESET,
	    fmt::format("{}: the fabric connection to rpmemd is lost: {}", host, why_));
}

void shutdown_watch::poll()
{
	std::unique_lock lock(mutex_, std::try_to_lock);
	if (!lock)
		return;
	while (auto ev = eq_.read(0ms)) {
		if (ev->is_error())
			health_.fail(ECONNRESET, ev->err_text);
		else if (ev->type == FI_SHUTDOWN)
			health_.fail(ECONNRESET, "rpmemd shut the connection down");
	}
}

std::string liveness::timeout_reason(bool capped) const
{
	return capped ? fmt::format("no completion from rpmemd for {} ms (12 x RPMEM_TIMEOUT) "
	                            "although it answers its keep-alive: the fabric path to "
	                            "it may be down, or its storage stuck",
	                            cap().count())
	              : fmt::format("rpmemd is not answering: no completion and no keep-alive "
	                            "answer for {} ms (RPMEM_TIMEOUT); check the host and the "
	                            "link",
	                            op_timeout.count());
}

bool liveness::expired(std::chrono::steady_clock::time_point &alive,
                       std::chrono::steady_clock::time_point progressed,
                       std::chrono::steady_clock::time_point now) const
{
	if (now - alive <= op_timeout)
		return false;
	if (heard && now - progressed <= cap())
		alive = std::max(alive, heard());
	return now - alive > op_timeout;
}

connection::connection(const fab::fabric_domain &domain, const fab::info &fi, const fab::eq &eq,
                       const connection_params &p, path_health &health, shutdown_watch &watch,
                       const liveness &live, std::span<lane_sync *const> lanes,
                       std::uint32_t connections, std::uint8_t *resp_buf, void *resp_desc)
    : params_(p), health_(health), watch_(watch), live_(live), lanes_(lanes),
      connections_(connections), resp_buf_(resp_buf), resp_desc_(resp_desc), waiter_(p.wait)
{
	cq_ = std::make_unique<fab::cq>(domain, fab::cq_options{p.cq_size, waiter_.needs()});
	ep_ = std::make_unique<fab::endpoint>(domain, fi);
	ep_->bind(eq);
	// Transmits complete silently unless asked (FI_COMPLETION); receives always do.
	ep_->bind(*cq_, FI_TRANSMIT | FI_SELECTIVE_COMPLETION);
	ep_->bind(*cq_, FI_RECV);
	ep_->enable();
	recv_ctx_.resize(p.queue_depth);
	for (std::uint32_t s = 0; s < p.queue_depth; ++s)
		recv_ctx_[s] = {{}, ctx_kind::recv, s};
	credits_ = static_cast<std::int32_t>(p.queue_depth);
}

void connection::post_receives()
{
	for (std::uint32_t s = 0; s < params_.queue_depth; ++s)
		repost(s);
}

void connection::repost(std::uint32_t slot)
{
	auto *buf = resp_buf_ + std::size_t(slot) * ln::response_size;
	post([&] { return ep_->recv(buf, ln::response_size, resp_desc_, &recv_ctx_[slot]); });
}

void connection::wake_all()
{
	events_.fetch_add(1);
	events_.notify_all();
	credits_.fetch_add(1 << 20);
	credits_.notify_all();
}

void connection::dispatch(const fab::cq_entry &e)
{
	auto *ctx = static_cast<op_context *>(e.op_context);
	if (ctx->kind == ctx_kind::silent)
		return; // providers may report unsignalled writes anyway
	if (ctx->kind == ctx_kind::lane_op) {
		lanes_[ctx->index]->outstanding.fetch_sub(1, std::memory_order_acq_rel);
		return;
	}
	// A response: find its lane, then give the receive buffer back to the provider.
	auto *buf = resp_buf_ + std::size_t(ctx->index) * ln::response_size;
	auto resp = ln::decode_response({buf, std::min<std::size_t>(e.len, ln::response_size)});
	repost(ctx->index);
	if (params_.need_credits) {
		credits_.fetch_add(1, std::memory_order_release);
		credits_.notify_one();
	}
	lane_sync *l = resp && resp->lane < lanes_.size() &&
	                       connection_of(resp->lane, connections_) == params_.index
	                   ? lanes_[resp->lane]
	                   : nullptr;
	if (!l || resp->cookie < l->first_cookie.load(std::memory_order_acquire) ||
	    resp->cookie > l->cookie.load(std::memory_order_acquire)) {
		health_.fail(
		    EPROTO, resp
		                ? fmt::format("rpmemd answered lane {} cookie {}, which no request "
		                              "on connection {} expects",
		                              resp->lane, resp->cookie, params_.index)
		                : fmt::format("rpmemd sent a {}-byte response", e.len));
		return;
	}
	if (resp->err)
		l->err.store(resp->err, std::memory_order_relaxed);
	l->outstanding.fetch_sub(1, std::memory_order_acq_rel);
}

void connection::on_error(const fab::cq_error &e)
{
	auto *ctx = static_cast<op_context *>(e.op_context);
	int err = connection_lost(e.err) || !ctx ? ECONNRESET : EIO;
	if (ctx && ctx->kind == ctx_kind::lane_op && err == EIO) {
		log(2, "{}: fabric connection {}: lane {}: completion error: {}", params_.host,
		    params_.index, ctx->index, e.text);
		lanes_[ctx->index]->err = EIO;
		lanes_[ctx->index]->outstanding.fetch_sub(1);
		return;
	}
	// Anything else (a receive for rpmemd's responses, a lost unsignalled write): nothing
	// after it can be trusted, so the connection is lost, whatever the provider called the
	// error (sockets reports a peer's death on a posted receive as EIO): ECONNRESET.
	if (!health_.broken())
		log(2, "{}: fabric connection {}: completion error: {}", params_.host,
		    params_.index, e.text);
	health_.fail(ECONNRESET, e.text);
}

/** Reaps completions once (block: wait up to a bounded time). Caller holds cq_mutex_. */
void connection::progress(bool block, const lane_sync *mine)
{
	std::array<fab::cq_entry, 16> entries{};
	fab::cq_result res = block ? waiter_.wait(*cq_, entries, 100ms) : cq_->read(entries);
	if (res.error)
		on_error(*res.error);
	bool others = false;
	for (std::size_t i = 0; i < res.count; ++i) {
		dispatch(entries[i]);
		auto *ctx = static_cast<op_context *>(entries[i].op_context);
		others |= ctx->kind == ctx_kind::recv || !mine || lanes_[ctx->index] != mine;
	}
	if (others) {
		events_.fetch_add(1, std::memory_order_release);
		events_.notify_all();
	}
	if (res.count == 0 && !res.error)
		watch_.poll();
}

/** Runs fn as the leader (the caller took cq_mutex_), then lets the completion queue go and
 * wakes the followers: after the unlock, or one could miss both the lock and the wake-up. */
template <class Fn> void connection::lead(Fn &&fn)
{
	std::exception_ptr failure;
	try {
		fn();
	} catch (...) {
		failure = std::current_exception();
	}
	cq_mutex_.unlock();
	events_.fetch_add(1, std::memory_order_release);
	events_.notify_all();
	if (failure)
		std::rethrow_exception(failure);
}

void connection::wait(lane_sync &l, std::uint32_t until)
{
	// The last sign of life: the wait's start, a completion of this lane, or (live.heard)
	// the daemon's latest keep-alive answer. Silence for op_timeout ends the wait. Keep-alive
	// answers alone stretch it to live.cap() at most: a daemon whose control channel answers
	// while the fabric path to it is cut (RDMA and SSH on different networks) must not keep
	// a caller waiting for ever.
	auto alive = std::chrono::steady_clock::now();
	auto progressed = alive; // the last completion of this lane
	auto left = l.outstanding.load(std::memory_order_acquire);
	while (l.outstanding.load(std::memory_order_acquire) > until) {
		check_broken();
		auto seen = events_.load(std::memory_order_acquire);
		if (l.outstanding.load(std::memory_order_acquire) <= until)
			break;
		if (!cq_mutex_.try_lock()) {
			events_.wait(seen, std::memory_order_acquire);
			continue;
		}
		lead([&] {
			while (l.outstanding.load(std::memory_order_acquire) > until &&
			       !health_.broken()) {
				progress(true, &l);
				auto now = std::chrono::steady_clock::now();
				auto o = l.outstanding.load(std::memory_order_acquire);
				if (o != left) {
					left = o;
					alive = progressed = now;
				}
				if (o <= until || !live_.expired(alive, progressed, now))
					continue;
				health_.fail(ETIMEDOUT,
				             live_.timeout_reason(now - progressed > live_.cap()));
			}
		});
	}
	check_broken();
	if (auto err = l.err.exchange(0))
		throw rpmem::error(static_cast<int>(err),
		                   fmt::format("{}: rpmemd refused the request: {}", params_.host,
		                               std::strerror(static_cast<int>(err))));
}

void connection::refused(std::optional<refusal> &r)
{
	const auto now = std::chrono::steady_clock::now();
	const auto seen = events_.load(std::memory_order_acquire);
	if (!r || r->events != seen) {
		r = refusal{seen, now, now}; // first refusal, or something completed since
		return;
	}
	if (!live_.expired(r->alive, r->progressed, now))
		return;
	health_.fail(ETIMEDOUT,
	             fmt::format("the provider refused to take an operation on connection {} "
	                         "(FI_EAGAIN: its queue full) while nothing completed: {}",
	                         params_.index,
	                         live_.timeout_reason(now - r->progressed > live_.cap())));
}

void connection::take_credit()
{
	if (!params_.need_credits)
		return;
	for (;;) {
		check_broken();
		auto v = credits_.load(std::memory_order_acquire);
		if (v > 0 && credits_.compare_exchange_weak(v, v - 1))
			return;
		if (v > 0)
			continue;
		// Someone must reap completions for credits to come back.
		if (cq_mutex_.try_lock())
			lead([&] { progress(true, nullptr); });
		else
			credits_.wait(v);
	}
}

} // namespace rpmem::client
