// SPDX-License-Identifier: BSD-3-Clause
// Lanes taken consecutively or 8 apart (libpmemobj) by concurrent threads travel on different
// connections, and every connection carries about as many lanes as any other.
#include "client/lane_map.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

using rpmem::client::busiest_connection;
using rpmem::client::connection_of;

TEST_CASE("lane map: concurrent threads' lanes are spread over the connections", "[lane_map]")
{
	for (std::uint32_t conns : {2u, 3u, 4u, 5u, 8u, 12u, 16u}) {
		for (std::uint32_t stride : {1u, 8u}) {
			// Up to 8 threads (and all connections' worth of libpmemobj's).
			std::uint32_t threads = stride == 8 ? conns : std::min(conns, 8u);
			INFO(threads << " threads, " << conns << " connections, lanes " << stride
			             << " apart");
			std::set<std::uint32_t> used;
			for (std::uint32_t t = 0; t < threads; ++t)
				used.insert(connection_of(t * stride, conns));
			CHECK(used.size() == threads);
		}
	}
	// The pattern that piled up before: libpmemobj's first four threads, four connections.
	std::set<std::uint32_t> four;
	for (std::uint32_t lane : {0u, 8u, 16u, 24u})
		four.insert(connection_of(lane, 4));
	CHECK(four.size() == 4);
}

TEST_CASE("lane map: every lane has a connection and none carries many more", "[lane_map]")
{
	for (std::uint32_t conns : {1u, 2u, 3u, 4u, 5u, 8u, 12u, 16u}) {
		for (std::uint32_t lanes : {1u, 7u, 9u, 64u, 1000u, 1024u, 65536u}) {
			INFO(lanes << " lanes over " << conns << " connections");
			std::uint32_t outside = 0;
			for (std::uint32_t l = 0; l < lanes; ++l)
				outside += connection_of(l, conns) >= conns;
			CHECK(outside == 0);
			std::uint32_t even = (lanes + conns - 1) / conns;
			CHECK(busiest_connection(lanes, conns) <= even + (conns <= 8 ? 1 : 4));
		}
	}
	CHECK(busiest_connection(1024, 4) == 256);
}
