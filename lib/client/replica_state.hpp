// SPDX-License-Identifier: BSD-3-Clause
// The states of a replica that outlives its sessions, shared by librpmem's synchronous pool
// (resilient_pool) and its asynchronous writer (async::remote_writer): the words the log, the
// metrics file and `rpmem top` show.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace rpmem::client
{

enum class replica_state {
	in_sync,      // every persist acknowledged is on it (asynchronous: it holds a prefix)
	reconnecting, // its session died; a new one is being made
	lost,         // away longer than RPMEM_RECONNECT_TIMEOUT under continue: fenced, tracked
	catching_up,  // back: the blocks it missed are being pushed while the calls go on
	failed,       // away longer than RPMEM_RECONNECT_TIMEOUT under fail: every call fails
	closed
};

constexpr const char *name(replica_state s) noexcept
{
	switch (s) {
	case replica_state::in_sync:
		return "in_sync";
	case replica_state::reconnecting:
		return "reconnecting";
	case replica_state::lost:
		return "lost";
	case replica_state::catching_up:
		return "catching_up";
	case replica_state::failed:
		return "failed";
	case replica_state::closed:
		return "closed";
	}
	return "?";
}

/**
 * What a close does before it stops a healer: waits while the replica is reconnecting or
 * catching up (lk holds the mutex cv is used with). A reconnect ends by itself, the healer
 * deciding at the reconnect timeout; a catch-up is waited for while `moved` (the bytes it
 * moved) grows within every `window`, so a slow one is let finish and a stuck one is not.
 */
template <class Lock, class Cv, class State>
void wait_for_progress(Lock &lk, Cv &cv, std::chrono::milliseconds window,
                       const std::atomic<std::uint64_t> &moved, State &&state)
{
	auto away = [&] {
		const auto st = state();
		return st == replica_state::reconnecting || st == replica_state::catching_up;
	};
	for (auto seen = moved.load(); away();) {
		if (cv.wait_for(lk, window, [&] { return !away(); }))
			return;
		const auto now = moved.load();
		if (state() != replica_state::catching_up || now == seen)
			return; // no progress in a whole window
		seen = now;
	}
}

} // namespace rpmem::client
