// SPDX-License-Identifier: BSD-3-Clause
// The unsafe-shutdown state of the devices under a pool's parts, read as PMDK's
// shutdown_state_add_part reads it: through libpmem2 (ndctl on real persistent memory).
#pragma once

#include "pool_store.hpp"

#include <span>
#include <string>

namespace rpmemd
{

/**
 * The sums of the parts' devices' unsafe shutdown counts and id checksums; a device without
 * a count (any file system not on persistent memory) adds zeros, as in PMDK. Throws
 * rpmem::error when a device has a count that cannot be read (PMDK then refused the pool).
 */
device_state devices_of(std::span<const part_file> parts);

} // namespace rpmemd
