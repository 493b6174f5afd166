// SPDX-License-Identifier: BSD-3-Clause
// rpmem sync's parts (sync.cpp: to the replicas; rebuild.cpp: the master from a replica, --from).
#pragma once

#include "master.hpp"
#include "progress.hpp"
#include "tool.hpp"

#include "client/remote_pool.hpp"
#include "client/replica_sync.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace rpmem::tool
{

/** What sync did (or, with --dry-run, would do) to one replica. */
struct sync_result {
	std::size_t replica = 0;
	std::string status;   // in_sync, synchronized, would_sync, missing, damaged, error
	std::string method;   // delta (block checksums) or full
	std::string fallback; // why a delta was not possible, when it was wanted
	bool created = false; // missing or damaged, re-created (a dry run: would be)
	bool damaged = false; // rpmemd refused it as damaged: its parts were removed first
	bool header_repaired = false;
	bool was_behind = false; // marked possibly behind before
	std::uint64_t compared = 0, blocks = 0, differing_blocks = 0;
	std::uint64_t to_move = 0, moved = 0;
	std::size_t ranges = 0;
	double seconds = 0;
	double compare_seconds = 0, local_checksum_seconds = 0;
	std::uint64_t unreplicated_blocks = 0; // differed only in what libpmemobj never replicates
	std::string error;
};

/** The ranges to move between the master and an open replica: the differing blocks (block
 *  checksums), or the whole pool with --full or where rpmemd cannot checksum (said why). */
std::vector<client::byte_span> what_differs(client::remote_pool &pool, const master &m,
                                            const replicate_args &a, sync_result &res,
                                            const std::string &name);

/** rpmem sync --from R: the master rebuilt from replica R (rebuild.cpp). */
sync_result rebuild_master(const poolset::poolset &ps, master &m, std::size_t r,
                           const replicate_args &a, progress::style style);

} // namespace rpmem::tool
