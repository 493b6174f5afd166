// SPDX-License-Identifier: BSD-3-Clause
// The data path of one remote pool: lanes multiplexed over a few fabric connections.
//
// A lane is an ordering domain, not a connection: lanes are spread over E connections
// (lane_map.hpp: consecutive lanes and libpmemobj's lanes 8 apart alike). Each lane
// has one message slot for its batch; a large persist may add up to pipeline - 1 chunk requests
// in flight before it (when rpmemd's queue depth leaves room per lane); a connection carries up
// to `queue_depth` requests at once (credits). Completions are reaped by whichever waiting thread
// holds the connection's completion queue (leader/follower): a single thread never hands off to
// another.
#pragma once

#include "client/lane_stats.hpp"
#include "control/messages.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace rpmem::client
{

struct settings;

class data_path
{
public:
	/** Connects every endpoint the daemon announced, presenting the session's secret. */
	data_path(const control::fabric_params &fabric, const std::string &host, void *pool_addr,
	          std::size_t pool_size, std::uint32_t nlanes, const settings &s);
	~data_path();
	data_path(const data_path &) = delete;
	data_path &operator=(const data_path &) = delete;

	std::uint32_t nlanes() const;

	/** Durable when it returns. Relaxed or not, ranges that fit inline travel inline (aligned
	 * 8-byte stores untorn); larger ones are RDMA-written: the flag changes nothing here. */
	void persist(std::uint64_t offset, std::uint64_t length, unsigned lane);
	/** Posts the write and returns; drain(lane) makes it durable. */
	void flush(std::uint64_t offset, std::uint64_t length, unsigned lane);
	void drain(unsigned lane);
	void deep_persist(std::uint64_t offset, std::uint64_t length, unsigned lane);

	/** Registers [addr, addr+size) as a second region ranges may be sent from (one per data
	 * path; it must outlive the data path). For senders that snapshot the pool. Whole pages
	 * only (fabric::page_buffer: fork safety): EINVAL otherwise. */
	void register_source(const void *addr, std::size_t size);
	/** flush(), but the bytes of [offset, offset+length) are taken from src, inside the
	 * registered source region; they must stay unchanged until the next drain completes. */
	void flush_from(const void *src, std::uint64_t offset, std::uint64_t length, unsigned lane);

	/** Payload bytes a range of `length` takes in a lane's request (its data travels
	 * inline when it is small), and the payload one request holds: ranges whose costs sum
	 * to at most batch_capacity() go out as one request at the drain. */
	std::size_t batch_cost(std::uint64_t length) const;
	std::size_t batch_capacity() const;
	bool travels_inline(std::uint64_t length) const;

	// Split phase, for fanning out to several replicas from one thread: post the request, do
	// other work (post to other replicas), then complete(lane). Any other call on the lane
	// completes a posted request first.
	void persist_post(std::uint64_t offset, std::uint64_t length, unsigned lane);
	void drain_post(unsigned lane);
	/** Waits for what persist_post/drain_post/drain_ahead started on the lane; throws its
	 *  failure. */
	void complete(unsigned lane);
	/**
	 * For a sender that streams rounds on one lane (asynchronous replication): sends the
	 * lane's pending ranges as one request and returns once at most that request is in
	 * flight, so the next round is built while rpmemd applies this one; complete() waits for
	 * it. rpmemd applies a lane's requests in order, so the replica still takes the rounds
	 * one after the other. Lane 0 only, and only a round of inline ranges where rpmemd takes
	 * two requests of a lane (sends_ahead); anything else is drain_post(). Any call on the
	 * lane but an inline flush_from completes the request first.
	 */
	void drain_ahead(unsigned lane);
	/** Whether drain_ahead(lane) can leave a round in flight while the next is built. */
	bool sends_ahead(unsigned lane) const;
	void read(void *buf, std::uint64_t offset, std::uint64_t length, unsigned lane);

	/** Counters of one lane, or (lane == nlanes()) of all lanes together. Cheap; may be called
	 * from any thread while the lanes are in use (values are then approximate). */
	lane_stats stats(unsigned lane) const;

	/**
	 * How a wait tells a slow daemon from a gone one. A wait fails with ETIMEDOUT once it has
	 * seen neither a completion of its lane nor, through `heard`, any other sign that rpmemd
	 * is alive (the time it last answered a keep-alive ping) for settings::op_timeout. So a
	 * persist that takes long because the replica's storage is slow is waited for while the
	 * daemon answers, up to 12 x op_timeout without a completion; a frozen daemon or a cut
	 * link still ends the wait. Without it (or with the keep-alive off) op_timeout bounds
	 * every wait. Set it before the lanes are used.
	 */
	void set_liveness(std::function<std::chrono::steady_clock::time_point()> heard);

	/** Ends every connection (fi_shutdown; with sockets the endpoints' close does it, see
	 *  fabric::endpoint::shutdown); later calls fail with ECONNRESET. Idempotent. */
	void shutdown();
	/** Fails the path from any thread, as a broken connection would: every wait on it, now
	 *  and later, throws rpmem::error(err, why) (ETIMEDOUT: prefixed by the host). The
	 *  connections stay; shutdown() or the session's end closes them. Idempotent: the first
	 *  failure wins. */
	void fail(int err, const std::string &why) noexcept;

private:
	void persist(std::uint64_t offset, std::uint64_t length, unsigned lane, bool wait_now);
	void drain(unsigned lane, bool wait_now);

	struct impl;
	std::unique_ptr<impl> impl_;
};

} // namespace rpmem::client
