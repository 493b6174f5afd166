// SPDX-License-Identifier: BSD-3-Clause
#include "session_report.hpp"

#include "log.hpp"

namespace rpmemd
{

std::string duration_text(std::uint64_t ns)
{
	if (ns == 0)
		return "-";
	if (ns < 10'000)
		return fmt::format("{} ns", ns);
	if (ns < 10'000'000)
		return fmt::format("{:.1f} us", double(ns) / 1e3);
	return fmt::format("{:.2f} ms", double(ns) / 1e6);
}

void log_session_end(const std::string &peer, const std::string &descriptor, const served_counts &c,
                     std::chrono::steady_clock::time_point started)
{
	auto secs =
	    std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
	log_notice("{}: session end: pool {}, {} requests ({} refused), {} bytes "
	           "persisted, execution p50 {} p99 {} max {} (bucket bounds), "
	           "{:.3f} s",
	           peer, descriptor, c.requests, c.refused, c.bytes,
	           duration_text(c.quantile_ns(0.5)), duration_text(c.quantile_ns(0.99)),
	           duration_text(c.quantile_ns(1.0)), secs);
}

} // namespace rpmemd
