// SPDX-License-Identifier: BSD-3-Clause
// The tiny protocol between rpmem-bench and rpmem-floor, its peer on the replica node.
//
// rpmem-bench starts `rpmem-floor --provider P --buffer B --msg-max M --depth D` over SSH, as
// librpmem starts rpmemd. rpmem-floor listens on the address SSH arrived on (SSH_CONNECTION)
// and writes one line on stdout:
//
//   RPMEM-FLOOR 1 <provider> <address> <port> <rkey> <raddr> <secret hex>\n
//
// or "RPMEM-FLOOR-ERROR <text>\n" and exits 1. The client connects once with the secret as
// connection data; rpmem-floor then answers every message it receives with a reply_size-byte
// message (no persistence, nothing else) and ignores RMA traffic into its buffer. It exits
// when the connection closes or its stdin ends (the SSH session went away).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace rpmem::bench::floor_proto
{

inline constexpr int version = 1;
inline constexpr std::size_t secret_size = 32;
inline constexpr std::size_t reply_size = 16;

struct ready {
	std::string provider;
	std::string address;
	std::uint16_t port = 0;
	std::uint64_t rkey = 0;
	std::uint64_t raddr = 0;
	std::array<std::uint8_t, secret_size> secret{};
};

std::string format_ready(const ready &r);
/** nullopt when `line` (without its newline) is not a well-formed ready line. */
std::optional<ready> parse_ready(const std::string &line);

} // namespace rpmem::bench::floor_proto
