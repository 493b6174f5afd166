// SPDX-License-Identifier: BSD-3-Clause
#include "ssh/target.hpp"

#include <rpmem/error.hpp>

#include <cerrno>
#include <fmt/format.h>

namespace rpmem::ssh
{

namespace
{

[[noreturn]] void invalid(std::string_view text, std::string_view what)
{
	throw rpmem::error(
	    EINVAL,
	    fmt::format("invalid target '{}': {} (expected [user@]host[:port])", text, what));
}

/** Rejects what ssh would misread: a leading '-' is an option, blanks split arguments. */
void check_word(std::string_view text, std::string_view word, std::string_view name)
{
	if (word.empty())
		invalid(text, fmt::format("empty {}", name));
	if (word.front() == '-')
		invalid(text, fmt::format("{} '{}' starts with '-'", name, word));
	for (unsigned char c : word)
		if (c <= ' ' || c == 0x7f)
			invalid(text,
			        fmt::format("{} contains whitespace or a control character", name));
}

std::uint16_t parse_port(std::string_view text, std::string_view port)
{
	// At most 5 significant digits; leading zeros are harmless (PMDK used strtol).
	if (port.empty())
		invalid(text, "empty port after ':'");
	unsigned long value = 0;
	for (char c : port) {
		if (c < '0' || c > '9')
			invalid(text, fmt::format("port '{}' is not a decimal number", port));
		value = value * 10 + static_cast<unsigned long>(c - '0');
		if (value > 65535)
			break;
	}
	if (value < 1 || value > 65535)
		invalid(text, fmt::format("port '{}' is not in 1..65535", port));
	return static_cast<std::uint16_t>(value);
}

} // namespace

destination parse_target(std::string_view text)
{
	destination t;
	std::string_view rest = text;
	if (auto at = rest.find('@'); at != std::string_view::npos) {
		t.user = std::string(rest.substr(0, at));
		check_word(text, t.user, "user");
		rest.remove_prefix(at + 1);
	}

	std::optional<std::string_view> port;
	if (rest.starts_with('[')) {
		auto close = rest.find(']');
		if (close == std::string_view::npos)
			invalid(text, "'[' without a closing ']'");
		t.host = std::string(rest.substr(1, close - 1));
		auto after = rest.substr(close + 1);
		if (!after.empty()) {
			if (after.front() != ':')
				invalid(text, fmt::format("unexpected '{}' after ']'", after));
			port = after.substr(1);
		}
	} else if (auto colon = rest.find(':');
	           colon != std::string_view::npos &&
	           rest.find(':', colon + 1) == std::string_view::npos) {
		t.host = std::string(rest.substr(0, colon));
		port = rest.substr(colon + 1);
	} else {
		t.host = std::string(rest); // no colon, or a bare IPv6 literal
	}

	check_word(text, t.host, "host");
	if (port)
		t.port = parse_port(text, *port);
	return t;
}

std::string destination::str() const
{
	std::string s = user.empty() ? std::string() : user + '@';
	if (port && host.find(':') != std::string::npos)
		s += fmt::format("[{}]:{}", host, *port);
	else if (port)
		s += fmt::format("{}:{}", host, *port);
	else
		s += host;
	return s;
}

} // namespace rpmem::ssh
