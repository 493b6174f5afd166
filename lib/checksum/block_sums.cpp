// SPDX-License-Identifier: BSD-3-Clause
#include "checksum/block_sums.hpp"

#include <xxhash.h>

#include <algorithm>

namespace rpmem::checksum
{

block_sum of(const void *data, std::size_t len) noexcept
{
	XXH128_hash_t h = XXH3_128bits(data, len);
	return block_sum{h.low64, h.high64};
}

void blocks(const std::uint8_t *data, std::uint64_t len, std::uint32_t block,
            std::span<block_sum> out) noexcept
{
	for (std::size_t i = 0; i < out.size(); ++i) {
		const std::uint64_t off = std::uint64_t{i} * block;
		out[i] = of(data + off,
		            static_cast<std::size_t>(std::min<std::uint64_t>(block, len - off)));
	}
}

} // namespace rpmem::checksum
