// SPDX-License-Identifier: BSD-3-Clause
#include "client/resilient_pool.hpp"
#include "client/resilient_pool_timing.hpp"

#include "client/exit_guard.hpp"
#include "client/log.hpp"
#include "client/replica_sync.hpp"
#include "pmdk/pool_header.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

namespace rpmem::client
{

using namespace resilient_timing;

namespace
{

/** Relaxed flushes a lane keeps for a new session before one is drained anyway. */
constexpr std::size_t max_flushed = 1024;

/** The call forwarded while catching up when it has nothing to send (length 0). */
void nothing(remote_pool &) {}

/** A failure that is about the call, not the replica: the session is fine. */
bool about_the_call(const rpmem::error &e)
{
	return e.errnum() == EINVAL;
}

/** Failures of a first connect that say the replica host is away (not a missing rpmemd, a
 *  pool in use or a wrong name), worth another attempt within the reconnect timeout. */
bool transient(const rpmem::error &e)
{
	switch (e.errnum()) {
	case ECONNREFUSED:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case ETIMEDOUT:
		return true;
	default:
		return false;
	}
}

/** f() until it succeeds, retrying transient failures until `timeout` has passed. */
template <class F>
auto with_retries(const resilient_pool::config &c, const char *what, F &&f) -> decltype(f())
{
	const auto deadline = clock_type::now() + c.reconnect_timeout;
	auto delay = c.reconnect_delay;
	for (;;) {
		try {
			return f();
		} catch (const rpmem::error &e) {
			if (!transient(e) || clock_type::now() + delay >= deadline)
				throw;
			log(2, "{} {}:{}: {}; trying again in {} ms (RPMEM_RECONNECT_TIMEOUT)",
			    what, c.target, c.descriptor, e.message(), delay.count());
		}
		std::this_thread::sleep_for(delay);
		delay = std::min(delay * 2, max_delay);
	}
}

} // namespace

resilient_pool::resilient_pool(const config &c, std::unique_ptr<remote_pool> rp, unsigned nlanes,
                               const control::pool_attr &attr)
    : cfg_(c), nlanes_(nlanes), headers_(rp->has_headers()), attr_(attr), rp_(std::move(rp)),
      lanes_(new lane_state[nlanes]), dirty_(c.size, dirty_map::block_for(c.size))
{
	exit_guard::install();
	healer_ = std::thread([this] { heal_loop(); });
	if (watched())
		watch_ = std::thread([this] { watch_loop(); });
}

resilient_pool::~resilient_pool()
{
	try {
		close();
	} catch (const std::exception &) {
		// Destructors never throw; close() reported nothing the caller asked for.
	}
	stop_export();
}

std::unique_ptr<resilient_pool> resilient_pool::create(const config &c, unsigned *nlanes,
                                                       const control::pool_attr *attr)
{
	const bool headers = attr && !attr->is_zero();
	const auto wire =
	    pmdk::with_behind_mark(headers ? *attr : control::pool_attr{}, c.keep_going && headers);
	auto rp = with_retries(c, "creating", [&] {
		unsigned n = *nlanes;
		auto p = remote_pool::create(c.target, c.descriptor, c.addr, c.size, &n,
		                             headers ? &wire : nullptr, c.conn);
		*nlanes = n;
		return p;
	});
	const unsigned lanes = *nlanes;
	return std::unique_ptr<resilient_pool>(
	    new resilient_pool(c, std::move(rp), lanes, headers ? *attr : control::pool_attr{}));
}

std::unique_ptr<resilient_pool> resilient_pool::open(const config &c, unsigned *nlanes,
                                                     control::pool_attr *attr_out)
{
	control::pool_attr a;
	auto rp = with_retries(c, "opening", [&] {
		unsigned n = *nlanes;
		auto p = remote_pool::open(c.target, c.descriptor, c.addr, c.size, &n,
		                           attr_out ? &a : nullptr, c.conn);
		*nlanes = n;
		return p;
	});
	const bool rebuilding = pmdk::marked_rebuilding(a);
	const bool marked = pmdk::marked_behind(a) || rebuilding;
	if (rebuilding && (!c.keep_going || c.size <= probe_bytes))
		throw rpmem::error(
		    ESTALE,
		    fmt::format(
		        "the replica {} on {} was being caught up from its master when its "
		        "asynchronous writer stopped: it holds no consistent pool (its pool "
		        "header is marked so). Bring it in line from the master with `rpmem "
		        "sync POOLSET`",
		        c.descriptor, c.target));
	if (marked && (!c.keep_going || c.size <= probe_bytes))
		throw rpmem::error(
		    ESTALE,
		    fmt::format(
		        "the replica {} on {} may be behind its master: its writer did "
		        "not close it cleanly while replicating asynchronously or going "
		        "on without it (RPMEM_REPLICATION=async, RPMEM_ON_OUTAGE=continue), "
		        "so it can lack the last persists (its pool header is marked so). "
		        "Bring it up to date with `rpmem sync POOLSET`, or, if the master "
		        "is lost, make it the master with `rpmem promote --force`",
		        c.descriptor, c.target));
	const auto clean = pmdk::with_rebuilding_mark(pmdk::with_behind_mark(a, false), false);
	if (rp->has_headers() && c.keep_going) {
		// Marked from now until a clean close: a replica left behind by an outage is never
		// taken as current meanwhile.
		const auto wire = pmdk::with_behind_mark(a, true);
		rp->set_attr(&wire);
	}
	if (marked) // its last writer went on without it
		bring_in_line(*rp, static_cast<const std::uint8_t *>(c.addr), c.size, clean,
		              rebuilding, fmt::format("{}:{}", c.target, c.descriptor));
	if (attr_out)
		*attr_out = clean;
	const unsigned lanes = *nlanes;
	return std::unique_ptr<resilient_pool>(new resilient_pool(c, std::move(rp), lanes, clean));
}

pool_calls::shape resilient_pool::contract() const
{
	return {cfg_.size, nlanes_, headers_};
}

pool_report resilient_pool::report() const
{
	pool_report r;
	{
		std::lock_guard g(rp_mu_);
		r = rp_ ? rp_->report() : last_;
		r.stats += earlier_; // counters: the pool's, not one session's
	}
	r.lanes = nlanes_;
	// The metrics file's words (stats_export.hpp): "connected" while in sync.
	const auto st = current();
	r.state = st == state::in_sync ? "connected" : name(st);
	r.bytes_to_go = bytes_to_go();
	return r;
}

void resilient_pool::set_state(state s, const std::string &why)
{
	const state was = state_.exchange(s);
	// A transition of an outage is said at the default level (a terminal, the journal, else
	// syslog); a clean close is not news.
	if (was != s)
		log(s == state::closed ? 3 : 1, "{}:{}: replica {} ({})", cfg_.target,
		    cfg_.descriptor, name(s), why);
	cv_.notify_all();
	if (auto *e = exported())
		e->state_changed();
}

template <class G>
bool resilient_pool::forward(unsigned lane, std::size_t offset, std::size_t length, G &&g)
{
	// A replica dropped for being slow is sent no call while it catches up: the calls would
	// wait for it again.
	if (slow_.load() || !fwd_.window.may_forward(offset, length))
		return false;
	std::optional<lane_turns::turn> l0;
	if (lane == 0)
		l0.emplace(fwd_.lane0.take());
	try {
		g(*rp_);
	} catch (const rpmem::error &e) {
		if (about_the_call(e))
			throw;
		return false; // the catch-up meets the same failure and the replica is lost again
	}
	fwd_.bytes.fetch_add(length, std::memory_order_relaxed);
	return true;
}

template <class F, class G>
void resilient_pool::on_replica(unsigned lane, std::size_t offset, std::size_t length,
                                when_away away, F &&f, G &&g)
{
	// The call's wait, however it is spent, for the watch of config::call_timeout.
	struct stamp {
		std::atomic<clock_type::rep> *at;
		~stamp()
		{
			if (at)
				at->store(0, std::memory_order_relaxed);
		}
	} waiting{watched() ? &lanes_[lane].waiting : nullptr};
	if (waiting.at)
		waiting.at->store(stamp_now(), std::memory_order_relaxed);
	for (;;) {
		std::optional<rpmem::error> failed;
		std::uint64_t epoch = 0;
		state st;
		{
			call_gate::pass in(gate_);
			st = state_.load();
			switch (st) {
			case state::in_sync: {
				epoch = epoch_.load();
				auto &ln = lanes_[lane];
				try {
					if (ln.epoch !=
					    epoch) { // a new session: the lane's flushes again
						for (const auto &r : ln.flushed)
							rp_->flush(r.begin, r.size(), lane,
							           flush_relaxed);
						ln.epoch = epoch;
					}
					f(*rp_);
					return;
				} catch (const rpmem::error &e) {
					if (about_the_call(e))
						throw;
					failed = e;
				}
				break;
			}
			case state::catching_up:
				if (away == when_away::record && forward(lane, offset, length, g))
					return;
				[[fallthrough]];
			case state::lost:
				if (away == when_away::refuse)
					throw rpmem::error(
					    ENODATA,
					    fmt::format(
					        "{}:{}: the replica is {} ({}): it cannot be read "
					        "until it has caught up",
					        cfg_.target, cfg_.descriptor, name(st), cause_));
				dirty_.mark(offset, length);
				return;
			case state::failed:
				throw *failure_;
			case state::closed:
				throw rpmem::error(EINVAL, "the pool is closed");
			case state::reconnecting:
				break;
			}
		}
		if (failed)
			connection_failed(epoch, *failed);
		wait_while(state::reconnecting);
	}
}

void resilient_pool::do_persist(std::size_t offset, std::size_t length, unsigned lane)
{
	// Catching up too, a persist waits for the replica: sent without waiting, it could land
	// after a later persist of the same bytes on another lane (architecture.md).
	auto persist = [&](remote_pool &rp) { rp.persist(offset, length, lane, 0); };
	on_replica(lane, offset, length, when_away::record, persist, persist);
}

void resilient_pool::do_flush(std::size_t offset, std::size_t length, unsigned lane)
{
	on_replica(
	    lane, offset, length, when_away::record,
	    [&](remote_pool &rp) {
		    auto &ln = lanes_[lane];
		    if (ln.flushed.size() >= max_flushed) { // a drain earlier than asked is allowed
			    rp.drain(lane, 0);
			    ln.flushed.clear();
		    }
		    rp.flush(offset, length, lane, flush_relaxed);
		    ln.flushed.push_back({offset, offset + length});
	    },
	    // Catching up: made durable at once (earlier than asked: allowed), so no lane keeps
	    // relaxed flushes across the step to in sync.
	    [&](remote_pool &rp) { rp.persist(offset, length, lane, 0); });
}

void resilient_pool::do_drain(unsigned lane)
{
	on_replica(
	    lane, 0, 0, when_away::record,
	    [&](remote_pool &rp) {
		    rp.drain(lane, 0);
		    lanes_[lane].flushed.clear();
	    },
	    nothing); // catching up: the lane's flushes went as persists or are recorded
}

void resilient_pool::do_deep_persist(std::size_t offset, std::size_t length, unsigned lane)
{
	auto deep = [&](remote_pool &rp) { rp.deep_persist(offset, length, lane); };
	on_replica(lane, offset, length, when_away::record, deep, deep);
}

void resilient_pool::do_read(void *buf, std::size_t offset, std::size_t length, unsigned lane)
{
	on_replica(
	    lane, offset, length, when_away::refuse,
	    [&](remote_pool &rp) { rp.read(buf, offset, length, lane); }, nothing);
}

void resilient_pool::do_set_attr(const control::pool_attr *attr)
{
	const auto a = attr ? *attr : control::pool_attr{};
	const auto wire = pmdk::with_behind_mark(a, cfg_.keep_going && !a.is_zero());
	on_replica(
	    0, 0, 0, when_away::record,
	    [&](remote_pool &rp) { rp.set_attr(a.is_zero() ? nullptr : &wire); }, nothing);
	attr_ = a; // a replica away gets it when it has caught up
}

void resilient_pool::do_close()
{
	{
		std::unique_lock l(mu_);
		if (stop_)
			return;
		// A replica being reconnected or caught up is waited for: a clean close then leaves
		// it current and unmarked. A reconnect ends by itself at RPMEM_RECONNECT_TIMEOUT; a
		// catch-up is waited for as long as it moves bytes within each such time. One lost
		// stays lost.
		wait_for_progress(l, cv_, cfg_.reconnect_timeout, caught_up_,
		                  [&] { return state_.load(); });
		stop_ = true;
		cv_.notify_all();
	}
	healer_.join();
	if (watch_.joinable())
		watch_.join();
	const state st = state_.load();
	std::unique_ptr<remote_pool> rp;
	{
		std::lock_guard l(mu_);
		gate_.close();
		{
			std::lock_guard g(rp_mu_);
			last_ = rp_->report();
			rp = std::move(rp_);
		}
		set_state(state::closed, "the pool is closed");
		gate_.open();
	}
	if (st != state::in_sync) {
		rp->abandon();
		throw rpmem::error(
		    st == state::failed ? ECONNRESET : EIO,
		    fmt::format("{}:{}: closed with the replica {} ({} bytes behind): its pool "
		                "header stays marked possibly behind; `rpmem sync POOLSET` brings "
		                "it back",
		                cfg_.target, cfg_.descriptor, name(st), bytes_to_go()));
	}
	if (headers_ && cfg_.keep_going) {
		const auto clean = pmdk::with_behind_mark(attr_, false);
		rp->set_attr(&clean); // every persist is on the replica: no longer behind
	}
	rp->close();
}

} // namespace rpmem::client
