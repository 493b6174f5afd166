// SPDX-License-Identifier: BSD-3-Clause
// One fabric connection of a data path: its endpoint and completion queue, the receives posted
// for rpmemd's responses, credits for rpmemd's request queue, and the waits of the lanes that
// travel on it. Completions are reaped by whichever waiting thread holds the completion queue
// (leader/follower): it dispatches them to their lanes and wakes the others.
#pragma once

#include "fabric/cq.hpp"
#include "fabric/endpoint.hpp"
#include "fabric/eq.hpp"
#include "fabric/fabric.hpp"
#include "fabric/info.hpp"
#include "fabric/waiter.hpp"
#include "rpmem/error.hpp"

#include <rdma/fabric.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace rpmem::client
{

class connection;

// lane_op: a signalled operation a lane waits for; recv: a response buffer; silent: an
// unsignalled write, which only ever completes with an error.
enum class ctx_kind : std::uint8_t { lane_op, recv, silent };

/** Every posted operation's context: libfabric's FI_CONTEXT scratch space comes first. */
struct op_context {
	fi_context fctx;
	ctx_kind kind;
	std::uint32_t index; // lane number, or receive slot
};

/** What a lane shares with whichever thread reaps its connection's completions. */
struct alignas(64) lane_sync {
	op_context ctx{{}, ctx_kind::lane_op, 0};
	std::atomic<std::uint32_t> outstanding{0}; // completions still expected
	std::atomic<std::uint32_t> err{0};         // an errno rpmemd or the provider reported
	// Responses for cookies [first_cookie, cookie] are the lane's: the lane's thread writes
	// them, the thread reaping its connection reads them.
	std::atomic<std::uint64_t> cookie{0};
	std::atomic<std::uint64_t> first_cookie{0};

	std::uint64_t next_cookie() { return cookie.fetch_add(1, std::memory_order_release) + 1; }
};

/** Whether a data path still works, and why not: the first failure wins, and is shared by
 * every connection of the path (a lost write leaves nothing after it to trust). */
class path_health
{
public:
	/** Records the first failure — its reason before it is published — then wakes every
	 * thread waiting on any connection of the path. */
	void fail(int err, const std::string &why);
	bool broken() const noexcept { return broken_.load(std::memory_order_acquire); }
	/** Throws the failure (rpmem::error) when the path is broken; `host` prefixes it. */
	void check(const std::string &host) const;
	/** Connections to wake on failure. */
	void watch(connection *c) { conns_.push_back(c); }

private:
	std::atomic<bool> broken_{false};
	int err_ = 0; // published by broken_
	mutable std::mutex mutex_;
	std::string why_;
	std::vector<connection *> conns_;
};

/** The path's event queue, read by a reaper that found no completion: FI_SHUTDOWN there (or an
 * error entry) means rpmemd ended the connections. */
class shutdown_watch
{
public:
	shutdown_watch(fabric::eq &eq, path_health &health) : eq_(eq), health_(health) {}
	/** Reads what the queue holds without waiting; one thread at a time, others return. */
	void poll();

private:
	fabric::eq &eq_;
	path_health &health_;
	std::mutex mutex_;
};

/** How long a wait may see nothing (settings::op_timeout), and the other sign of rpmemd's life
 * it may consult then (data_path::set_liveness). */
struct liveness {
	std::chrono::milliseconds op_timeout{5000};
	std::function<std::chrono::steady_clock::time_point()> heard;

	/** Keep-alive answers alone stretch a wait this far at most. */
	std::chrono::milliseconds cap() const { return op_timeout * 12; }
	std::string timeout_reason(bool capped) const;

	/** A wait whose last sign of life was `alive` (its own progress: `progressed`): whether it
	 * has lasted too long at `now`. Consults heard(), moving `alive` forward. */
	bool expired(std::chrono::steady_clock::time_point &alive,
	             std::chrono::steady_clock::time_point progressed,
	             std::chrono::steady_clock::time_point now) const;
};

/** A post the provider refuses (FI_EAGAIN): since when, and what completed meanwhile. */
struct refusal {
	std::uint32_t events = 0; // connection::events_ when the refusals began
	std::chrono::steady_clock::time_point alive, progressed;
};

struct connection_params {
	std::uint32_t index = 0;
	std::string host;              // for messages
	std::uint32_t queue_depth = 0; // requests in flight, and receives posted for responses
	std::size_t cq_size = 0;       // completion queue entries
	bool need_credits = false;     // more lanes share the connection than queue_depth
	fabric::wait_mode wait = fabric::wait_mode::adaptive;
};

class connection
{
public:
	/**
	 * An endpoint on `domain` from `fi`, bound to `eq` and a completion queue of its own.
	 * `lanes` are all lanes of the path (lane_map.hpp: which of the `connections` each travels
	 * on); responses
	 * land in queue_depth slots of response_size bytes at resp_buf (registered: resp_desc).
	 */
	connection(const fabric::fabric_domain &domain, const fabric::info &fi,
	           const fabric::eq &eq, const connection_params &p, path_health &health,
	           shutdown_watch &watch, const liveness &live, std::span<lane_sync *const> lanes,
	           std::uint32_t connections, std::uint8_t *resp_buf, void *resp_desc);

	/** fi_connect with the private data; FI_CONNECTED follows on the path's EQ. */
	void connect(std::span<const std::uint8_t> private_data) { ep_->connect(private_data); }
	/** Posts a receive for every response slot: once connected. */
	void post_receives();

	/** Posts with `op` (a call returning fabric::post_status), driving progress while the
	 * queue is full, as long as the wait for a completion may last (liveness): a queue that
	 * stays full while nothing completes (rpmemd stopped, the link down) fails the path with
	 * ETIMEDOUT. Throws the path's failure. */
	template <class Post> void post(Post &&op);
	/** Takes one of rpmemd's request slots, waiting for a response to free one. */
	void take_credit();
	/** Waits until every completion the lane expects has arrived (or, `until` > 0, all but
	 * the last `until` of them: rpmemd answers a lane's requests in order); throws the
	 * path's failure, or the errno rpmemd (or the provider) reported for one of the lane's
	 * operations. */
	void wait(lane_sync &l, std::uint32_t until = 0);
	/** Throws the path's failure, if any. */
	void check_broken() const { health_.check(params_.host); }
	/** Wakes every thread waiting on this connection (the path failed). */
	void wake_all();
	/** Starts adaptive waits from a measured round trip (before the lanes are used). */
	void calibrate_wait(std::chrono::nanoseconds round_trip)
	{
		waiter_.budget().calibrate(round_trip);
	}

	fabric::endpoint &ep() { return *ep_; }
	fid_t fid() const { return ep_->fid(); }
	std::uint32_t index() const { return params_.index; }
	/** The context of unsignalled writes (they complete only with an error). */
	void *silent_context() { return &silent_ctx_; }

private:
	void progress(bool block, const lane_sync *mine);
	/** Counts one more refusal of a post; fails the path when they lasted too long. */
	void refused(std::optional<refusal> &r);
	void dispatch(const fabric::cq_entry &e);
	void on_error(const fabric::cq_error &e);
	void repost(std::uint32_t slot);
	template <class Fn> void lead(Fn &&fn);

	connection_params params_;
	path_health &health_;
	shutdown_watch &watch_;
	const liveness &live_;
	std::span<lane_sync *const> lanes_;
	std::uint32_t connections_;
	std::uint8_t *resp_buf_;
	void *resp_desc_;
	fabric::cq_waiter waiter_; // used by the leader only
	std::unique_ptr<fabric::cq> cq_;
	std::unique_ptr<fabric::endpoint> ep_;
	std::vector<op_context> recv_ctx_;
	op_context silent_ctx_{{}, ctx_kind::silent, 0};
	std::mutex cq_mutex_;                  // held by the thread reaping completions (leader)
	std::atomic<std::uint32_t> events_{0}; // bumped to wake followers
	std::atomic<std::int32_t> credits_{0}; // requests the daemon can still take
};

template <class Post> void connection::post(Post &&op)
{
	std::optional<refusal> stalled;
	for (;;) {
		check_broken();
		fabric::post_status st;
		try {
			st = op();
		} catch (const rpmem::error &e) {
			// A connection that takes no more operations is lost, whatever the provider
			// calls it (sockets: ENOENT once rpmemd is gone): every lane learns so.
			health_.fail(ECONNRESET, e.message());
			check_broken();
			throw;
		}
		if (st == fabric::post_status::posted)
			return;
		// The queue is full: reap completions (ours or anyone's) and retry.
		refused(stalled);
		if (cq_mutex_.try_lock()) {
			std::lock_guard lock(cq_mutex_, std::adopt_lock);
			progress(false, nullptr);
		} else {
			std::this_thread::yield();
		}
	}
}

} // namespace rpmem::client
