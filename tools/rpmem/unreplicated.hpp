// SPDX-License-Identifier: BSD-3-Clause
// What of a libpmemobj pool libpmemobj never persists, so never replicates (lib/pmdk/obj_heap:
// its descriptor's run-time fields, huge-chunk footers, free space): verify does not compare
// those bytes and sync does not move blocks that differ only there.
#pragma once

#include "master.hpp"

#include "pmdk/obj_heap.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rpmem::tool
{

/** The master's unreplicated ranges, sorted; empty for pools that are not libpmemobj's. */
std::vector<pmdk::byte_range> ignored(const master &m);

/** Makes the replica's copy (buf, at pool offset off, n bytes) equal the master's in the
 *  ranges not compared. `next` walks the sorted ranges along with the chunks. */
void mask_ignored(const master &m, const std::vector<pmdk::byte_range> &skip, std::size_t &next,
                  std::uint8_t *buf, std::uint64_t off, std::uint64_t n);

} // namespace rpmem::tool
