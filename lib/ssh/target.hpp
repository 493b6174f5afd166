// SPDX-License-Identifier: BSD-3-Clause
// The target of a remote replica as PMDK spells it: [user@]host[:port], where host may be an
// IPv6 literal, bracketed when a port follows ("[fe80::1]:2222"). The port is the SSH port.
// Parsed, it is an ssh::destination (rpmemd's "target" is its fabric listener, daemon/target.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rpmem::ssh
{

struct destination {
	std::string user; ///< empty: the SSH default (config User, else login name)
	std::string host; ///< never empty; a name, an IPv4 or a bare IPv6 literal
	std::optional<std::uint16_t> port; ///< absent: the SSH default (config Port, else 22)

	/** Back to PMDK syntax; an IPv6 host is bracketed when a port follows. */
	std::string str() const;
	friend bool operator==(const destination &, const destination &) = default;
};

/**
 * Parses "[user@]host[:port]" like PMDK's rpmem_target_parse(): the first '@' ends the user;
 * "[addr]" brackets an IPv6 literal, optionally followed by ":port"; otherwise exactly one ':'
 * separates host and port, and a string with two or more colons is a bare IPv6 host.
 * Stricter than PMDK where PMDK would hand garbage to ssh: throws rpmem::error(EINVAL) naming
 * the target for an empty user or host, a port that is not a decimal in 1..65535, a missing ']',
 * text after ']' other than ":port", and a user or host that starts with '-' or contains
 * whitespace or control characters (ssh would take it for an option or split it).
 */
destination parse_target(std::string_view text);

} // namespace rpmem::ssh
