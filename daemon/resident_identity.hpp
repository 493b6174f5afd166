// SPDX-License-Identifier: BSD-3-Clause
// Which resident rpmemd may serve a session: one whose sessions behave exactly as the rpmemd
// sshd just started would. Its identity is everything a session process inherits and cannot
// change afterwards: the executable, the credentials and groups, the command line (past
// argv[0]), the config files' contents, the environment (libraries read it when they start),
// the resource limits, the namespaces, the root directory, the capabilities, no_new_privs and
// seccomp, the security label, the CPU affinity, the nice value and the OOM score adjustment.
// Two processes of equal identity text are interchangeable for a session. What differs from
// one SSH session to the next — the SSH_* variables, the working directory, the umask — is not
// part of it: the front sends it with each request (resident_protocol.hpp) and the session's
// process takes it on. Not part of it either, by design: the control group (systemd gives each
// SSH login a scope of its own; sessions served by a resident run in the resident's).
#pragma once

#include "config.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rpmemd::resident
{

struct identity {
	std::string text; ///< canonical: one fact a line
	std::string id;   ///< 16 hex digits of the text's XXH3 hash, for file names
};

/** Whether an environment variable belongs to one SSH login (SSH_CONNECTION, SSH_CLIENT, ...,
 *  XDG_SESSION_ID, ...): not part of the identity, sent with each request instead. */
bool per_session_variable(std::string_view entry);

/** The config files load() reads for `cfg`: only --config when given, else the system's and
 *  the user's (each may be absent). */
std::vector<std::string> config_files(const config &cfg, const environment &env);

/** This process's identity; `args` is the command line past argv[0]. */
identity identify(const std::vector<std::string> &args, const std::vector<std::string> &files);

/** Where the residents of `id` listen: in the status directory (status-dir; its default where
 *  it is unset or "none"), created 0700 if missing. */
struct place {
	std::string dir;
	std::string socket; ///< resident-<id>.sock
	std::string lock;   ///< resident-<id>.lock: held by the one resident of that identity
};

/** The place, or nullopt and *why when it cannot be trusted: not a directory of this user's
 *  (a symbolic link, another user's), open to its group or others, or a path too long for a
 *  Unix socket. */
std::optional<place> locate(const config &cfg, const identity &id, std::string *why);

} // namespace rpmemd::resident
