// SPDX-License-Identifier: BSD-3-Clause
// Checksums of fixed-size blocks of memory, as the control protocol's checksum messages carry
// them (docs/protocol.md, checksum): XXH3-128 of each block, the last one possibly shorter.
#pragma once

#include "control/messages.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace rpmem::checksum
{

using control::block_sum;

/** XXH3-128 of `len` bytes at `data`. */
block_sum of(const void *data, std::size_t len) noexcept;

/**
 * out[i] = of(data + i * block, ...) for the blocks of [data, data+len), the last one possibly
 * shorter; out.size() must be their count (control::checksum_count).
 */
void blocks(const std::uint8_t *data, std::uint64_t len, std::uint32_t block,
            std::span<block_sum> out) noexcept;

} // namespace rpmem::checksum
