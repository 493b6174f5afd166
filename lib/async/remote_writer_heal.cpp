// SPDX-License-Identifier: BSD-3-Clause
// remote_writer's outage side: a failed session ends, the replicator and the calls record what
// the replica misses, the healer thread reconnects (pauses doubling up to
// resilient_timing::max_delay) and catches the replica up from the master's memory in rounds
// while the application goes on; the last round holds the calls and the replicator, so that the
// replica is a prefix of the persists again when it is back in sync. After RPMEM_RECONNECT_TIMEOUT
// the policy decides: lost (continue: the healer keeps trying) or failed (fail: every call fails).
#include "async/remote_writer.hpp"
#include "async/remote_writer_sink.hpp"

#include "client/deadline_guard.hpp"
#include "client/exit_guard.hpp"
#include "client/fresh_blocks.hpp"
#include "client/healer_loop.hpp"
#include "client/log.hpp"
#include "client/resilient_pool_timing.hpp"
#include "pmdk/pool_header.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <optional>

namespace rpmem::async
{

using namespace client::resilient_timing;

void remote_writer::set_state(state s, const std::string &why)
{
	const state was = state_.exchange(s);
	if (was != s)
		client::log(s == state::closed ? 3 : 1,
		            "asynchronous replication to {}:{}: replica {} ({})", cfg_.place.target,
		            cfg_.place.descriptor, client::name(s), why);
	cv_.notify_all();
	if (auto *e = exported())
		e->state_changed();
}

void remote_writer::connection_failed(std::uint64_t epoch, const rpmem::error &e)
{
	std::lock_guard l(mu_);
	if (epoch_.load() != epoch || state_.load() != state::in_sync)
		return; // seen first by the replicator, a call or the healer
	outage_start_ = clock_type::now();
	cause_ = e.message();
	rp_->abandon(); // its rpmemd ends and gives the pool up for the next session
	set_state(state::reconnecting, cause_);
	if (cfg_.reconnect_timeout.count() == 0)
		give_up(cause_);
}

void remote_writer::give_up(const std::string &why)
{
	if (cfg_.keep_going) {
		set_state(
		    state::lost,
		    fmt::format("no session for {:.0f} ms (RPMEM_RECONNECT_TIMEOUT): going on "
		                "without it (RPMEM_ASYNC_ON_FAILURE=continue), its changes "
		                "recorded to catch up when it is back; last reason: {}",
		                ms_since(outage_start_), why));
		return;
	}
	failure_ = rpmem::error(
	    ECONNRESET,
	    fmt::format("{}:{}: the replica has been away for {:.0f} ms, longer than "
	                "RPMEM_RECONNECT_TIMEOUT, and RPMEM_ASYNC_ON_FAILURE=fail: {}",
	                cfg_.place.target, cfg_.place.descriptor, ms_since(outage_start_), why));
	set_state(state::failed, why);
}

void remote_writer::install(std::unique_ptr<client::remote_pool> rp)
{
	{
		std::lock_guard g(sink_->mu);
		std::lock_guard l(mu_);
		std::lock_guard r(rp_mu_);
		earlier_ += rp_->report().stats;
		std::swap(rp_, rp);
		epoch_.fetch_add(1);
	}
	rp.reset(); // the old session, abandoned already: ends at once
}

/** The replica as a catch-up's destination: marked as not whole while blocks move (they come
 *  from the master's memory in no order of the persists), the mark cleared by the last round,
 *  which the replicator waits for; "possibly behind" stays until a clean close. */
class remote_writer::catch_up_target final : public client::sync_destination
{
public:
	explicit catch_up_target(remote_writer &w) : w_(w) {}
	void mark() override { set(true); }
	void move(std::uint64_t offset, std::uint64_t length) override
	{
		w_.rp_->persist(offset, length, 0, 0);
	}
	void clear() override { set(false); }

private:
	void set(bool rebuilding)
	{
		control::pool_attr a;
		{
			std::lock_guard l(w_.mu_);
			a = w_.attr_;
		}
		if (!w_.cfg_.marked || a.is_zero())
			return; // no header to mark
		const auto wire =
		    pmdk::with_rebuilding_mark(pmdk::with_behind_mark(a, true), rebuilding);
		w_.rp_->set_attr(&wire);
	}
	remote_writer &w_;
};

bool remote_writer::catch_up()
{
	const auto start = clock_type::now();
	{
		std::lock_guard l(mu_);
		set_state(state::catching_up, fmt::format("{} bytes to go", dirty_.bytes()));
	}
	catch_up_target target(*this);
	client::counted_moves replica(target, caught_up_);
	client::fresh_blocks dest(replica, dirty_);
	// Every block a round took, once: what changed from the loss until the replica is back.
	client::dirty_map changed(dirty_.pool_size(), dirty_.block());
	std::vector<client::byte_span> taken;
	std::uint64_t previous = 0;
	int round = 0;
	// The round before the one next() plans: when it began and what it moved (blocks
	// written again meanwhile are skipped, left to a later round: its rate is what moved).
	auto round_start = start;
	std::uint64_t moved_before = 0;
	client::slow_last_round slow_round; // said once in sync
	clock_type::time_point held_from{};
	std::unique_lock held(sink_->mu, std::defer_lock); // the last round holds the replicator
	bool gate_closed = false;
	struct reopen_gate {
		client::call_gate &g;
		const bool &closed;
		~reopen_gate()
		{
			if (closed)
				g.open(); // after the state says where the calls go now
		}
	} reopen{gate_, gate_closed};
	// Under continue the held round is bounded as a batch is (config::lag.congestion): past
	// it the session fails, the round with it, and the calls go on; the replica is slow.
	std::optional<client::deadline_guard> hold_bound;
	try {
		client::apply_sync_rounds(
		    dest,
		    [&]() -> std::vector<client::byte_span> {
			    if (held.owns_lock())
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
			    // A replica dropped for being too slow: by its measured rate, so that
			    // the calls are held no longer than the lag bound would hold them.
			    const bool last =
			        slow_.load()
			            ? slow_round.decide(bytes, dest.moved - moved_before,
			                                now - round_start, cfg_.lag.max_lag_time)
			            : client::last_catch_up_round(bytes, previous, round,
			                                          cfg_.catch_up_hold_bytes);
			    round_start = now;
			    moved_before = dest.moved;
			    if (last) {
				    // The calls that record wait from here, and the persists queued
				    // before the replica went away are recorded first: a range
				    // recorded by a call must not move before an older snapshot of
				    // it that the replicator would send after. Then the replicator
				    // waits too: nothing is recorded meanwhile, and the persists it
				    // sends after go to a replica that holds every block they do
				    // not cover as the master had it then.
				    held_from = clock_type::now();
				    gate_.close();
				    gate_closed = true;
				    hold_bound.emplace(cfg_.lag.congestion, [this] {
					    if (closing_.load())
						    return; // close waits for the round: it holds
						            // no call
					    std::lock_guard r(rp_mu_);
					    rp_->give_up(ETIMEDOUT,
					                 held_too_long(cfg_.lag.congestion));
				    });
				    pipe_->barrier();
				    held.lock();
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
		    // Cleared (and the attributes set while it was away given) even when
		    // nothing moved.
		    {.other_writes = true});
		hold_bound.reset();
	} catch (const std::exception &e) {
		hold_bound.reset();
		if (gate_closed)
			slow_.store(true); // its next catch-up holds the calls by its rate
		dirty_.mark(taken);        // may not have landed
		moving_.store(0, std::memory_order_relaxed);
		std::lock_guard l(mu_);
		rp_->abandon();
		outage_start_ = clock_type::now();
		cause_ = e.what();
		const auto why = gate_closed
		                     ? fmt::format("catching up failed in its last round, the "
		                                   "calls held for {:.1f} ms: {}",
		                                   ms_since(held_from), e.what())
		                     : fmt::format("catching up failed: {}", e.what());
		// Away before the replicator goes on: it records from now on.
		set_state(cfg_.keep_going ? state::lost : state::reconnecting, why);
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
	                      "only{})",
	                      dest.moved, round, ms_since(start), ms_since(held_from),
	                      changed.bytes(), dest.skipped, slow_round.note()));
	return true;
}

void remote_writer::heal_loop()
{
	std::unique_lock l(mu_);
	client::run_healer(
	    l, cv_, stop_, state_, cfg_.reconnect_delay,
	    [&] {
		    client::reconnect_if_gone(l, *rp_, [&](const rpmem::error &why) {
			    connection_failed(epoch_.load(), why);
		    });
	    },
	    [&](std::chrono::milliseconds delay) -> std::optional<clock_type::time_point> {
		    const auto deadline = outage_start_ + cfg_.reconnect_timeout;
		    if (state_.load() == state::reconnecting && clock_type::now() >= deadline) {
			    give_up(cause_);
			    return std::nullopt;
		    }
		    const auto attr = attr_;
		    l.unlock();
		    std::string why;
		    auto rp = client::reopen(cfg_.place, 1, cfg_.marked ? &attr : nullptr,
		                             cfg_.marked, &why);
		    if (rp) {
			    install(std::move(rp));
			    catch_up(); // in sync, or away again: the state says which
			    l.lock();
			    return std::nullopt;
		    }
		    l.lock();
		    client::log(
		        2,
		        "asynchronous replication to {}:{}: reconnect attempt failed {:.0f} "
		        "ms into the outage: {}; next in {} ms",
		        cfg_.place.target, cfg_.place.descriptor, ms_since(outage_start_), why,
		        delay.count());
		    cause_ = why;
		    auto wake = clock_type::now() + delay;
		    if (state_.load() == state::reconnecting)
			    wake = std::min(wake, deadline); // then give_up, above
		    return wake;
	    });
}

} // namespace rpmem::async
