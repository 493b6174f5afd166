// SPDX-License-Identifier: BSD-3-Clause
#include "target_plan.hpp"

#include <algorithm>

namespace rpmemd
{

target_plan plan_target(const target_plan_input &in)
{
	target_plan p;
	const unsigned cores = std::max(1u, in.cores);
	p.lanes = std::clamp<std::uint32_t>(in.lanes, 1, max_lanes);
	p.endpoints = std::min({p.lanes, max_endpoints, 2 * cores});
	p.workers = in.nthreads ? std::min<unsigned>(in.nthreads, p.endpoints)
	                        : std::min<unsigned>(p.endpoints, cores);
	// Endpoints and completion queues are what the provider limits (not lanes); the
	// listener takes an endpoint too.
	if (in.ep_cnt && in.ep_cnt < p.endpoints + 1)
		p.endpoints = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(in.ep_cnt) - 1);
	if (in.cq_cnt && in.cq_cnt < p.workers)
		p.workers = static_cast<unsigned>(in.cq_cnt);
	p.workers = std::min<unsigned>(p.workers, p.endpoints);
	p.per_conn = (p.lanes + p.endpoints - 1) / p.endpoints;
	p.queue_depth = p.per_conn * pipeline_depth <= max_queue_depth
	                    ? p.per_conn * pipeline_depth
	                    : std::min(p.per_conn, max_queue_depth);
	// The client posts as many receives for responses (it keeps its own limit too).
	p.queue_depth = std::min(p.queue_depth, in.posted_recv_limit);
	if (!in.nthreads) {
		const unsigned budget = 2 * cores + 4;
		const unsigned used = in.threads_running + 1; // + the accept thread
		p.workers = std::clamp<unsigned>(budget > used ? budget - used : 1, 1, p.workers);
	}
	// Each endpoint: a receive per request, an injected response per request; and with
	// commit or APM the writes' remote CQ data too (clients keep up to 16 commit writes in
	// flight per lane; APM's writes between two drains are not bounded, and what exceeds the CQ
	// waits in the provider's overflow list until the worker reads it).
	p.demand.endpoints = (p.endpoints + p.workers - 1) / p.workers;
	p.demand.receives = p.queue_depth;
	p.demand.transmits = p.queue_depth;
	p.demand.remote_events = in.announced_writes ? std::size_t(p.per_conn) * 16 : 0;
	p.asked = rpmem::fabric::ask_sizes(p.demand);
	p.sizes = in.granted.tx_size && in.granted.rx_size ? in.granted : p.asked;
	p.cq_size = rpmem::fabric::cq_entries(p.demand, p.sizes);
	return p;
}

} // namespace rpmemd
