// SPDX-License-Identifier: BSD-3-Clause
// What this host can see of a pool set an rpmemd session serves (rpmem status, rpmem top): who
// holds the lock of its first part, and whether its header carries rpmem's "possibly behind"
// mark. Both answer "unknown" (nullopt, false) rather than fail: a pool being created, removed
// or unreadable is shown without them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace rpmem::tool
{

/** The PID holding the flock of the pool's first part (from /proc/locks), if any. */
std::optional<std::int64_t> lock_holder_pid(const std::string &poolset_file);

/** Whether the pool's part 0 header carries rpmem's "possibly behind" mark: its writer may
 *  go on without it (asynchronous replication, or an outage under RPMEM_ON_OUTAGE=continue or
 *  failure_policy::degrade), so it is not taken as current until a clean close or a sync. */
bool marked_behind(const std::string &poolset_file);

} // namespace rpmem::tool
