// SPDX-License-Identifier: BSD-3-Clause
// resilient_pool's outage side: a failed connection ends the session, the healer thread
// reconnects (pauses doubling up to resilient_timing::max_delay), resends what the lanes had
// flushed, catches the replica up in rounds with the calls going on and their persists sent to
// it directly (the last round with them held), or gives up after RPMEM_RECONNECT_TIMEOUT (lost
// under continue, failed under fail).
#include "client/resilient_pool.hpp"
#include "client/resilient_pool_timing.hpp"

#include "client/exit_guard.hpp"
#include "client/fresh_blocks.hpp"
#include "client/healer_loop.hpp"
#include "client/log.hpp"
#include "client/reopen.hpp"
#include "client/replica_sync.hpp"
#include "client/windowed_moves.hpp"
#include "pmdk/pool_header.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

namespace rpmem::client
{

using namespace resilient_timing;

void resilient_pool::connection_failed(std::uint64_t epoch, const rpmem::error &e)
{
	std::lock_guard l(mu_);
	if (epoch_.load() != epoch || state_.load() != state::in_sync)
		return; // another call saw it first
	outage_start_ = clock_type::now();
	cause_ = e.message();
	rp_->abandon(); // its rpmemd ends and gives the pool up for the next session
	if (given_up_epoch_ == epoch) {
		// The watch gave the session up, a call having waited too long on it: the calls
		// go on now, not after a reconnect.
		go_on_without(cause_);
		return;
	}
	set_state(state::reconnecting, cause_);
}

void resilient_pool::wait_while(state from)
{
	std::unique_lock l(mu_);
	const auto deadline = outage_start_ + cfg_.reconnect_timeout;
	cv_.wait_until(l, deadline, [&] { return state_.load() != from; });
	if (state_.load() == state::reconnecting && clock_type::now() >= deadline)
		give_up(cause_);
}

void resilient_pool::give_up(const std::string &why)
{
	// mu_ held.
	if (cfg_.keep_going) {
		go_on_without(
		    fmt::format("no session for {:.0f} ms (RPMEM_RECONNECT_TIMEOUT): going on "
		                "without it, its changes recorded to catch up later; last "
		                "reason: {}",
		                ms_since(outage_start_), why));
		return;
	}
	failure_ = rpmem::error(
	    ECONNRESET, fmt::format("{}:{}: the replica has been away for {:.0f} ms, longer than "
	                            "RPMEM_RECONNECT_TIMEOUT, and RPMEM_ON_OUTAGE=fail: {}",
	                            cfg_.target, cfg_.descriptor, ms_since(outage_start_), why));
	set_state(state::failed, why);
}

void resilient_pool::go_on_without(const std::string &why)
{
	// The calls are held at the gate while every lane's flushes go to the map.
	gate_.close();
	for (unsigned i = 0; i < nlanes_; ++i) {
		dirty_.mark(lanes_[i].flushed);
		lanes_[i].flushed.clear();
	}
	set_state(state::lost, why);
	gate_.open();
}

void resilient_pool::call_overdue(clock_type::duration waited)
{
	const double ms = std::chrono::duration<double, std::milli>(waited).count();
	switch (state_.load()) {
	case state::in_sync:
	case state::catching_up: {
		// The call waits on the session (or at the gate a catch-up's last round holds):
		// failed, the session ends the way a dead one does, and the calls go on without
		// the replica (connection_failed, or the catch-up's failure).
		const auto epoch = epoch_.load();
		if (given_up_epoch_ == epoch)
			return; // given up already: its calls are failing
		given_up_epoch_ = epoch;
		slow_.store(true);
		std::lock_guard g(rp_mu_);
		rp_->give_up(ETIMEDOUT,
		             fmt::format("the replica is too slow: a call has waited {:.0f} ms for "
		                         "it, longer than RPMEM_CALL_TIMEOUT ({} ms): going on "
		                         "without it (RPMEM_ON_OUTAGE=continue), its changes "
		                         "recorded to catch up once it keeps up",
		                         ms, cfg_.call_timeout.count()));
		return;
	}
	case state::reconnecting:
		go_on_without(fmt::format(
		    "a call has waited {:.0f} ms for it, longer than RPMEM_CALL_TIMEOUT ({} ms), "
		    "{:.0f} ms into the outage: going on without it, its changes recorded to catch "
		    "up later, the reconnect attempts going on; last reason: {}",
		    ms, cfg_.call_timeout.count(), ms_since(outage_start_), cause_));
		return;
	default:
		return; // lost, failed or closed: no call waits for the replica
	}
}

void resilient_pool::watch_loop()
{
	const auto bound = cfg_.call_timeout;
	const auto tick = watch_tick(bound);
	auto &guard = exit_guard::get();
	std::unique_lock l(mu_);
	while (!stop_) {
		cv_.wait_for(l, tick, [&] { return stop_; });
		if (stop_)
			break;
		clock_type::rep oldest = 0;
		for (unsigned i = 0; i < nlanes_; ++i) {
			const auto w = lanes_[i].waiting.load(std::memory_order_relaxed);
			if (w && (!oldest || w < oldest))
				oldest = w;
		}
		if (!oldest)
			continue;
		const auto waited = stamp_age(oldest, clock_type::now());
		if (waited <= bound)
			continue;
		// Work that logs: inside the exit guard (exit_guard.hpp); parked once exiting.
		if (!guard.enter()) {
			cv_.wait(l, [&] { return stop_; });
			break;
		}
		call_overdue(waited);
		guard.leave();
	}
}

std::unique_ptr<remote_pool> resilient_pool::try_connect(std::string *why)
{
	return reopen({cfg_.target, cfg_.descriptor, cfg_.addr, cfg_.size, cfg_.conn}, nlanes_,
	              headers_ ? &attr_ : nullptr, cfg_.keep_going, why);
}

void resilient_pool::install(std::unique_ptr<remote_pool> rp)
{
	gate_.close();
	{
		std::lock_guard g(rp_mu_);
		std::swap(rp_, rp);
		if (rp)
			earlier_ += rp->report().stats;
	}
	epoch_.fetch_add(1);
	gate_.open();
	rp.reset(); // the old session, abandoned already: ends at once
}

void resilient_pool::push(const std::vector<byte_span> &ranges)
{
	replica_destination dest(*rp_, nullptr, nullptr);
	for (const auto &r : ranges)
		dest.move(r.begin, r.size());
}

bool resilient_pool::catch_up()
{
	const auto start = clock_type::now();
	{
		std::lock_guard l(mu_);
		set_state(state::catching_up, fmt::format("{} bytes to go", dirty_.bytes()));
	}
	const auto marked = pmdk::with_behind_mark(attr_, true);
	replica_destination replica(*rp_, &marked, &marked); // marked while the pool is open
	counted_moves counted(replica, caught_up_);
	windowed_moves windowed(counted, fwd_.window, fwd_.lane0);
	fresh_blocks dest(windowed, dirty_);
	fwd_.bytes.store(0, std::memory_order_relaxed);
	// Every block a round took, once: what changed from the loss until the replica is
	// current, the measure of what a catch-up must move at least.
	dirty_map changed(dirty_.pool_size(), dirty_.block());
	std::vector<byte_span> taken;
	std::uint64_t previous = 0;
	int round = 0;
	bool final_step = false;
	clock_type::time_point held_from{};
	// The round before the one next() plans: when it began and what it moved, the rate of a
	// replica dropped for being slow.
	auto round_start = start;
	std::uint64_t moved_before = 0;
	slow_last_round slow_round; // said once in sync
	try {
		apply_sync_rounds(
		    dest,
		    [&]() -> std::vector<byte_span> {
			    if (final_step)
				    return {};
			    {
				    std::lock_guard l(mu_);
				    if (stop_)
					    throw rpmem::error(ECANCELED, "the pool is closing");
			    }
			    taken = dirty_.take();
			    std::uint64_t bytes = 0;
			    for (const auto &r : taken)
				    bytes += r.size();
			    ++round;
			    const auto now = clock_type::now();
			    // A replica dropped for being slow: held for a round its measured rate
			    // says is short (a quarter of RPMEM_CALL_TIMEOUT), else another round
			    // with the calls going on, however many that takes.
			    const bool last =
			        slow_.load()
			            ? slow_round.decide(bytes, dest.moved - moved_before,
			                                now - round_start, cfg_.call_timeout / 4)
			            : last_catch_up_round(bytes, previous, round,
			                                  cfg_.catch_up_hold_bytes);
			    round_start = now;
			    moved_before = dest.moved;
			    if (last) {
				    // The last round, with the calls held: nothing changes
				    // meanwhile.
				    gate_.close();
				    held_from = clock_type::now();
				    final_step = true;
				    dest.skipping = false;
				    auto rest = dirty_.take();
				    taken.insert(taken.end(), rest.begin(), rest.end());
				    for (const auto &r : rest)
					    bytes += r.size();
			    }
			    previous = bytes;
			    changed.mark(taken);
			    moving_.store(bytes, std::memory_order_relaxed);
			    return taken;
		    },
		    {.found_marked = true});
	} catch (const rpmem::error &e) {
		dirty_.mark(taken); // may not have landed
		moving_.store(0, std::memory_order_relaxed);
		std::lock_guard l(mu_);
		rp_->abandon(); // calls waiting on the session fail now and record their ranges
		if (!final_step)
			gate_.close();
		outage_start_ = clock_type::now();
		cause_ = e.message();
		// Lost before the calls go on: none sends to the abandoned session after this.
		set_state(state::lost,
		          final_step ? fmt::format("catching up failed in its last round, the "
		                                   "calls held for {:.1f} ms: {}",
		                                   ms_since(held_from), e.message())
		                     : fmt::format("catching up failed: {}", e.message()));
		gate_.open();
		return false;
	}
	moving_.store(0, std::memory_order_relaxed);
	slow_.store(false);
	std::lock_guard l(mu_);
	outage_start_ = {};
	set_state(state::in_sync,
	          fmt::format("caught up: {} bytes moved in {} round(s), {:.0f} ms, the calls "
	                      "held for the last {:.1f} ms ({} bytes of blocks changed since it "
	                      "was lost; {} bytes written again meanwhile went in a later round "
	                      "only; {} bytes of persists went to it directly meanwhile{})",
	                      dest.moved, round, ms_since(start), ms_since(held_from),
	                      changed.bytes(), dest.skipped,
	                      fwd_.bytes.load(std::memory_order_relaxed), slow_round.note()));
	gate_.open();
	return true;
}

void resilient_pool::heal_loop()
{
	std::unique_lock l(mu_);
	run_healer(
	    l, cv_, stop_, state_, cfg_.reconnect_delay,
	    [&] {
		    reconnect_if_gone(l, *rp_, [&](const rpmem::error &why) {
			    connection_failed(epoch_.load(), why);
		    });
	    },
	    [&](std::chrono::milliseconds delay) -> std::optional<clock_type::time_point> {
		    l.unlock();
		    std::string why;
		    std::unique_ptr<remote_pool> rp = try_connect(&why);
		    if (rp) {
			    const auto attempt = ms_since(outage_start_);
			    install(std::move(rp));
			    l.lock();
			    ++reconnects_;
			    if (state_.load() == state::reconnecting) {
				    outage_start_ = {};
				    set_state(state::in_sync,
				              fmt::format("reconnected after {:.0f} ms", attempt));
				    return std::nullopt;
			    }
			    l.unlock();
			    catch_up();
			    l.lock();
			    return std::nullopt;
		    }
		    l.lock();
		    log(2,
		        "{}:{}: reconnect attempt failed {:.0f} ms into the outage: {}; next in {} "
		        "ms",
		        cfg_.target, cfg_.descriptor, ms_since(outage_start_), why, delay.count());
		    cause_ = why;
		    if (state_.load() == state::reconnecting &&
		        clock_type::now() >= outage_start_ + cfg_.reconnect_timeout)
			    give_up(why);
		    return clock_type::now() + delay;
	    });
}

} // namespace rpmem::client
