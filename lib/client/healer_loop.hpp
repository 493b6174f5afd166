// SPDX-License-Identifier: BSD-3-Clause
// The loop of librpmem's healer threads, one for each pool that outlives its sessions:
// resilient_pool's (resilient_heal.cpp) and the asynchronous writer's (lib/async). Internal.
#pragma once

#include "client/exit_guard.hpp"
#include "client/replica_state.hpp"
#include "client/resilient_pool_timing.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

namespace rpmem::client
{

/**
 * Runs a healer on the pool's mutex (held in `l` on entry and exit), its condition variable,
 * its stop flag and its state, until `stop`:
 * - in sync, every resilient_timing::idle_check it calls idle() (l held), which looks at an
 *   idle session's keep-alive verdict and starts a reconnect when it saw rpmemd gone;
 * - reconnecting or lost, it calls attempt(delay) (l held; it may let it go and take it again),
 *   which returns when to try again, or nothing to look at the state again at once; the pause
 *   starts at first_delay, doubles after each failed attempt up to resilient_timing::max_delay,
 *   and starts again once the replica is in sync;
 * - in any other state it waits for the next change.
 * It works only inside the exit guard (exit waits for work in flight, then runs the destructors
 * that work would touch: the log, the metrics exporter, OpenSSL's locks) and sleeps outside it,
 * so exit does not wait for a sleeping healer; one that wakes while the process exits parks.
 */
template <class Idle, class Attempt>
void run_healer(std::unique_lock<std::mutex> &l, std::condition_variable &cv, const bool &stop,
                const std::atomic<replica_state> &state, std::chrono::milliseconds first_delay,
                Idle &&idle, Attempt &&attempt)
{
	using namespace resilient_timing;
	auto &guard = exit_guard::get();
	if (!guard.enter())
		return;
	auto sleep = [&](auto &&wait) {
		if (guard.sleep(wait))
			return true;
		cv.wait(l, [&] { return stop; }); // parked: the process is exiting
		return false;
	};
	auto delay = first_delay;
	while (!stop) {
		const replica_state st = state.load();
		if (st == replica_state::in_sync) {
			delay = first_delay;
			if (!sleep([&] { cv.wait_for(l, idle_check); }))
				return;
			if (!stop && state.load() == replica_state::in_sync)
				idle();
			continue;
		}
		if (st != replica_state::reconnecting && st != replica_state::lost) {
			if (!sleep([&] { cv.wait(l, [&] { return stop || state.load() != st; }); }))
				return;
			continue;
		}
		const std::optional<clock_type::time_point> next = attempt(delay);
		if (!next)
			continue;
		if (!sleep([&] { cv.wait_until(l, *next, [&] { return stop; }); }))
			return;
		delay = std::min(delay * 2,
		                 std::chrono::duration_cast<std::chrono::milliseconds>(max_delay));
	}
	guard.leave();
}

/** run_healer's idle() for a pool whose session `rp` tells when its rpmemd is gone (its
 *  keep-alive saw it): failed(why), with `l` let go, so that an idle session is reconnected
 *  now, not at the next call. */
template <class Session, class Failed>
void reconnect_if_gone(std::unique_lock<std::mutex> &l, const Session &rp, Failed &&failed)
{
	if (auto gone = rp.lost()) {
		l.unlock();
		failed(*gone);
		l.lock();
	}
}

} // namespace rpmem::client
