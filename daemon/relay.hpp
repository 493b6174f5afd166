// SPDX-License-Identifier: BSD-3-Clause
// The front's side of a resident (resident.hpp): the rpmemd sshd started hands its SSH channel
// to a session process of the resident and then stands in for it towards sshd.
#pragma once

#include "resident_identity.hpp"

#include <string>

namespace rpmemd::resident
{

/** Why a session was not handed over: the front serves it itself. */
struct not_relayed {
	bool no_resident = false; ///< nothing listens: start one for the next sessions
	std::string why;
};

/**
 * Asks the resident at `where` to take this session. Returns when it does not (nothing was
 * sent to the client: the caller serves the session as before). Once a session process of
 * the resident accepted it, this process hands over stdin, stdout and stderr, keeps only
 * stderr, forwards the signals sshd may send (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1,
 * SIGUSR2) to it, and ends as it ended — the same exit status, or killed by the same signal —
 * so the SSH channel sees what it saw when rpmemd served the session itself: never returns.
 * Checks that the resident runs as this user (SO_PEERCRED).
 */
not_relayed relay(const place &where, const identity &id);

/** Starts a resident for this process's identity in the background and returns: a process
 *  detached from this one (a session of its own, stdin/stdout/stderr on /dev/null, working
 *  directory /) running this executable as `resident_name` with the same arguments, and the
 *  environment less the per-session variables. Nothing is reported: a resident that cannot
 *  start logs why, and the sessions go on without one. */
void spawn(char **argv);

} // namespace rpmemd::resident
