// SPDX-License-Identifier: BSD-3-Clause
// A spare of the resident (resident.hpp): the process that loads libfabric ahead, waits for a
// session, takes on the front's channel and serves it. Internal to the resident.
#pragma once

#include "resident.hpp"

#include "posix/file.hpp"

#include <csignal>
#include <string_view>
#include <sys/types.h>

namespace rpmemd::resident
{

/** Writes `name` over argv[0] (zero-filling the rest of the room it had at exec) and sets the
 *  process name: what `ps` and /proc/PID/{cmdline,comm} show. */
void rename_process(char **argv, std::string_view name);

/** A spare's life, in the child the resident forked: warms, says so on `ctl`, then serves the one
 * session the resident hands it and exits with its status. `startup_mask` is the signal mask the
 * resident started with. */
[[noreturn]] void spare_main(rpmem::posix::unique_fd ctl, const hooks &h, char **argv,
                             pid_t resident_pid, const sigset_t &startup_mask);

} // namespace rpmemd::resident
