// SPDX-License-Identifier: BSD-3-Clause
// How rpmemd sizes a pool's fabric target (daemon/target_plan): connections per core, workers
// per core and within the thread budget, --nthreads, queue depths, the provider's limits.
#include "target_plan.hpp"

#include "fabric/queue_sizing.hpp"

#include <catch2/catch.hpp>

using namespace rpmemd;

TEST_CASE("target plan: two connections and one worker per core, never more than lanes",
          "[unit][target_plan]")
{
	target_plan_input in;
	in.cores = 2;
	in.lanes = 1;
	auto p = plan_target(in);
	CHECK(p.endpoints == 1);
	CHECK(p.workers == 1);
	CHECK(p.queue_depth == pipeline_depth); // one lane, room for its pipeline

	in.lanes = 16;
	p = plan_target(in);
	CHECK(p.endpoints == 4);
	CHECK(p.workers == 2);
	CHECK(p.per_conn == 4);
	CHECK(p.queue_depth == 4 * pipeline_depth);

	in.lanes = 1024; // libpmemobj's lanes: 256 per connection, one request each
	p = plan_target(in);
	CHECK(p.endpoints == 4);
	CHECK(p.per_conn == 256);
	CHECK(p.queue_depth == max_queue_depth);

	in.cores = 64; // bounded by max_endpoints
	p = plan_target(in);
	CHECK(p.endpoints == max_endpoints);
	CHECK(p.workers == max_endpoints);

	in.lanes = 0; // at least one lane
	CHECK(plan_target(in).lanes == 1);
}

TEST_CASE("target plan: the thread budget of 2 x cores + 4, and --nthreads", "[unit][target_plan]")
{
	target_plan_input in;
	in.cores = 2;
	in.lanes = 16;
	in.threads_running = 7; // e.g. sockets' progress threads: 8 + accept = budget 8 reached
	CHECK(plan_target(in).workers == 1);
	in.threads_running = 6;
	CHECK(plan_target(in).workers == 1);
	in.threads_running = 5;
	CHECK(plan_target(in).workers == 2);
	// --nthreads overrides the budget, still within the connections.
	in.threads_running = 7;
	in.nthreads = 3;
	CHECK(plan_target(in).workers == 3);
	in.nthreads = 9;
	CHECK(plan_target(in).workers == 4);
}

TEST_CASE("target plan: what the provider grants bounds connections, workers and queues",
          "[unit][target_plan]")
{
	target_plan_input in;
	in.cores = 4;
	in.lanes = 64;
	in.ep_cnt = 3; // the listener takes one
	in.cq_cnt = 1;
	in.posted_recv_limit = 12;
	auto p = plan_target(in);
	CHECK(p.endpoints == 2);
	CHECK(p.workers == 1);
	CHECK(p.queue_depth == 12);
	// Both connections on the one CQ: each with 12 receives (asked 15: a quarter stays free)
	// and 12 responses (queue_sizing.hpp).
	CHECK(p.asked.rx_size == 15);
	CHECK(p.asked.tx_size == 12);
	CHECK(p.cq_size == 2 * (15u + 12u));
	in.announced_writes = true; // APM / commit: room for the writes' remote CQ data
	CHECK(plan_target(in).cq_size == 2 * (15u + 12u) + std::size_t(32) * 16 * 2);
}

TEST_CASE("target plan: every completion queue leaves verbs a credit for every response",
          "[unit][target_plan]")
{
	// verbs grants what is asked within its device's maximum (thousands of entries); asked
	// nothing, its defaults: 384 each (queue_sizing.hpp).
	for (unsigned cores : {1u, 2u, 4u, 8u, 16u, 64u})
		for (std::uint32_t lanes : {1u, 4u, 16u, 48u, 64u, 256u, 1024u, 65536u}) {
			CAPTURE(cores, lanes);
			target_plan_input in;
			in.cores = cores;
			in.lanes = lanes;
			in.threads_running = 1;
			in.granted = plan_target(in).asked;
			const auto p = plan_target(in);
			CHECK(p.sizes.rx_size == in.granted.rx_size);
			CHECK(p.demand.endpoints * p.workers >= p.endpoints);
			const auto c = rpmem::fabric::verbs_credit_check(
			    p.cq_size, p.demand.endpoints, p.sizes);
			CHECK(c.sound());
			CHECK(p.sizes.rx_size - p.sizes.rx_size / 4 >= p.queue_depth);
			CHECK(p.sizes.tx_size >= p.queue_depth);
		}
	// The old rule (2 x queue depth x connections per CQ) at 48 lanes on 8 cores: verbs'
	// default receive reservations took every credit.
	target_plan_input in;
	in.cores = 8;
	in.lanes = 48;
	const auto p = plan_target(in);
	REQUIRE(p.endpoints == 16);
	REQUIRE(p.queue_depth == 24);
	CHECK(rpmem::fabric::verbs_credit_check(std::size_t(p.queue_depth) * p.endpoints * 2,
	                                        p.demand.endpoints, {})
	          .stalls());
}
