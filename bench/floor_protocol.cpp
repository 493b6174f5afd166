// SPDX-License-Identifier: BSD-3-Clause
#include "floor_protocol.hpp"

#include <fmt/format.h>

#include <sstream>

namespace rpmem::bench::floor_proto
{

std::string format_ready(const ready &r)
{
	std::string hex;
	for (auto b : r.secret)
		hex += fmt::format("{:02x}", b);
	return fmt::format("RPMEM-FLOOR {} {} {} {} {} {} {}\n", version, r.provider, r.address,
	                   r.port, r.rkey, r.raddr, hex);
}

std::optional<ready> parse_ready(const std::string &line)
{
	std::istringstream in(line);
	std::string magic, hex;
	int v = 0;
	unsigned port = 0;
	ready r;
	if (!(in >> magic >> v >> r.provider >> r.address >> port >> r.rkey >> r.raddr >> hex))
		return std::nullopt;
	if (magic != "RPMEM-FLOOR" || v != version || port == 0 || port > 65535 ||
	    hex.size() != 2 * secret_size)
		return std::nullopt;
	r.port = static_cast<std::uint16_t>(port);
	for (std::size_t i = 0; i < secret_size; ++i) {
		try {
			r.secret[i] = static_cast<std::uint8_t>(
			    std::stoul(hex.substr(2 * i, 2), nullptr, 16));
		} catch (const std::exception &) {
			return std::nullopt;
		}
	}
	return r;
}

} // namespace rpmem::bench::floor_proto
