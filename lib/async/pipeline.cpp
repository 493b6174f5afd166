// SPDX-License-Identifier: BSD-3-Clause
// Asynchronous replication's engine (see pipeline.hpp).
#include "async/pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace rpmem::async
{

namespace
{

/** Snapshots the replicator takes at most per batch. */
constexpr std::size_t max_batch = 4096;
/** Snapshots queued at most: a persist waits for room beyond it, as for the staging ring. */
constexpr std::size_t max_queued = 65536;

} // namespace

std::string too_slow(clock_type::duration sending, std::chrono::milliseconds bound)
{
	return fmt::format("the replica is too slow: a batch has been on its way to it for "
	                   "{:.0f} ms, longer than RPMEM_TIMEOUT ({} ms), while calls waited for "
	                   "the lag bound; it is dropped so that the calls keep their pace, its "
	                   "changes recorded, and caught up once it keeps up",
	                   std::chrono::duration<double, std::milli>(sending).count(),
	                   bound.count());
}

std::string held_too_long(std::chrono::milliseconds bound)
{
	return fmt::format("the catch-up's last round, which holds the calls, took longer than "
	                   "RPMEM_TIMEOUT ({} ms): the replica is too slow for it now; it stays "
	                   "behind, its changes recorded",
	                   bound.count());
}

pipeline::pipeline(const bounds &b, sink &out) : bounds_(b), out_(out), queue_(max_queued)
{
	// Room for max_lag_bytes of snapshots, and for a few chunks when the bound is tiny.
	staging_.init(std::max<std::size_t>(b.max_lag_bytes, 4u << 20));
	replicator_ = std::thread([this] { replicate_loop(); });
}

pipeline::~pipeline()
{
	stop();
}

void pipeline::stop()
{
	if (!replicator_.joinable())
		return;
	{
		std::lock_guard g(q_mu_);
		stop_ = true;
	}
	work_cv_.notify_all();
	replicator_.join();
}

void pipeline::rethrow_error()
{
	if (error_ && bounds_.fail_on_error)
		std::rethrow_exception(error_);
}

void pipeline::persist(range r, const std::byte *bytes)
{
	// One clock read per persist, before the lock: the snapshot's time and the lag check's.
	const auto now = clock_type::now();
	std::unique_lock lk(q_mu_);
	enqueue(r, bytes, now, lk);
	wait_for_lag(now, lk);
}

void pipeline::snapshot(range r, const std::byte *bytes)
{
	const auto now = clock_type::now();
	std::unique_lock lk(q_mu_);
	enqueue(r, bytes, now, lk);
}

void pipeline::wait_for_lag()
{
	const auto now = clock_type::now();
	std::unique_lock lk(q_mu_);
	wait_for_lag(now, lk);
}

void pipeline::enqueue(range r, const std::byte *bytes, clock_type::time_point now,
                       std::unique_lock<std::mutex> &lk)
{
	rethrow_error();
	const std::size_t chunk = staging_.max_chunk();
	for (std::size_t done = 0; done < r.length; done += chunk)
		enqueue_chunk({r.offset + done, std::min(chunk, r.length - done)}, bytes + done,
		              now, lk);
}

/** Bounded lag: waits while too many bytes, or too old ones, are not replicated yet. `start`:
 *  the time of the call (the clock is read again only while waiting). */
void pipeline::wait_for_lag(clock_type::time_point start, std::unique_lock<std::mutex> &lk)
{
	rethrow_error();
	auto now = start;
	bool waited = false;
	while (!error_ && !queue_.empty() &&
	       (lag_bytes_ > bounds_.max_lag_bytes ||
	        now - queue_.front().when > bounds_.max_lag_time)) {
		waited = true;
		done_cv_.wait_for(lk, std::chrono::milliseconds(10));
		now = clock_type::now();
		check_congestion(now, lk);
	}
	if (waited) {
		++done_.lag_waits;
		done_.max_wait = std::max(done_.max_wait, now - start);
	}
	rethrow_error();
}

void pipeline::enqueue_chunk(range r, const std::byte *bytes, clock_type::time_point now,
                             std::unique_lock<std::mutex> &lk)
{
	std::size_t pos = 0, charge = 0;
	if (queue_.full() || !staging_.alloc(r.length, &pos, &charge)) {
		// Full: the replicator frees the oldest snapshots as the replicas take them.
		do {
			work_cv_.notify_one();
			wait_a_look(lk);
			rethrow_error();
		} while (queue_.full() || !staging_.alloc(r.length, &pos, &charge));
		++done_.room_waits;
		done_.max_room_wait = std::max(done_.max_room_wait, clock_type::now() - now);
	}
	// The caller just persisted the range and does not write it until persist returns.
	std::memcpy(staging_.base() + pos, bytes, r.length);
	queue_.push({r, now, pos, charge});
	++done_.enqueued;
	lag_bytes_ += r.length;
	done_.max_lag_bytes = std::max(done_.max_lag_bytes, lag_bytes_);
	if (queue_.size() == 1 || in_flight_ == 0)
		work_cv_.notify_one();
}

void pipeline::replicate_loop()
{
	std::vector<piece> batch;
	for (taken t = take_batch(batch); t.n; t = take_batch(batch)) {
		auto err = send_batch(batch);
		out_.after_batch();
		retire(t, err);
	}
}

pipeline::taken pipeline::take_batch(std::vector<piece> &batch)
{
	taken t;
	{
		std::unique_lock lk(q_mu_);
		work_cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
		if (queue_.empty())
			return t; // stop, and nothing left
		// At most max_batch: a batch is sent, and its ring space freed, as a whole.
		t.n = std::min(queue_.size(), max_batch);
		in_flight_ = t.n;
		batch_start_ = clock_type::now();
	}
	batch.clear();
	// In persist order (a replica holds a prefix of the persists); a range continuing the
	// previous one, in the pool and in the ring, joins it.
	for (std::size_t i = 0; i < t.n; ++i) {
		const auto &e = queue_.at(i);
		t.bytes += e.r.length;
		t.charge += e.charge;
		const std::byte *src = staging_.base() + e.stage;
		if (!batch.empty()) {
			auto &b = batch.back();
			if (b.r.offset + b.r.length == e.r.offset && b.src + b.r.length == src) {
				b.r.length += e.r.length;
				continue;
			}
		}
		batch.push_back({e.r, src});
	}
	return t;
}

std::exception_ptr pipeline::send_batch(const std::vector<piece> &batch)
{
	try {
		out_.send(batch, staging_);
		return nullptr;
	} catch (...) {
		return std::current_exception();
	}
}

void pipeline::retire(const taken &t, std::exception_ptr err)
{
	{
		std::lock_guard lk(q_mu_);
		queue_.pop(t.n);
		lag_bytes_ -= t.bytes;
		staging_.release(t.charge);
		in_flight_ = 0;
		done_.replicated += t.n;
		++done_.batches;
		if (err && !error_) {
			error_ = err;
			failed_.store(true, std::memory_order_release);
		}
	}
	done_cv_.notify_all();
}

void pipeline::barrier()
{
	std::unique_lock lk(q_mu_);
	const std::uint64_t target = done_.enqueued;
	work_cv_.notify_one();
	while (!(done_.replicated >= target || !replicator_.joinable()))
		wait_a_look(lk);
	rethrow_error();
}

void pipeline::wait_a_look(std::unique_lock<std::mutex> &lk)
{
	if (bounds_.congestion.count() == 0) {
		done_cv_.wait(lk); // nothing to look at: the replicator wakes the call
		return;
	}
	done_cv_.wait_for(lk, std::chrono::milliseconds(10));
	check_congestion(clock_type::now(), lk);
}

void pipeline::check_congestion(clock_type::time_point now, std::unique_lock<std::mutex> &lk)
{
	// Only a batch in flight is the replicas' doing: between batches the replicator is
	// about to take the next one.
	if (bounds_.congestion.count() == 0 || in_flight_ == 0 || queue_.empty())
		return;
	// The batch's own time, not its snapshots' age: those queued behind a slow batch are old
	// when the next one takes them, through no fault of the replicas it goes to.
	const auto sending = now - batch_start_;
	if (sending <= bounds_.congestion)
		return;
	// Asked at every look, not once per batch: after the replica it dropped, the batch may
	// wait on another slow one (two links throttled at once kept a call 10 s in chaos).
	lk.unlock();
	const bool dropped = out_.congested(sending);
	lk.lock();
	if (dropped)
		++done_.congestions;
}

void pipeline::finish()
{
	std::exception_ptr err;
	try {
		barrier();
	} catch (...) {
		err = std::current_exception();
	}
	stop();
	if (err)
		std::rethrow_exception(err);
}

void pipeline::clear_error()
{
	std::lock_guard q(q_mu_);
	error_ = nullptr;
	failed_.store(false, std::memory_order_release);
}

std::exception_ptr pipeline::error() const
{
	std::lock_guard q(q_mu_);
	return error_;
}

progress pipeline::status() const
{
	std::lock_guard g(q_mu_);
	progress p = done_;
	p.lag_bytes = lag_bytes_;
	p.lag_ranges = queue_.size();
	if (!queue_.empty())
		p.oldest = clock_type::now() - queue_.front().when;
	return p;
}

} // namespace rpmem::async
