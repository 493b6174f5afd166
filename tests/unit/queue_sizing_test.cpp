// SPDX-License-Identifier: BSD-3-Clause
// lib/fabric/queue_sizing: the depths asked for, the completion queue sized for what was granted,
// and libfabric 1.17 verbs' credit accounts (384-entry default queues, receive credits reserved
// per endpoint at bind, a credit per transmit) that the rule must satisfy.
#include "fabric/queue_sizing.hpp"

#include <catch2/catch.hpp>

using namespace rpmem::fabric;

TEST_CASE("queue sizing: receives keep a quarter of the queue free, transmits get a slot each",
          "[unit][queue_sizing]")
{
	for (std::size_t receives : {1u, 2u, 3u, 7u, 12u, 80u, 192u, 256u, 1000u}) {
		CAPTURE(receives);
		const auto s = ask_sizes({.endpoints = 1, .receives = receives, .transmits = 5});
		CHECK(s.rx_size - s.rx_size / 4 >= receives); // granted::posted_recv_limit
		CHECK((s.rx_size - 1) - (s.rx_size - 1) / 4 < receives); // and no deeper
		CHECK(s.tx_size == 5);
	}
	CHECK(ask_sizes({.receives = 256}).rx_size == 341); // 341 - 85 = 256
	// Never 0, which would ask for the provider's default instead.
	const auto none = ask_sizes({.endpoints = 1, .receives = 0, .transmits = 0});
	CHECK(none.rx_size == 1);
	CHECK(none.tx_size == 1);
}

TEST_CASE("queue sizing: the completion queue holds every slot of every endpoint",
          "[unit][queue_sizing]")
{
	const queue_demand d{.endpoints = 3, .receives = 12, .transmits = 24, .remote_events = 32};
	CHECK(ask_sizes(d).rx_size == 15); // 15 - 15 / 4 = 12
	CHECK(cq_entries(d, ask_sizes(d)) == 3 * (15 + 24 + 32));
	// Sized for what the provider granted, not for what was asked.
	CHECK(cq_entries(d, {.tx_size = 384, .rx_size = 384}) == 3 * (384 + 384 + 32));
}

TEST_CASE("queue sizing: verbs' credits, modelled from libfabric 1.17 prov/verbs",
          "[unit][queue_sizing]")
{
	// A CQ exactly as large as its endpoints' receive reservations leaves no transmit credit:
	// the client's old rule (4 x queue depth + 64) at queue depth 80 with verbs' 384 defaults.
	auto c = verbs_credit_check(4 * 80 + 64, 1, {});
	CHECK(c.stalls());
	CHECK_FALSE(c.sound());
	CHECK(c.unreserved == 0);
	// rpmemd's old rule (2 x queue depth x all endpoints on each CQ): 48 lanes on 8 cores make
	// 16 connections of 3 lanes, queue depth 24, CQs of 768 with 2 endpoints each.
	c = verbs_credit_check(2 * 24 * 16, 2, {});
	CHECK(c.stalls());
	// Below the reservations the later endpoints' receives go unreserved: overrun.
	c = verbs_credit_check(500, 2, {});
	CHECK(c.unreserved == 1);
	CHECK(c.transmit == 500 - 384);
	CHECK_FALSE(c.sound());
	// Asked depths given: reserved as asked.
	c = verbs_credit_check(1000, 2, {.tx_size = 100, .rx_size = 300});
	CHECK(c.unreserved == 0);
	CHECK(c.transmit == 400);
	CHECK(c.needed == 200);
	CHECK(c.sound());
}

TEST_CASE("queue sizing: the rule leaves verbs a credit for every transmit, asked or defaulted",
          "[unit][queue_sizing]")
{
	for (std::size_t endpoints : {1u, 2u, 3u, 8u, 16u})
		for (std::size_t depth : {1u, 8u, 24u, 80u, 128u, 256u}) {
			CAPTURE(endpoints, depth);
			// The client's demand (one endpoint per CQ) and rpmemd's (several).
			const queue_demand d{endpoints, depth, 2 * depth, 0};
			const auto asked = ask_sizes(d);
			CHECK(verbs_credit_check(cq_entries(d, asked), endpoints, asked).sound());
			// A provider that grants its defaults instead (verbs: 384 each).
			const endpoint_sizes defaults{verbs_default_size, verbs_default_size};
			CHECK(verbs_credit_check(cq_entries(d, defaults), endpoints, {}).sound());
		}
}
