// SPDX-License-Identifier: BSD-3-Clause
// What a writer's librpmem log says its replica went through: the state changes resilient_pool
// logs at level 1 ("<target>:<pool>: replica <state> (<why>)"), read back by the tests.
#pragma once

#include <array>
#include <cstddef>
#include <string>

namespace rpmem::test
{

namespace detail
{

/** Calls f(state, why) for each state change in `log`, in order. */
template <class F> void each_replica_state(const std::string &log, F &&f)
{
	static constexpr std::array<const char *, 5> states{"in_sync", "reconnecting",
	                                                    "catching_up", "lost", "closed"};
	const std::string mark = ": replica ";
	for (auto at = log.find(mark); at != std::string::npos; at = log.find(mark, at + 1)) {
		const auto word = at + mark.size();
		for (const char *s : states) {
			const std::string name = std::string(s) + " (";
			if (log.compare(word, name.size(), name) != 0)
				continue;
			const auto why = word + name.size();
			auto end = log.find('\n', why);
			if (end == std::string::npos)
				end = log.size();
			if (end > why && log[end - 1] == ')')
				--end; // the reason's closing parenthesis
			f(std::string(s), log.substr(why, end - why));
			break;
		}
	}
}

} // namespace detail

/** The replica's states in order, each with the start of its reason: "reconnecting (the
 *  replica is too slow: …) -> lost (…) -> in_sync (caught up …)". A failure's first line of
 *  messages then tells the whole outage, where the log's head tells only its start. */
inline std::string replica_states(const std::string &log, std::size_t width = 72)
{
	std::string out;
	detail::each_replica_state(log, [&](const std::string &s, const std::string &why) {
		if (!out.empty())
			out += " -> ";
		out += s + " (" + (why.size() > width ? why.substr(0, width) + "…" : why) + ")";
	});
	return out.empty() ? "no state change logged" : out;
}

/** The state the log said last ("" when it said none). */
inline std::string last_replica_state(const std::string &log)
{
	std::string last;
	detail::each_replica_state(log,
	                           [&](const std::string &s, const std::string &) { last = s; });
	return last;
}

} // namespace rpmem::test
