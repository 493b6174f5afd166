// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/env.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace rpmem::fabric
{

env process_env()
{
	return [](const std::string &name) -> std::optional<std::string> {
		const char *value = std::getenv(name.c_str());
		if (value == nullptr)
			return std::nullopt;
		return std::string(value);
	};
}

std::optional<int> parse_int_flag(const std::string &text)
{
	if (text.empty())
		return std::nullopt;
	char *end = nullptr;
	errno = 0;
	const long value = std::strtol(text.c_str(), &end, 10);
	if (errno != 0 || *end != '\0' || value < INT_MIN || value > INT_MAX)
		return std::nullopt;
	return static_cast<int>(value);
}

} // namespace rpmem::fabric
