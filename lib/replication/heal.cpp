// SPDX-License-Identifier: BSD-3-Clause
// replicated_pool's healer (failure_policy::degrade, either mode): a thread that reconnects
// every lost remote replica by itself, attempts spaced out (doubling up to 2 s), and catches it up
// while the calls go on (impl::catch_up, resync.cpp). A replica lost at open, or one whose catch-up
// found it re-created, is compared by block checksums first; one lost in session is caught up from
// its dirty map alone.
#include "replication/replicated_pool_impl.hpp"

#include "client/exit_guard.hpp"
#include "client/log.hpp"

#include <algorithm>

namespace rpmem
{

using namespace replication;

namespace
{

using clock_type = std::chrono::steady_clock;

constexpr std::chrono::milliseconds first_delay{50};
constexpr std::chrono::milliseconds max_delay{2000};

} // namespace

void replicated_pool::impl::start_healer()
{
	start_watch(); // bounds the calls whether or not lost replicas come back by themselves
	// Asynchronous mode too: a replica being caught up from the master's memory is no prefix
	// of the persists, and its header says so while blocks move (catch_up marks it not
	// whole); the last round holds the replicator, after which it is a prefix again.
	if (opts.on_failure != failure_policy::degrade || !opts.reconnect || remotes.empty())
		return;
	client::exit_guard::install();
	healer = std::thread([this] { heal_loop(); });
}

void replicated_pool::impl::stop_healer() noexcept
{
	{
		std::lock_guard g(state_mu);
		heal_stop = true;
	}
	heal_cv.notify_all();
	if (healer.joinable())
		healer.join();
	stop_watch();
}

void replicated_pool::impl::heal_loop()
{
	std::vector<clock_type::time_point> next(remotes.size(), clock_type::time_point{});
	std::vector<std::chrono::milliseconds> delay(remotes.size(), first_delay);
	std::unique_lock g(state_mu);
	// As librpmem's healer (client/resilient_heal.cpp): it works only inside the exit guard
	// and sleeps outside it; woken while the process exits, it parks (exit destroys the log
	// and the metrics exporter its work would touch).
	auto &guard = client::exit_guard::get();
	if (!guard.enter())
		return;
	auto sleep = [&](auto &&wait) {
		if (guard.sleep(wait))
			return true;
		heal_cv.wait(g, [&] { return heal_stop; });
		return false;
	};
	while (!heal_stop) {
		// The lost replica whose next attempt comes first.
		std::size_t pick = remotes.size();
		for (std::size_t i = 0; i < remotes.size(); ++i)
			if (remotes[i].lost && !remotes[i].catching_up &&
			    (pick == remotes.size() || next[i] < next[pick]))
				pick = i;
		if (pick == remotes.size()) {
			if (!sleep([&] { heal_cv.wait(g); }))
				return;
			continue;
		}
		if (clock_type::now() < next[pick]) {
			if (!sleep([&] { heal_cv.wait_until(g, next[pick]); }))
				return;
			continue;
		}
		auto &r = remotes[pick];
		r.catching_up = true;
		g.unlock();
		metrics_changed(r);
		std::string why;
		bool back = false;
		try {
			std::lock_guard one(heal_mu);
			catch_up(r, {});
			back = true;
		} catch (const std::exception &e) {
			why = e.what();
		}
		g.lock();
		r.catching_up = false;
		g.unlock();
		metrics_changed(r); // back in sync, or lost again
		g.lock();
		if (back) {
			delay[pick] = first_delay;
			continue;
		}
		client::log(2, "remote replica {} ({}): not back yet: {}; trying again in {} ms",
		            r.index, where(r), why, delay[pick].count());
		next[pick] = clock_type::now() + delay[pick];
		delay[pick] = std::min(delay[pick] * 2, max_delay);
	}
	guard.leave();
}

} // namespace rpmem
