// SPDX-License-Identifier: BSD-3-Clause
// replicated_pool's asynchronous mode: persist() snapshots each range into the staging ring and
// returns; one thread replicates the snapshots in persist order, in rounds (round_plan.hpp)
// that keep every replica a prefix of the persists; barrier() and the lag bound wait for it.
#include "replication/replicated_pool_impl.hpp"

#include "async/pipeline.hpp"
#include "async/round_plan.hpp"

#include "client/env.hpp"

#include <mutex>
#include <vector>

namespace rpmem
{

using namespace replication;

namespace
{

/** Ranges the replicator flushes to a replica at most before it drains them. */
constexpr std::size_t ranges_per_drain = 32;

/** Sends the pipeline's batches to every active remote replica, in rounds. */
class replica_sink final : public async::sink
{
public:
	explicit replica_sink(replicated_pool::impl &d)
	    : d_(d), tracked_(d.congestion_bound().count() > 0)
	{
	}
	void send(const std::vector<async::piece> &batch, const async::staging_ring &ring) override;
	void after_batch() override { d_.notify_lost(); }
	/** The replica the replicator waits on did not keep the lag bound (degrade only): its
	 *  session is failed, so it is lost, what it misses recorded, and caught up later. */
	bool congested(async::clock_type::duration sending) override;

private:
	/** Runs op on replica r, which congested() may then fail. */
	template <class Op> void on(remote_replica &r, Op &&op);

	replicated_pool::impl &d_;
	const bool tracked_; // a congestion bound: congested() may be asked, busy_ kept for it
	std::mutex busy_mu_;
	remote_replica *busy_ = nullptr; // the replica op runs on; its session stays meanwhile
	bool dropped_ = false;           // busy_ was given up already
	async::clock_type::time_point busy_since_{};
	// The batch's time the replicator spent on each replica (d_.remotes' order), busy_'s
	// current wait not counted yet: congested() drops only a replica that took much of it.
	std::vector<async::clock_type::duration> waited_;
};

template <class Op> void replica_sink::on(remote_replica &r, Op &&op)
{
	if (!tracked_) { // no bound: nothing asks which replica the replicator waits on
		op();
		return;
	}
	{
		std::lock_guard b(busy_mu_);
		busy_ = &r;
		dropped_ = false;
		busy_since_ = async::clock_type::now();
	}
	struct done {
		replica_sink &s;
		std::size_t i;
		~done()
		{
			std::lock_guard b(s.busy_mu_);
			s.waited_[i] += async::clock_type::now() - s.busy_since_;
			s.busy_ = nullptr;
		}
	} leave{*this, static_cast<std::size_t>(&r - d_.remotes.data())};
	op();
}

bool replica_sink::congested(async::clock_type::duration sending)
{
	// The replica the replicator has been waiting on for a while (not one it only posts to
	// on its way to the slow one), and which took a good part of the batch's time: half
	// the bound. Once one is dropped, the batch goes on to the others; one slow too is
	// dropped once it took that much, a healthy one (which waited its turn behind the slow
	// one, and then has the batch's rest to take) is not: judged by the batch's age, a
	// replica waited on for 50 ms after another's drop was dropped too, under load.
	std::lock_guard b(busy_mu_);
	const auto waiting = async::clock_type::now() - busy_since_;
	if (!busy_ || !busy_->rp || dropped_ || waiting < std::chrono::milliseconds(50))
		return false;
	const auto i = static_cast<std::size_t>(busy_ - d_.remotes.data());
	if (waited_[i] + waiting < d_.congestion_bound() / 2)
		return false;
	dropped_ = true;
	{
		std::lock_guard s(d_.state_mu);
		busy_->slow = true;
	}
	busy_->rp->give_up(ETIMEDOUT, async::too_slow(sending, d_.congestion_bound()));
	return true;
}

void replica_sink::send(const std::vector<async::piece> &batch, const async::staging_ring &ring)
{
	std::unique_lock g(d_.remote_mu);
	if (tracked_) {
		std::lock_guard b(busy_mu_);
		waited_.assign(d_.remotes.size(), {});
	}
	// Rounds of relaxed flushes that fit one lane request, then a drain, posted to every
	// replica before waiting on any: all replicas in parallel, and each applies a round while
	// the next is built (drain_ahead). (A flush that overflowed the request would send it and
	// wait, one replica after the other.)
	std::vector<const client::data_path *> lanes;
	for (auto &r : d_.remotes)
		if (d_.active(r))
			lanes.push_back(&r.rp->lanes());
	for (std::size_t from = 0, to = 0; !lanes.empty() && from < batch.size(); from = to) {
		to = async::round_end(lanes, batch.size(), from, ranges_per_drain,
		                      [&](std::size_t i) { return batch[i].r.length; });
		d_.remote_all(
		    "asynchronous replication",
		    [&](remote_replica &r) {
			    on(r, [&] {
				    if (r.staged_on != r.rp.get()) {
					    r.rp->register_source(ring.base(), ring.capacity());
					    r.staged_on = r.rp.get();
				    }
				    for (std::size_t k = from; k < to; ++k)
					    r.rp->flush_from(batch[k].src, batch[k].r.offset,
					                     batch[k].r.length, 0);
				    r.rp->drain_ahead(0);
			    });
		    },
		    [](remote_replica &) {});
	}
	d_.remote_all(
	    "asynchronous replication", [](remote_replica &) {},
	    [&](remote_replica &r) { on(r, [&] { r.rp->complete(0); }); },
	    [&] {
		    // What a lost replica misses (also one this batch lost): its catch-up's.
		    for (const auto &p : batch)
			    d_.track_lost({p.r.offset, p.r.length});
	    });
}

async::bounds bounds_of(const replicated_pool::impl &d)
{
	const auto &o = d.opts;
	async::bounds b;
	b.max_lag_bytes = o.max_lag_bytes;
	b.max_lag_time = o.max_lag_time;
	b.fail_on_error = o.on_failure == replicated_pool::failure_policy::fail;
	b.congestion = d.congestion_bound();
	return b;
}

/**
 * persist() snapshots the range into the pipeline and returns; the pipeline's thread replicates
 * the snapshots in persist order; barrier() and the lag bound wait for it. A replica's failure
 * is kept and thrown by the next call under failure_policy::fail. flush() ranges are
 * snapshotted at drain().
 */
class asynchronous_mode final : public replication_mode
{
public:
	explicit asynchronous_mode(replicated_pool::impl &d)
	    : d_(d), sink_(d), pipe_(bounds_of(d), sink_)
	{
	}

	void persist(range r) override { pipe_.persist({r.offset, r.length}, bytes(r)); }
	void flush(range r) override
	{
		std::lock_guard g(flush_mu_);
		flushed_.push_back(r);
	}
	void drain() override
	{
		std::vector<range> f;
		{
			std::lock_guard g(flush_mu_);
			f.swap(flushed_);
		}
		for (auto &r : f)
			pipe_.persist({r.offset, r.length}, bytes(r));
	}
	void barrier() override { pipe_.barrier(); }
	void finish() override
	{
		pipe_.finish();
		d_.clear_behind_marks();
	}
	replicated_pool::lag_info lag() const override
	{
		const auto p = pipe_.status();
		replicated_pool::lag_info l;
		l.bytes = p.lag_bytes;
		l.ranges = p.lag_ranges;
		l.oldest = p.oldest;
		return l;
	}
	void replicas_back() override { pipe_.clear_error(); }
	bool may_fall_behind() const override { return true; }

private:
	const std::byte *bytes(range r) const { return d_.master->base() + r.offset; }

	replicated_pool::impl &d_;
	replica_sink sink_;
	async::pipeline pipe_;
	std::mutex flush_mu_;
	std::vector<range> flushed_; // flush() ranges waiting for drain()
};

} // namespace

std::chrono::milliseconds replicated_pool::impl::congestion_bound() const
{
	if (opts.replication != mode::asynchronous || opts.on_failure != failure_policy::degrade)
		return std::chrono::milliseconds(0);
	return silence_bound();
}

std::chrono::milliseconds replicated_pool::impl::silence_bound() const
{
	return opts.remote.timeout.count() ? opts.remote.timeout
	                                   : client::process_settings().op_timeout;
}

std::unique_ptr<replication_mode> make_asynchronous_mode(replicated_pool::impl &d)
{
	return std::make_unique<asynchronous_mode>(d);
}

} // namespace rpmem
