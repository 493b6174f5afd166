// SPDX-License-Identifier: BSD-3-Clause
// The resident rpmemd: a per-user process that outlives one session, as OpenSSH's
// ControlPersist keeps a master connection, so that a session starts without paying for
// libfabric's start-up (~0.4 s on Debian: its providers' constructors and first fi_getinfo).
//
// Processes, all of the SSH user (DESIGN.md decision 3: nothing runs as anyone else):
//   front     the rpmemd sshd starts for a session (relay.hpp). It connects to the resident of
//             its identity (resident_identity.hpp) through a Unix socket in the user's 0700
//             status directory, hands over the SSH channel (stdin, stdout, stderr), waits, and
//             ends as the session's process ended: same exit status, or killed by the same
//             signal; signals it receives (sshd's "signal" request) go on to that process.
//             With no resident it serves the session itself, as PMDK's rpmemd did, and starts
//             one for the sessions after.
//   resident  `rpmemd-resident` in ps: never loads libfabric and never serves a session
//             itself. It keeps one spare process ready and gives each session to a spare; it
//             tells the front how the session's process ended; it ends after `resident`
//             seconds without a session, when its socket or the poolset directory is removed,
//             or on SIGTERM.
//   spare     a fork of the resident (`rpmemd-spare`) that loaded libfabric and initialized
//             its providers by itself, then waits. Forked before libfabric was ever touched,
//             so nothing of libfabric (nor of a verbs device context, which a child of the
//             process that opened it cannot use) is shared between processes.
//   session   the spare once it took a session: named `rpmemd` again (ps shows
//             `rpmemd-session`), one process per session as always: the pool lock, the status
//             record, the log, the heartbeat are its own. Killing it ends the session and
//             nothing else; killing the resident ends no session; killing the front ends its
//             session (the session's process sees its front go).
#pragma once

#include "resident_identity.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace rpmemd::resident
{

/** argv[0] and the process name of a resident, of a spare, and of a session's process. */
inline constexpr std::string_view resident_name = "rpmemd-resident";
inline constexpr std::string_view spare_name = "rpmemd-spare";
inline constexpr std::string_view session_name = "rpmemd-session";

/** What only rpmemd.cpp knows, so that this part links no libfabric. */
struct hooks {
	/** In a spare, before it waits for a session: what makes the next session start fast.
	 *  Must not throw. */
	std::function<void()> warm;
	/** In a session's process, with the front's stdin, stdout, stderr, environment, working
	 *  directory and umask in place: runs the session and returns its exit status. */
	std::function<int()> serve;
};

struct settings {
	std::chrono::seconds idle{600}; ///< how long after the last session the resident stays
	/** Spares kept ready: a session that finds one warm starts without libfabric's start-up.
	 *  Two, so that sessions opened back to back (a pool set's replicas on one host, a
	 *  reconnect right after an open) each find one while the next warms (~0.3 s, most of it
	 *  the provider libraries' constructors sleeping). */
	std::size_t spares = 2;
	/** How long after a spare took a session its replacement is forked, while another spare
	 *  is warm (ready to take one): the replacement's start-up (~0.1 s of CPU reading
	 *  /proc/kallsyms for the verbs provider) then does not compete with the session that
	 *  just began. With none warm (the others still starting, or taken), one is forked at
	 *  once. */
	std::chrono::milliseconds spare_delay{500};
	/** The first pause before a spare that died while it started is replaced; it doubles
	 *  with each such death, up to a minute. */
	std::chrono::milliseconds retry_delay{500};
	std::string poolset_dir; ///< the resident ends when this directory goes
};

/** The spares a resident has: wanted (settings::spares), available (alive, not taken) and warm
 *  (available and ready to take a session). */
struct spare_counts {
	std::size_t wanted = 0, available = 0, warm = 0;
};

/**
 * When the resident forks the spares it lacks: not before `retry_at` (after a spare died
 * while it started), and, while a warm spare is left, not before `replenish_at` (a used
 * spare's replacement waits settings::spare_delay). With no warm spare left, at once: a
 * spare still starting does not count, or a burst of sessions finds none ready. The time
 * point from which `spares_to_fork` is not 0, or nullopt when none is lacking.
 */
template <class Time>
std::optional<Time> refill_at(const spare_counts &c, Time retry_at, Time replenish_at)
{
	if (c.available >= c.wanted)
		return std::nullopt;
	return c.warm > 0 ? std::max(retry_at, replenish_at) : retry_at;
}
/** How many spares to fork at `now` (refill_at). */
template <class Time>
std::size_t spares_to_fork(const spare_counts &c, Time now, Time retry_at, Time replenish_at)
{
	const auto at = refill_at(c, retry_at, replenish_at);
	return at && now >= *at ? c.wanted - c.available : 0;
}

/** The resident's life; its exit status. `argv` is its own command line: its children
 *  rename themselves in it (`ps` tells spares and sessions from the resident). */
int run(const identity &id, const place &where, const settings &s, const hooks &h, char **argv);

} // namespace rpmemd::resident
