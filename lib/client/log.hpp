// SPDX-License-Identifier: BSD-3-Clause
// Client-side log (PMDK's RPMEM_LOG_LEVEL and RPMEM_LOG_FILE, in every build): level 0 = off,
// 1 = errors, 2 = warnings, 3 = notices (create/open/close), 4 = debug. RPMEM_LOG_FILE names a
// file (a trailing '-' appends the PID, as PMDK); default stderr. Without RPMEM_LOG_LEVEL the
// level is 1 when stderr is a terminal or the systemd journal and no RPMEM_LOG_FILE is set, so a
// failed create/open through stock libpmemobj/pmempool shows its reason; else 0.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace rpmem::client
{

int log_level() noexcept;
void log_write(int level, std::string_view message) noexcept;

template <class... A> void log(int level, fmt::format_string<A...> f, A &&...args) noexcept
{
	if (level > log_level())
		return;
	try {
		log_write(level, fmt::vformat(f, fmt::make_format_args(args...)));
	} catch (...) {
		// Logging never turns a call into a failure.
	}
}

} // namespace rpmem::client
