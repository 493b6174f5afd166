// SPDX-License-Identifier: BSD-3-Clause
// The libpmemobj path: stock libpmemobj runs a transactional workload on a local pool, once
// alone and once with a REPLICA line to the same target (libpmemobj dlopens librpmem.so.1,
// ours). Each run is a child process of rpmem-bench (the same binary in worker mode) started
// with LD_LIBRARY_PATH pointing at our librpmem.so.1 and PMEM_IS_PMEM_FORCE=1 (the local part
// lives in /dev/shm and stands in for pmem).
#pragma once

#include "common.hpp"

#include <string>
#include <vector>

namespace rpmem::bench
{

/** The argv[1] that puts rpmem-bench into worker mode. */
inline constexpr const char *pmemobj_worker_flag = "--pmemobj-worker";

/** Worker mode: `rpmem-bench --pmemobj-worker POOLSET OPS`; prints one result line. */
int pmemobj_worker(int argc, char **argv);

/** Both runs; rows "pmemobj-tx local" (the floor) and "pmemobj-tx replica". */
void pmemobj_scenario(const options &o, const std::string &provider, std::vector<row> &out);

} // namespace rpmem::bench
