// SPDX-License-Identifier: BSD-3-Clause
// Helpers every rpmem command shares: attribute options, UUIDs, sizes, printing.
#include "tool.hpp"

#include "json/json.hpp"

#include "poolset/poolset.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

namespace rpmem::tool
{

namespace
{

std::uint32_t parse_flags(const std::string &text, const char *what)
{
	errno = 0;
	char *end = nullptr;
	unsigned long long v = std::strtoull(text.c_str(), &end, 0);
	if (text.empty() || *end != '\0' || errno || v > UINT32_MAX || text[0] == '-')
		throw failure(fmt::format("invalid {} '{}': give a 32-bit number (decimal or 0x..)",
		                          what, text),
		              exit_usage);
	return static_cast<std::uint32_t>(v);
}

int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

// PMDK's struct uuid keeps time_low/time_mid/time_hi as little-endian integers: the textual
// order of the first 8 bytes is reversed per field (daemon/pool_header.cpp uuid_string).
constexpr std::array<int, 16> text_order{3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};

} // namespace

bool attr_options::any() const
{
	return !signature.empty() || major >= 0 || !compat.empty() || !incompat.empty() ||
	       !ro_compat.empty() || !poolset_uuid.empty() || !uuid.empty() || !next_uuid.empty() ||
	       !prev_uuid.empty();
}

void attr_options::apply(control::pool_attr &a) const
{
	if (!signature.empty()) {
		if (signature.size() > a.signature.size())
			throw failure(fmt::format("signature '{}' is longer than {} characters",
			                          signature, a.signature.size()),
			              exit_usage);
		a.signature.fill('\0');
		std::memcpy(a.signature.data(), signature.data(), signature.size());
	}
	if (major >= 0) {
		if (major > UINT32_MAX)
			throw failure(fmt::format("major {} does not fit in 32 bits", major),
			              exit_usage);
		a.major = static_cast<std::uint32_t>(major);
	}
	if (!compat.empty())
		a.compat_features = parse_flags(compat, "compat features");
	if (!incompat.empty())
		a.incompat_features = parse_flags(incompat, "incompat features");
	if (!ro_compat.empty())
		a.ro_compat_features = parse_flags(ro_compat, "ro-compat features");
	if (!poolset_uuid.empty())
		a.poolset_uuid = parse_uuid(poolset_uuid);
	if (!uuid.empty())
		a.uuid = parse_uuid(uuid);
	if (!next_uuid.empty())
		a.next_uuid = parse_uuid(next_uuid);
	if (!prev_uuid.empty())
		a.prev_uuid = parse_uuid(prev_uuid);
}

std::array<std::uint8_t, 16> parse_uuid(const std::string &text)
{
	std::array<std::uint8_t, 16> out{};
	std::string hex;
	for (char c : text)
		if (c != '-')
			hex += c;
	bool ok = hex.size() == 32 && text.size() == 36 && text[8] == '-' && text[13] == '-' &&
	          text[18] == '-' && text[23] == '-';
	for (std::size_t i = 0; ok && i < 16; ++i) {
		int hi = hex_digit(hex[2 * i]);
		int lo = hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			ok = false;
		else
			out[static_cast<std::size_t>(text_order[i])] =
			    static_cast<std::uint8_t>(hi * 16 + lo);
	}
	if (!ok)
		throw failure(
		    fmt::format("invalid UUID '{}': give 8-4-4-4-12 hexadecimal digits", text),
		    exit_usage);
	return out;
}

std::string uuid_text(const std::array<std::uint8_t, 16> &u)
{
	std::string s;
	for (std::size_t i = 0; i < 16; ++i) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			s += '-';
		s += fmt::format("{:02x}", u[static_cast<std::size_t>(text_order[i])]);
	}
	return s;
}

std::array<std::uint8_t, 16> random_uuid()
{
	std::array<std::uint8_t, 16> u{};
	std::ifstream in("/dev/urandom", std::ios::binary);
	if (!in.read(reinterpret_cast<char *>(u.data()), u.size()))
		throw failure("cannot read /dev/urandom for a new UUID: is /dev mounted?");
	u[7] = static_cast<std::uint8_t>((u[7] & 0x0f) | 0x40); // version 4 (time_hi_and_version)
	u[8] = static_cast<std::uint8_t>((u[8] & 0x3f) | 0x80); // RFC 4122 variant
	return u;
}

std::string signature_text(const std::array<char, 8> &sig)
{
	std::string s;
	for (char c : sig) {
		if (c == '\0')
			break;
		s += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
	}
	return s;
}

std::string size_text(std::uint64_t bytes)
{
	const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = static_cast<double>(bytes);
	std::size_t u = 0;
	while (v >= 1024 && u + 1 < std::size(units)) {
		v /= 1024;
		++u;
	}
	if (u == 0)
		return fmt::format("{} B", bytes);
	return fmt::format("{:.1f} {}", v, units[u]);
}

std::uint64_t parse_size_arg(const std::string &text, const char *what)
{
	std::uint64_t v = 0;
	if (!poolset::parse_size(text, v) || v == 0)
		throw failure(fmt::format("invalid {} '{}': give a positive size such as 8M, 1G or "
		                          "4096",
		                          what, text),
		              exit_usage);
	return v;
}

void print_attr(const control::pool_attr &a)
{
	if (a.is_zero()) {
		fmt::print("Headers           : none (OPTION NOHDRS: attributes are all zero)\n");
		return;
	}
	fmt::print("Signature         : {}\n", signature_text(a.signature));
	fmt::print("Major             : {}\n", a.major);
	fmt::print("Compat features   : {:#x}\n", a.compat_features);
	fmt::print("Incompat features : {:#x}\n", a.incompat_features);
	fmt::print("RO compat features: {:#x}\n", a.ro_compat_features);
	fmt::print("Pool set UUID     : {}\n", uuid_text(a.poolset_uuid));
	fmt::print("UUID              : {}\n", uuid_text(a.uuid));
	fmt::print("Next replica UUID : {}\n", uuid_text(a.next_uuid));
	fmt::print("Prev replica UUID : {}\n", uuid_text(a.prev_uuid));
	std::string flags;
	for (auto b : a.user_flags)
		flags += fmt::format("{:02x}", b);
	fmt::print("User flags        : {}\n", flags);
}

void json_attr(json &j, const control::pool_attr &a)
{
	j.member("headers", !a.is_zero());
	if (a.is_zero())
		return;
	std::string flags;
	for (auto b : a.user_flags)
		flags += fmt::format("{:02x}", b);
	j.member("signature", signature_text(a.signature))
	    .member("major", a.major)
	    .member("compat_features", a.compat_features)
	    .member("incompat_features", a.incompat_features)
	    .member("ro_compat_features", a.ro_compat_features)
	    .member("poolset_uuid", uuid_text(a.poolset_uuid))
	    .member("uuid", uuid_text(a.uuid))
	    .member("next_uuid", uuid_text(a.next_uuid))
	    .member("prev_uuid", uuid_text(a.prev_uuid))
	    .member("user_flags", flags);
}

} // namespace rpmem::tool
