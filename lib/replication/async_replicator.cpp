// SPDX-License-Identifier: BSD-3-Clause
// replicated_pool's asynchronous mode: persist() snapshots each range into the staging ring and
// returns; one thread replicates the snapshots in persist order, in rounds (round_plan.hpp)
// that keep every replica a prefix of the persists; barrier() and the lag bound wait for it.
#include "replication/replicated_pool_impl.hpp"

#include "replication/round_plan.hpp"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <thread>

namespace rpmem
{

using namespace replication;

namespace
{

/** Ranges the replicator flushes to a replica at most before it drains them. */
constexpr std::size_t ranges_per_drain = 32;

/**
 * persist() snapshots the range into the staging ring and queues it; one thread replicates the
 * queue in persist order; barrier() and the lag bound wait for it. A replica's failure is kept
 * (async_error_) and thrown by the next call under failure_policy::fail.
 */
class asynchronous_mode final : public replication_mode
{
public:
	explicit asynchronous_mode(replicated_pool::impl &d) : d_(d)
	{
		// Room for max_lag_bytes of snapshots, and for a few chunks when the bound is tiny.
		staging_.init(std::max<std::size_t>(d.opts.max_lag_bytes, 4u << 20));
		replicator_ = std::thread([this] { replicate_loop(); });
	}
	~asynchronous_mode() override { stop(); }

	void persist(range r) override { enqueue(r); }
	void flush(range r) override
	{
		std::lock_guard g(q_mu_);
		flushed_.push_back(r);
	}
	void drain() override
	{
		std::vector<range> f;
		{
			std::lock_guard g(q_mu_);
			f.swap(flushed_);
		}
		for (auto &r : f)
			enqueue(r);
	}
	void barrier() override;
	void finish() override;
	replicated_pool::lag_info lag() const override;
	void replicas_back() override
	{
		std::lock_guard q(q_mu_);
		async_error_ = nullptr;
	}
	bool may_fall_behind() const override { return true; }

private:
	/** An entry persisted locally, not yet on the replicas. */
	struct entry {
		range r;
		clock_type::time_point when;
		std::size_t stage;  // where its snapshot is in staging_
		std::size_t charge; // ring bytes it holds
	};
	/** A snapshot on its way to the replicas. */
	struct piece {
		range r;
		const std::byte *src;
	};

	void stop();
	void rethrow_async_error();
	void enqueue(range r);
	void enqueue_chunk(range r, std::unique_lock<std::mutex> &lk);
	void replicate_loop();
	/** The replicator's three steps: waits for queued snapshots and joins them into `batch`
	 *  (0: stopped); sends them to every replica in rounds; frees the first n. */
	std::size_t take_batch(std::vector<piece> &batch);
	std::exception_ptr send_batch(const std::vector<piece> &batch);
	void retire(std::size_t n, std::exception_ptr err);

	replicated_pool::impl &d_;
	staging_ring staging_;
	mutable std::mutex q_mu_;
	std::condition_variable work_cv_; // the replicator has something to do
	std::condition_variable done_cv_; // the replicator finished a batch
	std::deque<entry> queue_;         // [0, in_flight_) are being replicated
	std::size_t in_flight_ = 0;
	std::size_t lag_bytes_ = 0;
	std::uint64_t enqueued_ = 0;   // entries ever queued
	std::uint64_t replicated_ = 0; // entries ever replicated (a prefix of enqueued_)
	std::exception_ptr async_error_;
	bool stop_ = false;
	std::vector<range> flushed_; // flush() ranges waiting for drain()
	std::thread replicator_;
};

void asynchronous_mode::stop()
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

void asynchronous_mode::rethrow_async_error()
{
	if (async_error_ && d_.opts.on_failure == replicated_pool::failure_policy::fail)
		std::rethrow_exception(async_error_);
}

/** Snapshots r into the staging ring (in chunks if it is large) and queues it; then holds the
 * caller while the lag is over its bounds. */
void asynchronous_mode::enqueue(range r)
{
	std::unique_lock lk(q_mu_);
	rethrow_async_error();
	const std::size_t chunk = staging_.max_chunk();
	for (std::size_t done = 0; done < r.length; done += chunk)
		enqueue_chunk({r.offset + done, std::min(chunk, r.length - done)}, lk);
	auto now = clock_type::now();
	// Bounded lag: wait while too many bytes, or too old ones, are not replicated yet.
	while (!async_error_ && !queue_.empty() &&
	       (lag_bytes_ > d_.opts.max_lag_bytes ||
	        now - queue_.front().when > d_.opts.max_lag_time)) {
		done_cv_.wait_for(lk, std::chrono::milliseconds(10));
		now = clock_type::now();
	}
	rethrow_async_error();
}

void asynchronous_mode::enqueue_chunk(range r, std::unique_lock<std::mutex> &lk)
{
	std::size_t pos = 0, charge = 0;
	while (!staging_.alloc(r.length, &pos, &charge)) {
		// Full: the replicator frees the oldest snapshots as the replicas take them.
		work_cv_.notify_one();
		done_cv_.wait(lk);
		rethrow_async_error();
	}
	// The caller just persisted the range and does not write it until persist returns.
	std::memcpy(staging_.base() + pos, d_.master->base() + r.offset, r.length);
	queue_.push_back({r, clock_type::now(), pos, charge});
	++enqueued_;
	lag_bytes_ += r.length;
	if (queue_.size() == 1 || in_flight_ == 0)
		work_cv_.notify_one();
}

void asynchronous_mode::replicate_loop()
{
	std::vector<piece> batch;
	while (std::size_t n = take_batch(batch)) {
		auto err = send_batch(batch);
		d_.notify_lost();
		retire(n, err);
	}
}

std::size_t asynchronous_mode::take_batch(std::vector<piece> &batch)
{
	std::unique_lock lk(q_mu_);
	work_cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
	if (queue_.empty())
		return 0; // stop, and nothing left
	const std::size_t n = queue_.size();
	in_flight_ = n;
	batch.clear();
	// In persist order (a replica holds a prefix of the persists); a range continuing the
	// previous one, in the pool and in the ring, joins it.
	for (std::size_t i = 0; i < n; ++i) {
		const auto &e = queue_[i];
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
	return n;
}

std::exception_ptr asynchronous_mode::send_batch(const std::vector<piece> &batch)
{
	std::unique_lock g(d_.remote_mu);
	try {
		// Rounds of relaxed flushes that fit one lane request, then a drain, posted to
		// every replica before waiting on any: one round trip per round, all replicas in
		// parallel. (A flush that overflowed the request would send it and wait, one
		// replica after the other.)
		std::vector<const client::data_path *> lanes;
		for (auto &r : d_.remotes)
			if (d_.active(r))
				lanes.push_back(&r.rp->lanes());
		for (std::size_t from = 0, to = 0; !lanes.empty() && from < batch.size();
		     from = to) {
			to = round_end(lanes, batch.size(), from, ranges_per_drain,
			               [&](std::size_t i) { return batch[i].r.length; });
			d_.remote_all(
			    "asynchronous replication",
			    [&](remote_replica &r) {
				    if (r.staged_on != r.rp.get()) {
					    r.rp->register_source(staging_.base(),
					                          staging_.capacity());
					    r.staged_on = r.rp.get();
				    }
				    for (std::size_t k = from; k < to; ++k)
					    r.rp->flush_from(batch[k].src, batch[k].r.offset,
					                     batch[k].r.length, 0);
				    r.rp->drain_post(0);
			    },
			    [](remote_replica &r) { r.rp->complete(0); });
		}
		return nullptr;
	} catch (...) {
		return std::current_exception();
	}
}

void asynchronous_mode::retire(std::size_t n, std::exception_ptr err)
{
	{
		std::lock_guard lk(q_mu_);
		for (std::size_t i = 0; i < n; ++i) {
			lag_bytes_ -= queue_.front().r.length;
			staging_.release(queue_.front().charge);
			queue_.pop_front();
		}
		in_flight_ = 0;
		replicated_ += n;
		if (err && !async_error_)
			async_error_ = err;
	}
	done_cv_.notify_all();
}

void asynchronous_mode::barrier()
{
	std::unique_lock lk(q_mu_);
	const std::uint64_t target = enqueued_;
	work_cv_.notify_one();
	done_cv_.wait(lk, [&] { return replicated_ >= target || !replicator_.joinable(); });
	rethrow_async_error();
}

void asynchronous_mode::finish()
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
	d_.clear_behind_marks();
}

replicated_pool::lag_info asynchronous_mode::lag() const
{
	std::lock_guard g(q_mu_);
	replicated_pool::lag_info l;
	l.bytes = lag_bytes_;
	l.ranges = queue_.size();
	if (!queue_.empty())
		l.oldest = clock_type::now() - queue_.front().when;
	return l;
}

} // namespace

std::unique_ptr<replication_mode> make_asynchronous_mode(replicated_pool::impl &d)
{
	return std::make_unique<asynchronous_mode>(d);
}

} // namespace rpmem
