// SPDX-License-Identifier: BSD-3-Clause
// The end-of-session report: one log line with what the session's fabric target served.
#pragma once

#include "target.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace rpmemd
{

/** "850 ns", "12.0 us", "3.40 ms" ("-" for none). */
std::string duration_text(std::uint64_t ns);

/** Logs (notice) the end of the session of `peer` on pool `descriptor`, started at `started`:
 *  requests served and refused, bytes persisted, execution quantiles, the session's length. */
void log_session_end(const std::string &peer, const std::string &descriptor, const served_counts &c,
                     std::chrono::steady_clock::time_point started);

} // namespace rpmemd
