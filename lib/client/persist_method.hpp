// SPDX-License-Identifier: BSD-3-Clause
// How a lane's ranges become durable on the replica: one implementation per persistence method,
// chosen once when the data path connects (the hot path never asks again).
//
//   GPSPM  ranges are RDMA-written (or travel inline); a persist request follows, rpmemd makes
//          every range durable and answers.
//   APM    the replica declared NIC writes durable: an 8-byte RDMA read behind the writes
//          proves they arrived (needs the provider's read-after-write order).
//   commit each RDMA write carries FI_COMMIT_COMPLETE: durable when it completes (needs
//          FI_RMA_PMEM; rpmemd offers it only for pools on pmem).
//
// Every method sends small ranges inline, in the lane's request, when that is what the
// threshold of the lane's batch says.
#pragma once

#include "client/lane.hpp"
#include "control/messages.hpp"
#include "fabric/endpoint.hpp"
#include "fabric/granted.hpp"
#include "lane/lane_msg.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace rpmem::client
{

/** What every method uses: the local regions and the replica's. */
struct path_resources {
	std::uint8_t *pool = nullptr;
	void *pool_desc = nullptr;  // local descriptor of the registered pool
	void *msg_desc = nullptr;   // of the lanes' request slots
	void *chunk_desc = nullptr; // of the pipelined chunks' request slots
	void *raw_desc = nullptr;   // of the APM read-back words
	fabric::rma_target remote;  // pool offset 0 at the replica: address and key
	std::size_t max_msg = 0;    // the largest single transfer
	bool send_after_write = true;
	// RDMA writes rpmemd sends no response for (commit, APM) carry remote CQ data where that
	// costs no receive and rpmemd's workers make the provider progress them (tcp; see
	// granted::announce_writes_pays): the workers then see them and keep polling for what
	// follows (the next write, APM's read) instead of sleeping through it.
	bool announce_writes = false;
	std::uint32_t pipeline = 1; // requests one lane may have in flight
	std::uint64_t pipeline_chunk = 0;
	static constexpr std::size_t chunk_slot = 64;
};

class persist_method
{
public:
	explicit persist_method(const path_resources &r) : res_(r) {}
	virtual ~persist_method() = default;
	persist_method(const persist_method &) = delete;
	persist_method &operator=(const persist_method &) = delete;

	virtual control::persist_method kind() const = 0;
	/** Adds [r) to the lane's pending ranges (bytes at src, registered under desc): staged
	 * inline, or written by RDMA now. Durable once drain() completes. */
	virtual void flush(lane_state &l, range r, const std::uint8_t *src, void *desc);
	/** Makes every pending range of the lane durable: waits, or (wait_now false) posts what
	 * completes it and leaves the wait to complete(). */
	virtual void drain(lane_state &l, bool wait_now) = 0;
	/** Whether the lane has ranges drain() must make durable. */
	virtual bool pending(const lane_state &l) const { return !l.batch.empty(); }
	/** fi_writemsg flags of the unsignalled writes write_then_announce() posts (0: fi_write).
	 */
	virtual std::uint64_t unsignalled_write_flags() const { return 0; }
	/** A flush of [r) from the pool and its drain. */
	virtual void persist(lane_state &l, range r, bool wait_now);

	/** [r) flushed to the replica's media (msync even where caches are persistent). */
	void deep_persist(lane_state &l, range r);
	/** RDMA-reads [r) of the replica into buf (registered under desc). */
	void read(lane_state &l, void *buf, range r, void *desc, bool wait_now);
	/** Waits for what the lane posted, or (wait_now false) marks it posted. */
	void complete(lane_state &l, bool wait_now);
	/** Sends the lane's batch, which carries only inline ranges, as a persist request and
	 * goes on building the next batch in l.spare_slot (the old slot becomes the spare: the
	 * caller waits for the request that used it before the next batch is sealed). Every
	 * method makes an inline batch durable the same way: rpmemd applies and persists it. */
	void send_ahead(lane_state &l);

protected:
	/** What the sender of a request does once it is posted. */
	enum class then {
		wait,        // waits for it (a blocking call)
		mark_posted, // leaves the wait to complete() (a *_post call)
		build_on,    // neither: the lane builds its next batch while it is in flight
	};
	static then wait_or_post(bool wait_now)
	{
		return wait_now ? then::wait : then::mark_posted;
	}

	/** Sends the lane's batch as one persist request. */
	void send_batch(lane_state &l, bool wait_now) { send_batch(l, wait_or_post(wait_now)); }
	void send_batch(lane_state &l, then t);
	/** Adds a range with its bytes, sending the batch first when it is full. */
	void stage_inline(lane_state &l, range r, const std::uint8_t *src);
	/** Sends the request header req (and `payload` bytes already behind it in the slot). */
	void send_request(lane_state &l, const rpmem::lane::request &req, std::size_t payload,
	                  then t);
	/** RDMA-writes [r) from src; flags with FI_COMPLETION: signalled (the lane then waits for
	 * it), else unsignalled (fi_writemsg with these flags, or fi_write for none). */
	void write(lane_state &l, range r, const std::uint8_t *src, void *desc,
	           std::uint64_t flags);
	/** An RDMA write of [r) the method's durability step will follow: with send-after-write
	 * order unsignalled; without it signalled and waited for, so the request cannot overtake
	 * it. The entry joins the batch. */
	void write_then_announce(lane_state &l, range r, const std::uint8_t *src, void *desc);

	const path_resources &res_;
};

/** The method rpmemd chose, for what this side's provider granted. Throws rpmem::error: ENOTSUP
 * when the provider cannot serve it (APM without read-after-write order, commit without
 * FI_RMA_PMEM), EPROTO for a method this client does not know. */
std::unique_ptr<persist_method> make_persist_method(control::persist_method method,
                                                    const path_resources &r,
                                                    const fabric::granted &g,
                                                    const std::string &host);

/** RDMA writes one lane of the method may leave in flight between drains (completion queue
 * room); 0: none beyond the lane's requests. */
std::uint32_t max_writes_in_flight(control::persist_method method);

} // namespace rpmem::client
