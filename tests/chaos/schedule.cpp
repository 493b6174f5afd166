// SPDX-License-Identifier: BSD-3-Clause
#include "chaos/schedule.hpp"

#include "chaos/rng.hpp"

#include <fmt/format.h>

#include <array>
#include <map>
#include <utility>

namespace rpmem::chaos
{

namespace
{

/** How often each kind comes, relative to the others. */
constexpr std::array<double, fault_kinds> weights = {
    3.0, // rpmemd_kill
    2.0, // rpmemd_stop
    3.0, // link_down
    2.0, // link_slow
    1.5, // sshd_stop
    1.0, // fs_full
    2.0, // writer_kill
    1.0, // tool_sync
    1.0, // tool_check
    0.4, // promote
};

/** Durations, log-uniform: a fault shorter than RPMEM_TIMEOUT, one between it and the reconnect
 *  timeout, and one beyond both all come often (the driver sets 2 s and 3 s). */
std::pair<std::int64_t, std::int64_t> duration_range(fault f)
{
	switch (f) {
	case fault::rpmemd_stop:
		return {100, 10000};
	case fault::link_down:
		return {100, 12000};
	case fault::link_slow:
		return {1000, 20000};
	case fault::sshd_stop:
		return {500, 15000};
	case fault::fs_full:
		return {1000, 15000};
	case fault::writer_kill:
		return {300, 6000};
	default:
		return {0, 0};
	}
}

constexpr std::array<std::uint64_t, 4> slow_rates = {64, 256, 1024, 8192}; // kbit/s

/** The one thing an event occupies while it lasts; -1: nothing (it may overlap anything). */
std::pair<int, int> resource(const event &e)
{
	switch (e.what) {
	case fault::rpmemd_stop:
		return {0, e.host};
	case fault::link_down:
	case fault::link_slow:
		return {1, e.host};
	case fault::sshd_stop:
		return {2, e.host};
	case fault::fs_full:
		return {3, e.host};
	case fault::writer_kill:
	case fault::promote:
		return {4, e.writer};
	default:
		return {-1, -1};
	}
}

fault pick_kind(rng &r)
{
	double total = 0;
	for (double w : weights)
		total += w;
	double x = r.unit() * total;
	for (int i = 0; i < fault_kinds; ++i) {
		if (x < weights[i])
			return static_cast<fault>(i);
		x -= weights[i];
	}
	return fault::rpmemd_kill;
}

/** Draws the target and parameters of an event of kind `f`; false when no target fits. */
bool draw_target(rng &r, const schedule_config &c, event &e)
{
	const auto &ws = c.writers;
	std::vector<int> eligible;
	switch (e.what) {
	case fault::tool_sync:
	case fault::tool_check:
		for (int i = 0; i < static_cast<int>(ws.size()); ++i)
			if (ws[i].has_poolset)
				eligible.push_back(i);
		break;
	case fault::promote:
		for (int i = 0; i < static_cast<int>(ws.size()); ++i)
			if (ws[i].promotable)
				eligible.push_back(i);
		break;
	case fault::writer_kill:
		for (int i = 0; i < static_cast<int>(ws.size()); ++i)
			eligible.push_back(i);
		break;
	default:
		e.host = static_cast<int>(r.below(static_cast<std::uint64_t>(c.hosts)));
		e.param = r.next() >> 1;
		return c.hosts > 0;
	}
	if (eligible.empty())
		return false;
	e.writer = eligible[r.below(eligible.size())];
	e.param = r.next() >> 1;
	if (e.what == fault::promote)
		e.host = ws[e.writer].hosts[e.param % ws[e.writer].hosts.size()];
	return true;
}

} // namespace

const char *name(fault f) noexcept
{
	switch (f) {
	case fault::rpmemd_kill:
		return "rpmemd_kill";
	case fault::rpmemd_stop:
		return "rpmemd_stop";
	case fault::link_down:
		return "link_down";
	case fault::link_slow:
		return "link_slow";
	case fault::sshd_stop:
		return "sshd_stop";
	case fault::fs_full:
		return "fs_full";
	case fault::writer_kill:
		return "writer_kill";
	case fault::tool_sync:
		return "tool_sync";
	case fault::tool_check:
		return "tool_check";
	case fault::promote:
		return "promote";
	}
	return "?";
}

std::uint64_t slow_rate_kbit(std::uint64_t param) noexcept
{
	return slow_rates[param % slow_rates.size()];
}

std::vector<event> make_schedule(const schedule_config &c)
{
	rng r(c.seed);
	std::vector<event> out;
	std::map<std::pair<int, int>, std::int64_t> busy_until;
	std::int64_t t = 0;
	for (;;) {
		t += 1 + r.exponential(c.mean_gap_ms);
		if (t >= c.length_ms)
			break;
		// A few tries at a kind whose resource is free now; else this moment passes.
		for (int attempt = 0; attempt < 4; ++attempt) {
			event e;
			e.at_ms = t;
			e.what = pick_kind(r);
			if (!draw_target(r, c, e))
				continue;
			const auto [lo, hi] = duration_range(e.what);
			e.duration_ms = hi > 0 ? r.log_between(lo, hi) : 0;
			const auto res = resource(e);
			if (res.first >= 0) {
				auto &until = busy_until[res];
				if (until > t)
					continue;
				// A writer's promotion takes its own time; keep the next one away.
				until = t + e.duration_ms + (e.what == fault::promote ? 10000 : 0);
			}
			out.push_back(e);
			break;
		}
	}
	return out;
}

std::string describe(const event &e, const std::vector<writer_shape> &writers)
{
	std::string s = fmt::format("t={:.3f}s {}", double(e.at_ms) / 1000, name(e.what));
	if (e.writer >= 0 && e.writer < static_cast<int>(writers.size()))
		s += " writer " + writers[e.writer].name;
	if (e.host >= 0)
		s += fmt::format(" host {}", e.host);
	if (e.what == fault::link_slow)
		s += fmt::format(" to {} kbit/s", slow_rate_kbit(e.param));
	if (e.what == fault::rpmemd_kill || e.what == fault::rpmemd_stop)
		s += fmt::format(" (pick {})", e.param % 1000);
	if (e.duration_ms > 0)
		s += fmt::format(" for {:.3f}s", double(e.duration_ms) / 1000);
	return s;
}

} // namespace rpmem::chaos
