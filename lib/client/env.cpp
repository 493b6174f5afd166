// SPDX-License-Identifier: BSD-3-Clause
#include "client/env.hpp"

#include "client/log.hpp"

#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace rpmem::client
{

long long parse_env_int(const char *value)
{
	if (!value || !*value)
		return -1;
	errno = 0;
	char *end = nullptr;
	long long v = std::strtoll(value, &end, 10);
	if (errno || *end != '\0')
		return -1;
	return v;
}

namespace
{

std::vector<std::string> split_commands(const char *value)
{
	std::vector<std::string> out;
	std::string cur;
	for (const char *p = value; *p; ++p) {
		if (*p == '|') {
			out.push_back(cur);
			cur.clear();
		} else {
			cur += *p;
		}
	}
	out.push_back(cur);
	return out;
}

/** verbs, then tcp, then sockets; RPMEM_PROVIDER forces one; PMDK's switches drop some. */
std::string provider_preference(const char *(*getenv_fn)(const char *))
{
	if (const char *forced = getenv_fn("RPMEM_PROVIDER"); forced && *forced)
		return forced;
	std::string list;
	const char *verbs = getenv_fn("RPMEM_ENABLE_VERBS");
	// PMDK: verbs is on unless the variable is set to something other than a non-zero integer.
	if (!verbs || parse_env_int(verbs) > 0)
		list += "verbs,";
	list += "tcp";
	// sockets is PMDK's test provider: we keep it as the last fallback, and
	// RPMEM_ENABLE_SOCKETS=0 removes it.
	const char *sockets = getenv_fn("RPMEM_ENABLE_SOCKETS");
	if (!sockets || parse_env_int(sockets) != 0)
		list += ",sockets";
	return list;
}

/**
 * The integer in variable `name`, or nullopt when it is unset or empty. Anything else that is
 * not a whole decimal number of at least `min` is refused (PMDK ignored such values silently,
 * leaving the user with a default they did not ask for).
 */
std::optional<long long> env_number(const char *(*getenv_fn)(const char *), const char *name,
                                    long long min, const char *what, long long max = LLONG_MAX)
{
	const char *value = getenv_fn(name);
	if (!value || !*value)
		return std::nullopt;
	long long v = parse_env_int(value);
	if (v < min || v > max)
		throw rpmem::error(
		    EINVAL, fmt::format("{}='{}' is not {}: fix or unset it", name, value, what));
	return v;
}

/** RPMEM_REPLICATION and the asynchronous mode's bounds and failure policy. */
void read_async(const char *(*getenv_fn)(const char *), settings &s)
{
	auto word = [&](const char *name, const char *a, const char *b) -> std::optional<bool> {
		const char *v = getenv_fn(name);
		if (!v || !*v)
			return std::nullopt;
		if (std::string_view(v) == a || std::string_view(v) == b)
			return std::string_view(v) == b;
		throw rpmem::error(
		    EINVAL, fmt::format("{}='{}' is not {} or {}: fix or unset it", name, v, a, b));
	};
	if (auto v = word("RPMEM_REPLICATION", "sync", "async"))
		s.async = *v;
	if (auto v = word("RPMEM_ASYNC_ON_FAILURE", "fail", "continue"))
		s.async_keep_going = *v;
	if (auto v = word("RPMEM_ON_OUTAGE", "fail", "continue"))
		s.outage_continue = *v;
	if (auto v =
	        env_number(getenv_fn, "RPMEM_ASYNC_MAX_LAG_BYTES", 1, "a positive number of bytes"))
		s.async_max_lag_bytes = static_cast<std::size_t>(*v);
	if (auto v = env_number(getenv_fn, "RPMEM_ASYNC_MAX_LAG_MS", 1,
	                        "a positive number of milliseconds"))
		s.async_max_lag_time = std::chrono::milliseconds(*v);
}

} // namespace

settings read_settings(const char *(*getenv_fn)(const char *))
{
	settings s;
	if (const char *cmd = getenv_fn("RPMEM_CMD"); cmd && *cmd)
		s.commands = split_commands(cmd);
	auto number = [&](const char *name, long long min, const char *what) {
		return env_number(getenv_fn, name, min, what);
	};
	constexpr const char *positive_ms = "a positive number of milliseconds";
	if (auto v = number("RPMEM_MAX_NLANES", 1, "a positive number of lanes"))
		s.max_nlanes = *v > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(*v);
	if (const char *wq = getenv_fn("RPMEM_WORK_QUEUE_SIZE"); wq && *wq)
		s.ignored.push_back(
		    fmt::format("RPMEM_WORK_QUEUE_SIZE={} is ignored: rpmem sizes its "
		                "queues from the lanes and what the provider grants "
		                "(librpmem(7))",
		                wq));
	if (auto v = number("RPMEM_TIMEOUT", 1, positive_ms))
		s.op_timeout = std::chrono::milliseconds(*v);
	if (auto v = number("RPMEM_CONTROL_TIMEOUT", 1, positive_ms))
		s.control_timeout = std::chrono::milliseconds(*v);
	if (auto v = number("RPMEM_KEEPALIVE", 0, "a number of milliseconds (0: off)"))
		s.keepalive = std::chrono::milliseconds(*v);
	if (auto v = number("RPMEM_INLINE_MAX", 0, "a number of bytes"))
		s.inline_max = *v;
	if (const char *spin = getenv_fn("RPMEM_SPIN"); spin && *spin) {
		auto v = parse_env_int(spin);
		if (v != 0 && v != 1)
			throw rpmem::error(EINVAL, fmt::format("RPMEM_SPIN='{}' is not 0 (always "
			                                       "block) or 1 (always poll): fix or "
			                                       "unset it",
			                                       spin));
		s.wait = v ? fabric::wait_mode::spin : fabric::wait_mode::block;
	}
	if (const char *mr = getenv_fn("RPMEM_MR_MODE"); mr && *mr) {
		auto mode = fabric::parse_mr_mode(mr);
		if (!mode)
			throw rpmem::error(EINVAL,
			                   fmt::format("RPMEM_MR_MODE='{}' is not auto, basic "
			                               "or scalable: fix or unset it",
			                               mr));
		s.mr_mode = *mode;
	}
	if (auto v = number("RPMEM_RECONNECT_DELAY", 1, positive_ms))
		s.reconnect_delay = std::chrono::milliseconds(*v);
	if (auto v = number("RPMEM_RECONNECT_TIMEOUT", 0, "a number of milliseconds (0: none)"))
		s.reconnect_timeout = std::chrono::milliseconds(*v);
	if (auto v = number("RPMEM_CALL_TIMEOUT", 0, "a number of milliseconds (0: none)"))
		s.call_timeout = std::chrono::milliseconds(*v);
	else
		s.call_timeout = s.op_timeout + s.reconnect_timeout;
	if (auto v = number("RPMEM_CATCH_UP_HOLD_BYTES", 0, "a number of bytes"))
		s.catch_up_hold_bytes = static_cast<std::uint64_t>(*v);
	if (auto v = number("RPMEM_PIPELINE_CHUNK", 0, "a number of bytes (0: off)"))
		s.pipeline_chunk = static_cast<std::uint64_t>(*v);
	// Read by the log (log.cpp) and the metrics file (stats_export.cpp) on their own; checked
	// here so that a bad value fails as every other does instead of being taken as a default.
	env_number(getenv_fn, "RPMEM_LOG_LEVEL", 0, "a log level from 0 (off) to 4 (debug)", 4);
	env_number(getenv_fn, "RPMEM_STATS_INTERVAL", 100,
	           "a number of milliseconds of at least 100");
	s.providers = provider_preference(getenv_fn);
	read_async(getenv_fn, s);
	return s;
}

const settings &process_settings()
{
	static const settings s = [] {
		auto r = read_settings(
		    [](const char *name) -> const char * { return std::getenv(name); });
		for (const auto &why : r.ignored)
			log(2, "{}", why);
		return r;
	}();
	return s;
}

std::string next_command()
{
	static std::atomic<std::size_t> index{0};
	const auto &cmds = process_settings().commands;
	return cmds[index.fetch_add(1, std::memory_order_relaxed) % cmds.size()];
}

} // namespace rpmem::client
