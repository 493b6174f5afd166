// SPDX-License-Identifier: BSD-3-Clause
// Which fabric connection a lane travels on. Lanes are ordering domains multiplexed over a few
// connections; threads that persist at the same time should find their lanes on different
// connections, or they queue behind one completion queue (one thread reaps, the others wait for
// it to hand their completions over). Applications take lanes in two patterns: consecutive
// (0, 1, 2, ...: rpmem::pool, the C API by hand) and 8 apart (libpmemobj hands each thread the
// next lane plus LANE_JUMP = 8, one cache line of its lane locks: 0, 8, 16, 24). Plain
// l % connections spreads the first and piles the second onto one connection (with 4
// connections every libpmemobj thread landed on connection 0). Lane 8h + o goes to connection
// (o + h) % connections: up to 8 threads of either pattern find distinct connections (all 8 of
// the consecutive ones only where there are 8 or fewer connections), and no connection carries
// more than a few lanes above an even share.
// Pure: unit-tested in tests/unit/lane_map_test.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace rpmem::client
{

inline std::uint32_t connection_of(std::uint32_t lane, std::uint32_t connections)
{
	return (lane % 8 + lane / 8) % connections;
}

/** The most lanes any one connection carries. */
inline std::uint32_t busiest_connection(std::uint32_t lanes, std::uint32_t connections)
{
	std::vector<std::uint32_t> n(connections, 0);
	for (std::uint32_t l = 0; l < lanes; ++l)
		++n[connection_of(l, connections)];
	return *std::max_element(n.begin(), n.end());
}

} // namespace rpmem::client
