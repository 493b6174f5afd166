// SPDX-License-Identifier: BSD-3-Clause
// Environment lookup, injectable so provider selection can be tested without touching the
// process environment, and PMDK's parser for its integer flags (RPMEM_ENABLE_*).
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace rpmem::fabric
{

/** Returns the value of one environment variable, nullopt when it is unset. */
using env = std::function<std::optional<std::string>(const std::string &name)>;

/** The real process environment (getenv). */
env process_env();

/**
 * PMDK's integer flag syntax (librpmem rpmem.c): strtol base 10 over the whole string, the value
 * fits an int. nullopt when the text is not such an integer ("", "yes", "1x", "99999999999").
 */
std::optional<int> parse_int_flag(const std::string &text);

} // namespace rpmem::fabric
