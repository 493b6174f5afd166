// SPDX-License-Identifier: BSD-3-Clause
// The fabric target's workers: each blocks (or polls) on its completion queue, executes the
// lane requests that arrive (lane_exec) and answers each with an injected 16-byte response.
#include "fabric_target.hpp"

#include "log.hpp"

#include "lane/lane_msg.hpp"
#include "rpmem/error.hpp"

#include <rdma/fi_endpoint.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

namespace rpmemd::fabric_detail
{

using namespace std::chrono_literals;

std::uint8_t *fabric_target::slot_buffer(const connection &c, std::uint32_t slot)
{
	return buffers_.data() + (std::size_t(c.index) * queue_depth_ + slot) * slot_size_;
}

template <class Post> bool fabric_target::post_bounded(connection &c, Post &&op, const char *what)
{
	auto &cq = *cqs_[c.worker];
	std::optional<std::chrono::steady_clock::time_point> since;
	while (op() == fab::post_status::again) {
		// The queue is full: drive the provider (tcp moves data only inside its calls;
		// verbs returns a transmit credit when it reads the completion) and retry, for as
		// long as the session lasts and the provider takes something within stall_timeout.
		const auto now = std::chrono::steady_clock::now();
		if (!since)
			since = now;
		if (stop_.load(std::memory_order_relaxed))
			return false;
		if (now - *since > stall_timeout_) {
			if (!c.closed.exchange(true))
				log_err(
				    "connection {}: the provider refused {} (FI_EAGAIN: its queue "
				    "full) for {} ms: the client takes nothing; closing the "
				    "session's fabric target",
				    c.index, what, stall_timeout_.count());
			failed_ = true;
			return false;
		}
		cq.progress();
		std::this_thread::yield();
	}
	return true;
}

bool fabric_target::post_recv(fab::endpoint &ep, connection &c, std::uint32_t slot)
{
	return post_bounded(
	    c,
	    [&] {
		    return ep.recv(slot_buffer(c, slot), slot_size_, recv_mr_->desc(),
		                   &c.slots[slot]);
	    },
	    "a receive");
}

void fabric_target::worker_loop(unsigned w)
{
	auto &cq = *cqs_[w];
	// Adaptive: after a request, poll for the next one while that pays and a core is
	// free (a client persisting back to back sends it within microseconds).
	fab::cq_waiter waiter(wait_);
	std::array<fab::cq_entry, 16> entries{};
	while (!stop_.load(std::memory_order_relaxed)) {
		fab::cq_result res;
		try {
			res = waiter.wait(cq, entries, 500ms);
		} catch (const rpmem::error &e) {
			log_err("worker {}: completion queue failed: {}", w, e.message());
			failed_ = true;
			return;
		}
		if (res.error) {
			on_cq_error(*res.error);
			continue;
		}
		for (std::size_t i = 0; i < res.count; ++i)
			serve(entries[i]);
	}
}

void fabric_target::on_cq_error(const fab::cq_error &e)
{
	if (stop_)
		return;
	auto *slot = static_cast<recv_slot *>(e.op_context);
	if (slot && slot->conn->closed.exchange(true))
		return; // one line per connection, not one per posted receive
	log_warn("fabric connection {}: completion error: {}", slot ? slot->conn->index : 0,
	         e.text);
	failed_ = true;
}

served_counts fabric_target::served() const
{
	served_counts c;
	c.requests = requests_.load(std::memory_order_relaxed);
	c.refused = refused_.load(std::memory_order_relaxed);
	c.bytes = bytes_.load(std::memory_order_relaxed);
	for (std::size_t b = 0; b < c.service_ns_log2.size(); ++b)
		c.service_ns_log2[b] = service_ns_log2_[b].load(std::memory_order_relaxed);
	return c;
}

void fabric_target::serve(const fab::cq_entry &entry)
{
	if (!(entry.flags & FI_RECV))
		return;
	auto *slot = static_cast<recv_slot *>(entry.op_context);
	auto &c = *slot->conn;
	auto *ep = c.live.load(std::memory_order_acquire);
	auto *buf = slot_buffer(c, slot->index);
	std::span<const std::uint8_t> msg(buf, std::min<std::size_t>(entry.len, slot_size_));
	rpmem::lane::request req;
	std::uint64_t persisted = 0;
	const std::int64_t begin = now_ns();
	int err = execute(msg, limits_, region_, &req, &persisted);
	const std::int64_t end = now_ns();
	requests_.fetch_add(1, std::memory_order_relaxed);
	last_activity_.store(end, std::memory_order_relaxed);
	bytes_.fetch_add(persisted, std::memory_order_relaxed);
	if (err)
		refused_.fetch_add(1, std::memory_order_relaxed);
	const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(1, end - begin));
	service_ns_log2_[rpmem::pool_stats::latency_bucket(ns)].fetch_add(
	    1, std::memory_order_relaxed);
	if (err == EPROTO) {
		// Not a lane request at all: this peer cannot be trusted any more.
		log_err("connection {}: a {}-byte message that is not a lane request: "
		        "closing the connection (no further request on it is served)",
		        c.index, entry.len);
		c.closed = true;
		failed_ = true;
		try {
			ep->shutdown();
		} catch (const rpmem::error &) {
		}
		return;
	}
	if (err)
		log_warn("connection {}: lane {} request refused: {} (offset {}, length {})",
		         c.index, req.lane, std::strerror(err), req.offset, req.length);
	std::uint8_t resp[rpmem::lane::response_size];
	rpmem::lane::encode(
	    rpmem::lane::response{req.lane, static_cast<std::uint32_t>(err), req.cookie}, resp);
	try {
		// Re-post before answering: the client may send again as soon as it sees the
		// reply.
		if (!post_recv(*ep, c, slot->index))
			return;
		post_bounded(
		    c, [&] { return ep->inject(resp, sizeof(resp)); }, "a response");
	} catch (const rpmem::error &e) {
		log_err("connection {}: sending a response failed: {}", c.index, e.message());
		failed_ = true;
	}
}

} // namespace rpmemd::fabric_detail
