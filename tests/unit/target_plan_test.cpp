// SPDX-License-Identifier: BSD-3-Clause
// How rpmemd sizes a pool's fabric target (daemon/target_plan): connections per core, workers
// per core and within the thread budget, --nthreads, queue depths, the provider's limits.
#include "target_plan.hpp"

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
	CHECK(p.cq_size == 12u * 2 * 2);
	in.announced_writes = true; // APM / commit: room for the writes' remote CQ data
	CHECK(plan_target(in).cq_size == 12u * 2 * 2 + std::size_t(32) * 16 * 2);
}
