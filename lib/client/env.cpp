// SPDX-License-Identifier: BSD-3-Clause
#include "client/env.hpp"

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>

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

} // namespace

settings read_settings(const char *(*getenv_fn)(const char *))
{
	settings s;
	if (const char *cmd = getenv_fn("RPMEM_CMD"); cmd && *cmd)
		s.commands = split_commands(cmd);
	if (auto v = parse_env_int(getenv_fn("RPMEM_MAX_NLANES")); v > 0)
		s.max_nlanes = v > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(v);
	if (auto v = parse_env_int(getenv_fn("RPMEM_WORK_QUEUE_SIZE")); v > 0)
		s.work_queue_size = v > 65536 ? 65536 : static_cast<std::uint32_t>(v);
	if (auto v = parse_env_int(getenv_fn("RPMEM_TIMEOUT")); v > 0)
		s.op_timeout = std::chrono::milliseconds(v);
	if (auto v = parse_env_int(getenv_fn("RPMEM_CONTROL_TIMEOUT")); v > 0)
		s.control_timeout = std::chrono::milliseconds(v);
	if (auto v = parse_env_int(getenv_fn("RPMEM_KEEPALIVE")); v >= 0)
		s.keepalive = std::chrono::milliseconds(v);
	if (auto v = parse_env_int(getenv_fn("RPMEM_INLINE_MAX")); v >= 0)
		s.inline_max = v;
	s.spin = parse_env_int(getenv_fn("RPMEM_SPIN")) > 0;
	if (auto v = parse_env_int(getenv_fn("RPMEM_PIPELINE_CHUNK")); v >= 0)
		s.pipeline_chunk = static_cast<std::uint64_t>(v);
	s.providers = provider_preference(getenv_fn);
	return s;
}

const settings &process_settings()
{
	static const settings s =
	    read_settings([](const char *name) -> const char * { return std::getenv(name); });
	return s;
}

std::string next_command()
{
	static std::atomic<std::size_t> index{0};
	const auto &cmds = process_settings().commands;
	return cmds[index.fetch_add(1, std::memory_order_relaxed) % cmds.size()];
}

} // namespace rpmem::client
