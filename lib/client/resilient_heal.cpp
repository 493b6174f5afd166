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
	// mu_ held. The calls are held at the gate while every lane's flushes go to the map.
	if (cfg_.keep_going) {
		gate_.close();
		for (unsigned i = 0; i < nlanes_; ++i) {
			dirty_.mark(lanes_[i].flushed);
			lanes_[i].flushed.clear();
		}
		set_state(
		    state::lost,
		    fmt::format("no session for {:.0f} ms (RPMEM_RECONNECT_TIMEOUT): going on "
		                "without it, its changes recorded to catch up later; last "
		                "reason: {}",
		                ms_since(outage_start_), why));
		gate_.open();
		return;
	}
	failure_ = rpmem::error(
	    ECONNRESET, fmt::format("{}:{}: the replica has been away for {:.0f} ms, longer than "
	                            "RPMEM_RECONNECT_TIMEOUT, and RPMEM_ON_OUTAGE=fail: {}",
	                            cfg_.target, cfg_.descriptor, ms_since(outage_start_), why));
	set_state(state::failed, why);
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
			    if (last_catch_up_round(bytes, previous, ++round,
			                            cfg_.catch_up_hold_bytes)) {
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
	std::lock_guard l(mu_);
	outage_start_ = {};
	set_state(state::in_sync,
	          fmt::format("caught up: {} bytes moved in {} round(s), {:.0f} ms, the calls "
	                      "held for the last {:.1f} ms ({} bytes of blocks changed since it "
	                      "was lost; {} bytes written again meanwhile went in a later round "
	                      "only; {} bytes of persists went to it directly meanwhile)",
	                      dest.moved, round, ms_since(start), ms_since(held_from),
	                      changed.bytes(), dest.skipped,
	                      fwd_.bytes.load(std::memory_order_relaxed)));
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
