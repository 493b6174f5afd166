// SPDX-License-Identifier: BSD-3-Clause
// Asynchronous replication's engine, shared by replicated_pool's asynchronous mode and by
// librpmem's (RPMEM_REPLICATION=async): persisted ranges are snapshotted into a staging ring
// and queued in one global order; one thread sends the queue to a sink in that order, in
// batches; barrier() and a lag bound wait for it.
#pragma once

#include "async/staging_ring.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rpmem::async
{

using clock_type = std::chrono::steady_clock;

struct range {
	std::size_t offset;
	std::size_t length;
};

/** A snapshot on its way to the replicas: the pool range and where its bytes are. Consecutive
 *  snapshots of consecutive pool ranges are joined into one piece. */
struct piece {
	range r;
	const std::byte *src;
};

/** Where the replicator sends batches. Called on the replicator's thread only, but for
 *  congested(). */
class sink
{
public:
	virtual ~sink() = default;
	/** Makes the batch durable on the replicas, in order: at every instant a replica holds
	 *  a prefix of it (round_plan.hpp). Throws what failed. `ring` holds every src. */
	virtual void send(const std::vector<piece> &batch, const staging_ring &ring) = 0;
	/** After each batch, failed or not, outside the pipeline's lock. */
	virtual void after_batch() {}
	/** bounds::congestion: a call waits (the lag bound, room for its snapshot, a barrier)
	 *  while the batch in flight has been sent for `sending`, longer than the bound. Called
	 *  at every look of every waiting call (about every 10 ms each) until the batch ends,
	 *  from the waiting call's thread, outside the pipeline's lock, while send() may be
	 *  waiting on the replicas: a sink that drops the replica it waits on makes send() go on
	 *  to the next replica or return (its failure recorded), and the calls go on. It is
	 *  asked again after a drop: the batch may then wait on another replica, slow too. True:
	 *  it dropped a replica this time (counted in progress::congestions); false: nothing to
	 *  do (not waiting on one right now, or on one it dropped already). */
	virtual bool congested(clock_type::duration sending)
	{
		(void)sending;
		return false;
	}
};

/** Why a sink drops a replica told of congestion (sink::congested): the batch's time on its
 *  way, the bound, and what happens next — the text both writers' logs give. */
std::string too_slow(clock_type::duration sending, std::chrono::milliseconds bound);
/** Why a catch-up's last round, which holds the calls, is ended past `bound` (the same bound
 *  as a batch's): the text both writers' logs give. */
std::string held_too_long(std::chrono::milliseconds bound);

struct bounds {
	/** persist() waits while more than this many bytes are not replicated yet; the staging
	 *  ring takes this much memory (at least 4 MiB). */
	std::size_t max_lag_bytes = 64u << 20;
	/** ... or while the oldest unreplicated persist is older than this. */
	std::chrono::milliseconds max_lag_time{1000};
	/** A failed batch is thrown by every later call (true) or only kept for error(). */
	bool fail_on_error = true;
	/** Under a policy that goes on without a replica: when a call waits while one batch
	 *  has been on its way for longer than this, the sink is told (sink::congested), which
	 *  may drop the replica that is too slow. Zero: never (the calls go at the slowest
	 *  replica's pace). */
	std::chrono::milliseconds congestion{0};
};

/** How far the replicas are behind the persists, and what has been done. */
struct progress {
	std::size_t lag_bytes = 0;       // persisted, not on the replicas yet
	std::size_t lag_ranges = 0;      // the same, in snapshots
	clock_type::duration oldest{};   // age of the oldest of them
	std::uint64_t enqueued = 0;      // snapshots ever queued (their sequence numbers)
	std::uint64_t replicated = 0;    // snapshots on the replicas: a prefix of enqueued
	std::uint64_t batches = 0;       // batches sent
	std::size_t max_lag_bytes = 0;   // the largest lag_bytes seen
	std::uint64_t lag_waits = 0;     // persists that waited for the lag bound
	clock_type::duration max_wait{}; // the longest a persist waited for the lag bound
	// Persists that waited for room: the staging ring or the queue (max_queued snapshots)
	// was full, so the replicas took the persists more slowly than they came; and the
	// longest such wait.
	std::uint64_t room_waits = 0;
	clock_type::duration max_room_wait{};
	std::uint64_t congestions = 0; // replicas the sink dropped as too slow (sink::congested)
};

class pipeline
{
public:
	pipeline(const bounds &b, sink &out);
	~pipeline(); // stops the replicator; whatever is queued is dropped
	pipeline(const pipeline &) = delete;
	pipeline &operator=(const pipeline &) = delete;

	/** Snapshots r, whose bytes are at `bytes` (the pool's memory), in chunks if it is large,
	 *  and queues it; then waits while the lag is over its bounds. The caller does not write
	 *  the range until this returns. */
	void persist(range r, const std::byte *bytes);
	/** persist() without the wait for the lag bound (wait_for_lag() does it). */
	void snapshot(range r, const std::byte *bytes);
	/** Waits while the lag is over its bounds. */
	void wait_for_lag();
	/** Waits until everything queued before the call is on the replicas; throws a failure. */
	void barrier();
	/** barrier(), then stops the replicator. Throws the barrier's failure. */
	void finish();
	/** Forgets a kept failure (the replicas are back). */
	void clear_error();
	/** The kept failure, or nullptr. */
	std::exception_ptr error() const;
	/** Whether a failure is kept, without the queue's lock: what a call checks after each
	 *  persist. */
	bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
	progress status() const;
	const staging_ring &ring() const { return staging_; }

private:
	/** An entry persisted locally, not yet on the replicas. */
	struct entry {
		range r;
		clock_type::time_point when;
		std::size_t stage;  // where its snapshot is in staging_
		std::size_t charge; // ring bytes it holds
	};

	void stop();
	void rethrow_error();
	void enqueue(range r, const std::byte *bytes, clock_type::time_point now,
	             std::unique_lock<std::mutex> &lk);
	void enqueue_chunk(range r, const std::byte *bytes, clock_type::time_point now,
	                   std::unique_lock<std::mutex> &lk);
	void wait_for_lag(clock_type::time_point start, std::unique_lock<std::mutex> &lk);
	/** One wait of a call for the replicator (room, a barrier; q_mu_ held through lk):
	 *  until woken, or, with a congestion bound, at most 10 ms and then a look
	 *  (check_congestion). The lag bound's wait is timed anyway and looks itself. */
	void wait_a_look(std::unique_lock<std::mutex> &lk);
	/** A waiting call's look (q_mu_ held through lk; released while the sink hears it):
	 *  tells the sink when the batch in flight has been sent for longer than
	 *  bounds::congestion. */
	void check_congestion(clock_type::time_point now, std::unique_lock<std::mutex> &lk);
	void replicate_loop();
	/** What a batch took from the queue: its oldest n entries, their bytes and ring space. */
	struct taken {
		std::size_t n = 0;
		std::size_t bytes = 0;
		std::size_t charge = 0;
	};
	/** The replicator's three steps: waits for queued snapshots and joins them into `batch`
	 *  (n == 0: stopped); sends them; frees them. Only the waiting and the freeing hold the
	 *  lock, for a constant time: the persists that queue meanwhile do not wait for a batch
	 *  to be built. */
	taken take_batch(std::vector<piece> &batch);
	std::exception_ptr send_batch(const std::vector<piece> &batch);
	void retire(const taken &t, std::exception_ptr err);

	bounds bounds_;
	sink &out_;
	staging_ring staging_;
	mutable std::mutex q_mu_;
	std::condition_variable work_cv_; // the replicator has something to do
	std::condition_variable done_cv_; // the replicator finished a batch
	/** The queue: a fixed ring of entries, oldest first. The replicator reads the entries it
	 *  took without the lock: producers only write past them (at head + size), and only the
	 *  replicator moves head. */
	class entry_ring
	{
	public:
		explicit entry_ring(std::size_t capacity) : slots_(capacity) {}
		bool empty() const { return size_ == 0; }
		bool full() const { return size_ == slots_.size(); }
		std::size_t size() const { return size_; }
		const entry &front() const { return slots_[head_]; }
		/** The i-th oldest; i below the size when the caller last held the lock. */
		const entry &at(std::size_t i) const { return slots_[(head_ + i) % slots_.size()]; }
		void push(const entry &e)
		{
			slots_[(head_ + size_) % slots_.size()] = e;
			++size_;
		}
		void pop(std::size_t n)
		{
			head_ = (head_ + n) % slots_.size();
			size_ -= n;
		}

	private:
		std::vector<entry> slots_;
		std::size_t head_ = 0;
		std::size_t size_ = 0;
	};

	entry_ring queue_;
	std::size_t in_flight_ = 0;            // the oldest in_flight_ entries are being replicated
	clock_type::time_point batch_start_{}; // when the batch in flight was taken
	std::size_t lag_bytes_ = 0;
	progress done_; // enqueued, replicated, batches, maxima
	std::exception_ptr error_;
	std::atomic<bool> failed_{false}; // error_ is set
	bool stop_ = false;
	std::thread replicator_;
};

} // namespace rpmem::async
