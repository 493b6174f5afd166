// SPDX-License-Identifier: BSD-3-Clause
// replicated_pool's fan-out: an operation posted to every remote replica in sync, then waited on
// for each (the call costs the slowest replica, not the sum; remote_all in the impl header),
// the failure policy that decides what a replica's failure does to the call, and the
// synchronous replication mode built on them.
#include "replication/replicated_pool_impl.hpp"

#include "client/control_session.hpp"
#include "client/exit_guard.hpp"
#include "client/log.hpp"
#include "client/resilient_pool_timing.hpp"

#include <optional>

namespace rpmem
{

using namespace replication;

// ---------------------------------------------------------------------------------------------
// failure policy

void replicated_pool::impl::mark_lost(std::size_t index, const std::string &why, bool say)
{
	std::string lost_at; // where the replica that this call marked lost is
	{
		std::lock_guard g(state_mu);
		for (std::size_t k = 0; k < remotes.size(); ++k) {
			auto &r = remotes[k];
			if (r.index != index || r.lost)
				continue;
			lost_at = where(r);
			r.lost = true;
			r.error = why;
			lost_count.fetch_add(1, std::memory_order_release);
			if (!r.dirty && opts.on_failure == failure_policy::degrade)
				r.dirty = std::make_unique<client::dirty_map>(
				    master->size(), client::dirty_map::block_for(master->size()));
			heal_cv.notify_all();
			if (k < exports.size()) {
				exports[k]->error(false); // counted; the state follows `lost`
				exports[k]->set_lost(true);
			}
			lost_unreported.push_back({index, true, lost_at, false, why});
			any_unreported.store(true, std::memory_order_release);
		}
	}
	// One line per transition, as "in sync again" is the other way; written with state_mu
	// let go (a slow terminal or journal holds up no status reader).
	if (say && !lost_at.empty())
		client::log(1, "remote replica {} ({}): lost: {}", index, lost_at, why);
}

int replicated_pool::impl::mark_lost(std::size_t index, std::exception_ptr failure, bool say)
{
	// The lower layer's remedy (close the pool and open it again) is not this pool's.
	const std::string remedy = fmt::format("resync({}) brings it back", index);
	std::string why;
	int err = EIO;
	try {
		std::rethrow_exception(failure);
	} catch (const client::session_lost &e) {
		why = e.with_remedy("the replica is unusable: " + remedy);
		err = e.errnum();
	} catch (const rpmem::error &e) {
		why = e.message() + " (" + remedy + ")";
		err = e.errnum() ? e.errnum() : EIO;
	} catch (const std::exception &e) {
		why = std::string(e.what()) + " (" + remedy + ")";
	}
	mark_lost(index, why, say);
	return err;
}

void replicated_pool::impl::notify_lost()
{
	// Every fan-out ends here: no lock unless a loss waits to be reported.
	if (!any_unreported.load(std::memory_order_acquire))
		return;
	std::vector<replica_status> lost;
	{
		std::lock_guard g(state_mu);
		lost.swap(lost_unreported);
		any_unreported.store(false, std::memory_order_relaxed);
	}
	for (const auto &st : lost)
		for (const auto &r : remotes)
			if (r.index == st.index)
				metrics_changed(r);
	if (opts.on_replica_lost)
		for (const auto &st : lost)
			opts.on_replica_lost(st);
}

void replicated_pool::impl::fail_lost(const char *what, std::size_t index, int err,
                                      const std::string &why) const
{
	// `why` already ends with the remedy (mark_lost): resync(index).
	throw rpmem::error(err,
	                   fmt::format("{}: replica {} is lost: {}; the pool set is not fully "
	                               "replicated (failure_policy::degrade goes on without it)",
	                               what, index, why));
}

void replicated_pool::impl::check_not_lost(const char *what) const
{
	if (opts.on_failure == failure_policy::degrade)
		return;
	std::lock_guard g(state_mu);
	for (const auto &r : remotes)
		if (r.lost && !r.catching_up) // one being caught up is marked and gets it all
			fail_lost(what, r.index, EIO, r.error);
}

void replicated_pool::impl::fence(remote_replica &r, const std::string &why)
{
	std::lock_guard g(state_mu);
	if (!r.dirty)
		r.dirty = std::make_unique<client::dirty_map>(
		    master->size(), client::dirty_map::block_for(master->size()));
	if (r.lost)
		return;
	r.lost = true;
	r.error = why;
	lost_count.fetch_add(1, std::memory_order_release);
	for (std::size_t k = 0; k < remotes.size() && k < exports.size(); ++k)
		if (&remotes[k] == &r)
			exports[k]->set_lost(true);
}

std::exception_ptr replicated_pool::impl::apply_failures(const char *what,
                                                         std::span<const std::exception_ptr> errors)
{
	std::size_t failed = errors.size();
	int failed_err = 0;
	std::string failed_msg;
	for (std::size_t i = 0; i < errors.size(); ++i) {
		if (!errors[i])
			continue;
		int err = mark_lost(remotes[i].index, errors[i]);
		if (failed == errors.size()) {
			failed = i;
			failed_err = err;
			errnum_of(errors[i], &failed_msg);
		}
	}
	if (failed == errors.size() || opts.on_failure != failure_policy::fail)
		return nullptr;
	return std::make_exception_ptr(rpmem::error(
	    failed_err, fmt::format("{}: remote replica {} ({}) failed: {}: the data is durable on "
	                            "the master but not on every replica; bring the replica back "
	                            "and call resync({}), or use failure_policy::degrade",
	                            what, remotes[failed].index, where(remotes[failed]), failed_msg,
	                            remotes[failed].index)));
}

void replicated_pool::impl::clear_behind_marks()
{
	// A replica whose mark stays (lost, or this fails) is reported behind by the next open.
	for (auto &r : remotes) {
		if (r.lost || !r.rp)
			continue;
		try {
			const auto clean = with_behind_mark(r.attr, false);
			r.rp->set_attr(&clean);
		} catch (const rpmem::error &e) {
			mark_lost(r.index, std::current_exception());
		}
	}
	notify_lost();
}

const std::vector<char> *replicated_pool::impl::forward(range r, unsigned lane)
{
	if (forwarding_count.load(std::memory_order_acquire) == 0)
		return nullptr;
	thread_local std::vector<char> sent;
	sent.assign(remotes.size(), 0);
	bool any = false;
	for (std::size_t i = 0; i < remotes.size(); ++i) {
		auto &x = remotes[i];
		if (!x.forwarding || !x.forwarding->window.may_forward(r.offset, r.length))
			continue;
		std::optional<client::lane_turns::turn> turn;
		if (lane == 0) // the catch-up's moves take lane 0 in turns with the calls
			turn.emplace(x.forwarding->lane0.take());
		try {
			// Waited for, as in sync: sent without waiting it could land after a later
			// persist of the same bytes that another thread made on another lane.
			waiting_on(lane, x);
			x.rp->persist(r.offset, r.length, lane, 0);
		} catch (const std::exception &) {
			continue; // recorded: the catch-up meets the same failure
		}
		x.forwarding->bytes.fetch_add(r.length, std::memory_order_relaxed);
		sent[i] = 1;
		any = true;
	}
	return any ? &sent : nullptr;
}

// ---------------------------------------------------------------------------------------------
// the call bound (synchronous mode under degrade)

std::chrono::milliseconds replicated_pool::impl::call_bound() const
{
	if (opts.replication != mode::synchronous || opts.on_failure != failure_policy::degrade)
		return std::chrono::milliseconds(0);
	return 2 * silence_bound();
}

void replicated_pool::impl::start_watch()
{
	if (call_bound().count() == 0 || remotes.empty())
		return;
	lane_waits.reset(new lane_wait[lanes_per_replica]);
	client::exit_guard::install();
	watcher = std::thread([this] { watch_loop(); });
}

void replicated_pool::impl::stop_watch() noexcept
{
	{
		std::lock_guard g(state_mu);
		watch_stop = true;
	}
	watch_cv.notify_all();
	if (watcher.joinable())
		watcher.join();
}

void replicated_pool::impl::watch_loop()
{
	using namespace client::resilient_timing;
	const auto bound = call_bound();
	const auto tick = watch_tick(bound);
	auto &guard = client::exit_guard::get();
	std::unique_lock g(state_mu);
	while (!watch_stop) {
		watch_cv.wait_for(g, tick, [&] { return watch_stop; });
		if (watch_stop)
			break;
		g.unlock();
		// A lane whose call has waited past the bound on a replica: that replica's session
		// is failed, as a dead one's would be, so the call goes on without it (degrade:
		// lost, caught up later, slow: no call goes to it meanwhile).
		const auto now = clock_type::now();
		for (unsigned lane = 0; lane < lanes_per_replica; ++lane) {
			auto &w = lane_waits[lane];
			const auto since = w.since.load(std::memory_order_relaxed);
			const int on = w.on.load(std::memory_order_relaxed);
			if (!since || on < 0 || static_cast<std::size_t>(on) >= remotes.size())
				continue;
			const auto waited = stamp_age(since, now);
			if (waited <= bound)
				continue;
			if (!guard.enter()) { // exiting: park
				g.lock();
				watch_cv.wait(g, [&] { return watch_stop; });
				return;
			}
			drop_slow(remotes[static_cast<std::size_t>(on)],
			          w.call.load(std::memory_order_relaxed), waited, bound);
			guard.leave();
		}
		g.lock();
	}
}

void replicated_pool::impl::drop_slow(remote_replica &r, const char *call,
                                      std::chrono::nanoseconds waited,
                                      std::chrono::milliseconds bound)
{
	{
		std::lock_guard s(state_mu);
		if (r.lost && !r.catching_up)
			return; // the call is failing on it already
		r.slow = true;
	}
	std::lock_guard g(session_mu);
	if (!r.rp)
		return;
	r.rp->give_up(
	    ETIMEDOUT,
	    fmt::format("the replica is too slow: a {} has waited {:.0f} ms for it, longer than "
	                "twice the silence bound ({} ms: connect_options::timeout, else "
	                "RPMEM_TIMEOUT), while its session lived",
	                call, std::chrono::duration<double, std::milli>(waited).count(),
	                bound.count()));
}

// ---------------------------------------------------------------------------------------------
// synchronous mode

namespace
{

/** Ranges a lane keeps for a replica that may be lost before its drain (then merged). */
constexpr std::size_t max_flushed = 1024;

/** A call's wait for the remote replicas, for the watch of impl::call_bound: it waits on
 *  no replica until impl::waiting_on says which, and none after its destruction
 *  (impl::lane_waits, when the watch runs). */
class call_stamp
{
public:
	call_stamp(replicated_pool::impl &d, unsigned lane, const char *call)
	    : w_(d.lane_waits ? &d.lane_waits[lane] : nullptr)
	{
		if (w_)
			w_->call.store(call, std::memory_order_relaxed);
	}
	~call_stamp()
	{
		if (w_)
			w_->since.store(0, std::memory_order_relaxed);
	}
	call_stamp(const call_stamp &) = delete;
	call_stamp &operator=(const call_stamp &) = delete;

private:
	replicated_pool::impl::lane_wait *w_;
};

/** Every call reaches every replica in sync before it returns, on the calling thread's lane. */
class synchronous_mode final : public replication_mode
{
public:
	explicit synchronous_mode(replicated_pool::impl &d) : d_(d) {}

	void persist(range r) override
	{
		// The replicas still in sync get the range even when the call is going to fail
		// because one is lost: then resync() of the lost one is all it takes to be whole.
		// A lost one gets it in its dirty map (also when this very call lost it), unless
		// it is being caught up and the range went to it directly.
		d_.with_lane([&](unsigned lane) {
			call_stamp waiting(d_, lane, "persist");
			d_.remote_all(
			    "replicated_pool::persist",
			    [&](remote_replica &x) {
				    d_.waiting_on(lane, x);
				    x.rp->persist_post(r.offset, r.length, lane);
			    },
			    [&](remote_replica &x) {
				    d_.waiting_on(lane, x);
				    x.rp->complete(lane);
			    },
			    [&] { d_.track_lost(r, d_.forward(r, lane)); });
			d_.check_not_lost("replicated_pool::persist");
		});
	}

	void flush(range r) override
	{
		// Posting a write returns at once, unless the lane must first reap what it posted
		// before (a full queue, a drain in flight): that waits on the replica, and is
		// bounded as persist and drain are. On the thread's lane: its drain() drains it,
		// and a replica lost before then gets it in its dirty map.
		d_.with_lane([&](unsigned lane) {
			call_stamp waiting(d_, lane, "flush");
			for (auto &x : d_.remotes) {
				if (!d_.active(x))
					continue;
				try {
					d_.waiting_on(lane, x);
					x.rp->flush(r.offset, r.length, lane,
					            client::flush_relaxed);
				} catch (const std::exception &) {
					// The drain that follows reports it through the failure
					// policy.
				}
			}
			auto &flushed = d_.lane_flushed[lane];
			if (flushed.size() >= max_flushed) { // bounded: one range over them all
				auto all = flushed.front();
				for (const auto &f : flushed)
					all = {
					    std::min(all.offset, f.offset),
					    std::max(all.offset + all.length, f.offset + f.length) -
					        std::min(all.offset, f.offset)};
				flushed.assign(1, all);
			}
			flushed.push_back(r);
			d_.track_lost(r);
		});
	}

	void drain() override
	{
		d_.with_lane([&](unsigned lane) {
			call_stamp waiting(d_, lane, "drain");
			d_.remote_all(
			    "replicated_pool::drain",
			    [&](remote_replica &x) {
				    d_.waiting_on(lane, x);
				    x.rp->drain_post(lane);
			    },
			    [&](remote_replica &x) {
				    d_.waiting_on(lane, x);
				    x.rp->complete(lane);
			    },
			    [&] {
				    for (const auto &f : d_.lane_flushed[lane])
					    d_.track_lost(f);
			    });
			d_.lane_flushed[lane].clear();
			d_.check_not_lost("replicated_pool::drain");
		});
	}

	// What was persisted before the call is on every replica in sync already.
	void barrier() override { d_.check_not_lost("replicated_pool::barrier"); }
	void finish() override
	{
		if (may_fall_behind())
			d_.clear_behind_marks();
	}
	replicated_pool::lag_info lag() const override { return {}; }
	void replicas_back() override {}
	/** Under failure_policy::degrade a replica may miss persists (while lost): marked from
	 *  open until a clean close, so it is never taken as current meanwhile. */
	bool may_fall_behind() const override
	{
		return d_.opts.on_failure == replicated_pool::failure_policy::degrade;
	}

private:
	replicated_pool::impl &d_;
};

} // namespace

std::unique_ptr<replication_mode> make_synchronous_mode(replicated_pool::impl &d)
{
	return std::make_unique<synchronous_mode>(d);
}

} // namespace rpmem
