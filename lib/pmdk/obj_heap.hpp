// SPDX-License-Identifier: BSD-3-Clause
// What of a closed libpmemobj pool libpmemobj never persists, so never replicates: the bytes a
// comparison of master and replica must not count (rpmem verify). Facts of libpmemobj 1.12's
// layout (PMDK src/libpmemobj: obj.h, heap_layout.h, memblock.c), read from the master only:
//
//   - the pool descriptor's run-time fields: from 2 KiB after the pool header to the lanes at
//     8 KiB (obj.h: OBJ_DSC_P_SIZE, OBJ_LANES_OFFSET);
//   - huge-chunk footers (the last chunk header of a free or used span): "no need to persist,
//     footers are recreated" (memblock.c, huge_write_footer);
//   - free space: the data of free chunks and of unallocated blocks in runs, where libpmemobj
//     keeps run-time bookkeeping (a struct memory_block with two pointers, 64 bytes into a
//     free span) that it never persists, and whose content it never reads back.
//
// Anything the walk does not recognise (another heap version, a damaged zone) ends it there:
// the rest is compared byte for byte.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace rpmem::pmdk
{

struct byte_range {
	std::uint64_t begin = 0, end = 0; // pool offsets, [begin, end)
	bool operator==(const byte_range &) const = default;
};

/** The ranges of `pool` (a whole libpmemobj pool, header at offset 0) libpmemobj does not
 *  replicate, sorted and merged. Empty for what is not a PMEMOBJ pool. */
std::vector<byte_range> obj_unreplicated(std::span<const std::uint8_t> pool);

} // namespace rpmem::pmdk
