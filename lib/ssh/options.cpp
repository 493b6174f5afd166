// SPDX-License-Identifier: BSD-3-Clause
#include "ssh/options.hpp"

#include <rpmem/error.hpp>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <fmt/format.h>
#include <string_view>

namespace rpmem::ssh
{

namespace
{

std::string env(const char *name)
{
	const char *value = std::getenv(name);
	return value ? value : "";
}

std::vector<std::string> split_paths(std::string_view list)
{
	std::vector<std::string> paths;
	while (!list.empty()) {
		auto colon = list.find(':');
		auto item = list.substr(0, colon);
		if (!item.empty())
			paths.emplace_back(item);
		if (colon == std::string_view::npos)
			break;
		list.remove_prefix(colon + 1);
	}
	return paths;
}

/** Below this an SSH setup step (TCP connect, key exchange, authentication, exec) cannot
 *  finish even on loopback: such a value is a mistake, most often seconds meant as ms. */
constexpr long long min_connect_timeout_ms = 1000;

std::chrono::milliseconds parse_timeout(const std::string &text)
{
	long long ms = 0;
	auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
	if (ec != std::errc() || end != text.data() + text.size() || ms <= 0)
		throw rpmem::error(EINVAL, fmt::format("RPMEM_SSH_TIMEOUT='{}' is not a positive "
		                                       "number of milliseconds: fix or unset it",
		                                       text));
	if (ms < min_connect_timeout_ms)
		throw rpmem::error(EINVAL,
		                   fmt::format("RPMEM_SSH_TIMEOUT={} is in milliseconds, and {} ms "
		                               "is too short for an SSH connection to be set up "
		                               "(at least {}): did you mean {} ({} seconds)?",
		                               ms, ms, min_connect_timeout_ms, ms * 1000, ms));
	return std::chrono::milliseconds(ms);
}

} // namespace

options options::from_environment()
{
	options o;
	o.config_file = env("RPMEM_SSH_CONFIG");
	o.known_hosts_file = env("RPMEM_SSH_KNOWN_HOSTS");
	o.identity_files = split_paths(env("RPMEM_SSH_IDENTITY"));
	if (auto timeout = env("RPMEM_SSH_TIMEOUT"); !timeout.empty())
		o.connect_timeout = parse_timeout(timeout);
	o.external_program = env("RPMEM_SSH");
	return o;
}

} // namespace rpmem::ssh
