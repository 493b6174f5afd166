// SPDX-License-Identifier: BSD-3-Clause
// When a waiting thread should poll its completion queue instead of blocking. Blocking costs a
// thread wake-up on each side of a round trip (tens of microseconds on a VM); spinning saves it
// but burns a core, and on a busy machine the spinner takes the core the peer or the provider
// needed (docs/design.md, decision 14). So spinning adapts: a thread polls for a budget learnt
// from how long its completions took when polling caught them, stops polling for a while when
// it mostly does not, and never polls while the machine has no core to spare.
// Pure logic (no libfabric): unit-tested in tests/unit/spin_policy_test.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rpmem::fabric
{

/** How a thread waits for completions; chosen once per connection (or daemon worker). */
enum class wait_mode {
	block,    // always block on the provider's wait object
	spin,     // always poll (RPMEM_SPIN=1, --wait=spin): a busy core per waiting thread
	adaptive, // poll for a learnt budget while a core is free, then block (the default)
};

/** "block", "spin", "adaptive"; nullopt for anything else. */
std::optional<wait_mode> parse_wait_mode(std::string_view text);
const char *to_string(wait_mode m);

/** The polling budget of one waiting thread. Not thread-safe: one per waiter. */
class spin_budget
{
public:
	using ns = std::chrono::nanoseconds;
	/** Bounds of the budget; `initial` is used until polling has caught something. */
	struct limits {
		ns initial{std::chrono::microseconds(50)};
		ns min{std::chrono::microseconds(5)};
		ns max{std::chrono::microseconds(250)};
	};
	spin_budget() : spin_budget(limits{}) {}
	explicit spin_budget(limits l);

	/** How long the next wait may poll before it blocks: 0 while cooling down. */
	ns next();
	/** Polling caught a completion `after` it started. */
	void hit(ns after);
	/** The budget ran out and the thread blocked. */
	void miss();
	/** A blocking wait (after a miss, or while cooling down) got its completion `after` the
	 * wait began: within the largest budget, a longer poll would have caught it, so it counts
	 * as caught (and ends a cooldown); later, as nothing. */
	void late(ns after);
	/** Starts over from a measured round trip: poll up to a few of them. */
	void calibrate(ns round_trip);

	ns current() const { return budget_; }
	bool cooling() const { return cooldown_ > 0; }

	/** Waits judged per window; polling stops for `cooldown` waits when fewer than
	 * `min_hits` of a window's were caught by polling. */
	static constexpr unsigned window = 16;
	static constexpr unsigned min_hits = 4;
	static constexpr unsigned cooldown = 64;

private:
	limits limits_;
	ns budget_;
	ns typical_{0}; // moving average of how long caught completions took
	unsigned hits_ = 0, judged_ = 0, cooldown_ = 0;
};

/**
 * Whether a core is free for one more polling thread, from /proc/loadavg's count of runnable
 * threads (the caller, polling, is one of them): runnable <= cores. `loadavg` is the file's
 * text ("0.08 0.03 0.01 2/178 3042"); false when it cannot be read.
 */
bool core_to_spare(std::string_view loadavg, unsigned cores);

/** core_to_spare for this machine, re-read at most once per millisecond (process-wide). */
bool machine_has_core_to_spare();

/**
 * A licence to poll, of which a process holds at most half the cores' worth (at least one):
 * the peer of a connection polls too, and where client and replica share a machine (or a
 * process has many waiting threads) more pollers only take the cores the threads they wait
 * for need. Measured on 2 cores, 4 KiB persists from 2 threads: 27.9 k/s with every thread
 * polling, against 30.9 k/s with all of them blocking.
 */
class spin_licence
{
public:
	spin_licence();
	~spin_licence();
	spin_licence(const spin_licence &) = delete;
	spin_licence &operator=(const spin_licence &) = delete;
	explicit operator bool() const { return held_; }

	/** Pollers a process may have at once. */
	static unsigned limit();

private:
	bool held_ = false;
};

} // namespace rpmem::fabric
