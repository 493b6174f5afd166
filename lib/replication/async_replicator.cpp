// SPDX-License-Identifier: BSD-3-Clause
// replicated_pool's asynchronous mode: persist() snapshots each range into the staging ring and
// returns; one thread replicates the snapshots in persist order, in rounds (round_plan.hpp)
// that keep every replica a prefix of the persists; barrier() and the lag bound wait for it.
#include "replication/replicated_pool_impl.hpp"

#include "replication/round_plan.hpp"

#include <cstring>

namespace rpmem
{

using namespace replication;

namespace
{

/** Ranges the replicator flushes to a replica at most before it drains them. */
constexpr std::size_t ranges_per_drain = 32;

} // namespace

// ---------------------------------------------------------------------------------------------
// asynchronous mode

void replicated_pool::impl::start_async()
{
	// Room for max_lag_bytes of snapshots, and for a few chunks when the bound is tiny.
	staging.init(std::max<std::size_t>(opts.max_lag_bytes, 4u << 20));
	replicator = std::thread([this] { replicate_loop(); });
}

void replicated_pool::impl::stop_async()
{
	if (!replicator.joinable())
		return;
	{
		std::lock_guard g(q_mu);
		stop = true;
	}
	work_cv.notify_all();
	replicator.join();
}

void replicated_pool::impl::rethrow_async_error()
{
	if (async_error && opts.on_failure == failure_policy::fail)
		std::rethrow_exception(async_error);
}

/** Snapshots r into the staging ring (in chunks if it is large) and queues it; then holds the
 * caller while the lag is over its bounds. */
void replicated_pool::impl::enqueue(range r)
{
	std::unique_lock lk(q_mu);
	rethrow_async_error();
	const std::size_t chunk = staging.max_chunk();
	for (std::size_t done = 0; done < r.length; done += chunk)
		enqueue_chunk({r.offset + done, std::min(chunk, r.length - done)}, lk);
	auto now = clock_type::now();
	// Bounded lag: wait while too many bytes, or too old ones, are not replicated yet.
	while (!async_error && !queue.empty() &&
	       (lag_bytes > opts.max_lag_bytes || now - queue.front().when > opts.max_lag_time)) {
		done_cv.wait_for(lk, std::chrono::milliseconds(10));
		now = clock_type::now();
	}
	rethrow_async_error();
}

void replicated_pool::impl::enqueue_chunk(range r, std::unique_lock<std::mutex> &lk)
{
	std::size_t pos = 0, charge = 0;
	while (!staging.alloc(r.length, &pos, &charge)) {
		// Full: the replicator frees the oldest snapshots as the replicas take them.
		work_cv.notify_one();
		done_cv.wait(lk);
		rethrow_async_error();
	}
	// The caller just persisted the range and does not write it until persist returns.
	std::memcpy(staging.base() + pos, master->base() + r.offset, r.length);
	queue.push_back({r, clock_type::now(), pos, charge});
	++enqueued;
	lag_bytes += r.length;
	if (queue.size() == 1 || in_flight == 0)
		work_cv.notify_one();
}

void replicated_pool::impl::replicate_loop()
{
	std::vector<piece> batch;
	while (std::size_t n = take_batch(batch)) {
		auto err = send_batch(batch);
		notify_lost();
		retire(n, err);
	}
}

std::size_t replicated_pool::impl::take_batch(std::vector<piece> &batch)
{
	std::unique_lock lk(q_mu);
	work_cv.wait(lk, [&] { return stop || !queue.empty(); });
	if (queue.empty())
		return 0; // stop, and nothing left
	const std::size_t n = queue.size();
	in_flight = n;
	batch.clear();
	// In persist order (a replica holds a prefix of the persists); a range continuing the
	// previous one, in the pool and in the ring, joins it.
	for (std::size_t i = 0; i < n; ++i) {
		const auto &e = queue[i];
		const std::byte *src = staging.base() + e.stage;
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

std::exception_ptr replicated_pool::impl::send_batch(const std::vector<piece> &batch)
{
	std::unique_lock g(remote_mu);
	try {
		// Rounds of relaxed flushes that fit one lane request, then a drain, posted to
		// every replica before waiting on any: one round trip per round, all replicas in
		// parallel. (A flush that overflowed the request would send it and wait, one
		// replica after the other.)
		std::vector<const client::data_path *> lanes;
		for (auto &r : remotes)
			if (active(r))
				lanes.push_back(&r.rp->lanes());
		for (std::size_t from = 0, to = 0; !lanes.empty() && from < batch.size();
		     from = to) {
			to = round_end(lanes, batch.size(), from, ranges_per_drain,
			               [&](std::size_t i) { return batch[i].r.length; });
			remote_all(
			    "asynchronous replication",
			    [&](remote_replica &r) {
				    if (r.staged_on != r.rp.get()) {
					    r.rp->register_source(staging.base(),
					                          staging.capacity());
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

void replicated_pool::impl::retire(std::size_t n, std::exception_ptr err)
{
	{
		std::lock_guard lk(q_mu);
		for (std::size_t i = 0; i < n; ++i) {
			lag_bytes -= queue.front().r.length;
			staging.release(queue.front().charge);
			queue.pop_front();
		}
		in_flight = 0;
		replicated += n;
		if (err && !async_error)
			async_error = err;
	}
	done_cv.notify_all();
}

void replicated_pool::impl::wait_barrier()
{
	std::unique_lock lk(q_mu);
	const std::uint64_t target = enqueued;
	work_cv.notify_one();
	done_cv.wait(lk, [&] { return replicated >= target || !replicator.joinable(); });
	rethrow_async_error();
}

void replicated_pool::barrier()
{
	auto &d = open_pool(impl_.get(), "barrier");
	if (d.opts.replication == mode::asynchronous) {
		d.wait_barrier();
		return;
	}
	// Synchronous: what was persisted before the call is on every replica in sync already.
	d.check_not_lost("replicated_pool::barrier");
}

replicated_pool::lag_info replicated_pool::lag() const
{
	auto &d = live(impl_.get(), "lag");
	std::lock_guard g(d.q_mu);
	lag_info l;
	l.bytes = d.lag_bytes;
	l.ranges = d.queue.size();
	if (!d.queue.empty())
		l.oldest = clock_type::now() - d.queue.front().when;
	return l;
}

} // namespace rpmem
