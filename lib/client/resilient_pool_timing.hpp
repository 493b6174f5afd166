// SPDX-License-Identifier: BSD-3-Clause
// The clock and pauses of librpmem's healers: resilient_pool's (its calls, resilient_pool.cpp,
// and its healer, resilient_heal.cpp) and the asynchronous writer's (lib/async); and the stamps
// of the call bounds' watches (resilient_pool, replicated_pool).
#pragma once

#include <algorithm>
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

// A call bound's watch (resilient_pool's RPMEM_CALL_TIMEOUT, replicated_pool's synchronous
// bound under degrade): each waiting call stamps when its wait began, in an atomic that 0
// means "none"; a thread looks at the stamps every watch_tick.

/** Now as a stamp. */
inline clock_type::rep stamp_now()
{
	return clock_type::now().time_since_epoch().count();
}
/** How long before `now` a stamp was taken. */
inline clock_type::duration stamp_age(clock_type::rep stamp, clock_type::time_point now)
{
	return now - clock_type::time_point(clock_type::duration(stamp));
}
/** How often a watch of `bound` looks: a tenth of it, from 10 to 100 ms. */
inline std::chrono::milliseconds watch_tick(std::chrono::milliseconds bound)
{
	using namespace std::chrono_literals;
	return std::clamp<std::chrono::milliseconds>(bound / 10, 10ms, 100ms);
}

} // namespace rpmem::client::resilient_timing
