// SPDX-License-Identifier: BSD-3-Clause
// The guard's policy: connections that sent fewer bytes than a connection request are closed
// once they are older than the bound, and the oldest at once when more than the cap wait;
// connections that sent their request are never its business. And its log-line budget.
#include "port_guard.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>

using namespace rpmemd;
using namespace std::chrono_literals;

namespace
{

std::vector<std::uint64_t> inodes(const std::vector<close_verdict> &v, close_reason r)
{
	std::vector<std::uint64_t> out;
	for (const auto &e : v)
		if (e.reason == r)
			out.push_back(e.inode);
	std::sort(out.begin(), out.end());
	return out;
}

port_socket silent(std::uint64_t inode)
{
	return {inode, 0, "127.0.0.1:1"};
}

} // namespace

TEST_CASE("port guard: a silent connection is closed once it is older than the bound",
          "[port_guard]")
{
	pending_tracker t(guard_policy{1000ms, 64, 36});
	auto t0 = std::chrono::steady_clock::now();
	std::vector<port_socket> port{silent(1), {2, 36, "honest"}, {3, 35, "almost"}};
	CHECK(t.judge(port, t0).empty());
	CHECK(t.pending() == 2); // 1 and 3: fewer bytes than a request
	CHECK(t.judge(port, t0 + 999ms).empty());
	// A newcomer's age starts when it is first seen.
	port.push_back(silent(4));
	auto v = t.judge(port, t0 + 1000ms);
	CHECK(inodes(v, close_reason::silent) == std::vector<std::uint64_t>{1, 3});
	CHECK(inodes(v, close_reason::over_cap).empty());
	port = {{2, 36, "honest"}, silent(4)};
	CHECK(t.judge(port, t0 + 1999ms).empty());
	CHECK(inodes(t.judge(port, t0 + 2000ms), close_reason::silent) ==
	      std::vector<std::uint64_t>{4});
	// The honest connection is never judged, however old.
	CHECK(t.judge({{{2, 1 << 20, "honest"}}}, t0 + 1h).empty());
	CHECK(t.pending() == 0);
}

TEST_CASE("port guard: beyond the cap the oldest silent connections are closed at once",
          "[port_guard]")
{
	pending_tracker t(guard_policy{60s, 3, 36});
	auto t0 = std::chrono::steady_clock::now();
	std::vector<port_socket> port{silent(10), silent(11)};
	CHECK(t.judge(port, t0).empty());
	port.push_back(silent(12));
	port.push_back(silent(13));
	port.push_back(silent(14));
	port.push_back({15, 100, "honest"});
	auto v = t.judge(port, t0 + 10ms);
	CHECK(t.pending() == 5);
	// 10 and 11 are the oldest; of the three seen together, the lowest inode goes first.
	CHECK(inodes(v, close_reason::over_cap) == std::vector<std::uint64_t>{10, 11});
	CHECK(inodes(v, close_reason::silent).empty());
	// Closed sockets disappear from the port: what is left is within the cap.
	port = {silent(12), silent(13), silent(14), {15, 100, "honest"}};
	CHECK(t.judge(port, t0 + 20ms).empty());
}

TEST_CASE("port guard: a socket number reused by a new connection is a new connection",
          "[port_guard]")
{
	pending_tracker t(guard_policy{1000ms, 64, 36});
	auto t0 = std::chrono::steady_clock::now();
	CHECK(t.judge({{silent(7)}}, t0).empty());
	CHECK(t.judge({{silent(8)}}, t0 + 900ms).empty()); // 7 went, 8 is new
	CHECK(t.judge({{silent(8)}}, t0 + 1500ms).empty());
	CHECK(inodes(t.judge({{silent(8)}}, t0 + 1900ms), close_reason::silent) ==
	      std::vector<std::uint64_t>{8});
}

TEST_CASE("port guard: log lines come in a burst, then one per refill, counting the rest",
          "[port_guard]")
{
	line_budget b(3, 1000ms);
	auto t0 = std::chrono::steady_clock::now();
	CHECK(b.take(t0));
	CHECK(b.take(t0));
	CHECK(b.take(t0 + 10ms));
	CHECK(b.suppressed_before() == 0);
	CHECK_FALSE(b.take(t0 + 20ms));
	CHECK_FALSE(b.take(t0 + 900ms));
	CHECK(b.take(t0 + 1000ms));
	CHECK(b.suppressed_before() == 2);
	CHECK_FALSE(b.take(t0 + 1500ms));
	// Quiet for long: the burst is back, no more.
	for (int i = 0; i < 3; ++i)
		CHECK(b.take(t0 + 60s));
	CHECK(b.suppressed_before() == 0);
	CHECK_FALSE(b.take(t0 + 60s));
}

TEST_CASE("port guard: addresses are written as address:port", "[port_guard]")
{
	sockaddr_in in{};
	in.sin_family = AF_INET;
	in.sin_port = htons(4242);
	in.sin_addr.s_addr = htonl(0x7f000002);
	CHECK(describe_address(&in, sizeof in) == "127.0.0.2:4242");
	sockaddr_in6 in6{};
	in6.sin6_family = AF_INET6;
	in6.sin6_port = htons(7);
	in6.sin6_addr = in6addr_loopback;
	CHECK(describe_address(&in6, sizeof in6) == "[::1]:7");
	CHECK(describe_address(nullptr, 0) == "an unknown address");
	CHECK(describe_address(&in, 4) == "an unknown address");
}
