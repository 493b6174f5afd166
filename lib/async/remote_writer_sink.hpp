// SPDX-License-Identifier: BSD-3-Clause
// remote_writer's replicator side (internal to lib/async): the sink the pipeline sends to.
#pragma once

#include "async/remote_writer.hpp"

#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

namespace rpmem::async
{

/** Sends the pipeline's batches to the one replica on lane 0, in rounds of relaxed flushes
 *  and a drain (a round never lets a later range overtake an earlier one: round_plan.hpp).
 *  While the replica is away, and from a batch its session failed in, records the batches'
 *  ranges in the writer's dirty map instead: its catch-up moves them. */
class remote_writer::one_replica final : public sink
{
public:
	explicit one_replica(remote_writer &w) : w_(w) {}
	void send(const std::vector<piece> &batch, const staging_ring &ring) override;
	/** The replica did not keep the lag bound (config::lag.congestion, continue only):
	 *  its session is failed, so the batch is recorded and the replica caught up later. */
	bool congested(clock_type::duration sending) override;

	/** The session's lane 0 and the dirty map's writers: the replicator, a call after a
	 *  barrier, the catch-up's last round (which holds it while it brings the replica in
	 *  sync). */
	std::mutex mu;

private:
	remote_writer &w_;
	std::uint64_t registered_ = std::numeric_limits<std::uint64_t>::max(); // session epoch
};

} // namespace rpmem::async
