// SPDX-License-Identifier: BSD-3-Clause
// The clock and pauses of librpmem's healers: resilient_pool's (its calls, resilient_pool.cpp,
// and its healer, resilient_heal.cpp) and the asynchronous writer's (lib/async).
#pragma once

#include <chrono>

namespace rpmem::client::resilient_timing
{

using clock_type = std::chrono::steady_clock;

/** The longest pause between two attempts at a lost replica. */
constexpr std::chrono::milliseconds max_delay{2000};
/** How often the healer looks at an idle session's keep-alive verdict. */
constexpr std::chrono::milliseconds idle_check{250};

inline double ms_since(clock_type::time_point t)
{
	return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

} // namespace rpmem::client::resilient_timing
