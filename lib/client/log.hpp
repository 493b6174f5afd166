// SPDX-License-Identifier: BSD-3-Clause
// Client-side log (PMDK's RPMEM_LOG_LEVEL and RPMEM_LOG_FILE, in every build): level 0 = off,
// 1 = errors, 2 = warnings, 3 = notices (create/open/close), 4 = debug. RPMEM_LOG_FILE names a
// file (a trailing '-' appends the PID, as PMDK); default stderr. Without RPMEM_LOG_LEVEL the
// level is 1 when stderr is a terminal or the systemd journal and no RPMEM_LOG_FILE is set, so a
// failed create/open through stock libpmemobj/pmempool shows its reason; else 0.
//
// An error is never lost whatever the level: one the log does not put where an operator looks
// (no RPMEM_LOG_FILE, and stderr neither a terminal nor the journal, or the level 0) goes to
// syslog (the journal on systemd), the first few of a process (a lost replica under stock
// libpmemobj, whose own message is not ours to give).
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace rpmem::client
{

int log_level() noexcept;
/** Whether an error would reach no operator through the log alone (it goes to syslog too). */
bool errors_unseen() noexcept;
void log_write(int level, std::string_view message) noexcept;

template <class... A> void log(int level, fmt::format_string<A...> f, A &&...args) noexcept
{
	if (level > log_level() && !(level == 1 && errors_unseen()))
		return;
	try {
		log_write(level, fmt::vformat(f, fmt::make_format_args(args...)));
	} catch (...) {
		// Logging never turns a call into a failure.
	}
}

} // namespace rpmem::client
