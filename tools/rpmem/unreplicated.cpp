// SPDX-License-Identifier: BSD-3-Clause
#include "unreplicated.hpp"

#include "tool.hpp"

#include <algorithm>
#include <cstring>
#include <span>

namespace rpmem::tool
{

/** What libpmemobj never persists, so never replicates (lib/pmdk/obj_heap.hpp): its
 *  descriptor's run-time fields, huge-chunk footers, free space. Empty for other pools. */
std::vector<pmdk::byte_range> ignored(const master &m)
{
	if (!m.header() || signature_text(m.header()->signature) != "PMEMOBJ")
		return {};
	return pmdk::obj_unreplicated(std::span<const std::uint8_t>(m.base(), m.size()));
}

/** Makes the replica's copy (buf, at pool offset off, n bytes) equal the master's in the
 *  ranges not compared. `next` walks the sorted ranges along with the chunks. */
void mask_ignored(const master &m, const std::vector<pmdk::byte_range> &skip, std::size_t &next,
                  std::uint8_t *buf, std::uint64_t off, std::uint64_t n)
{
	while (next < skip.size() && skip[next].end <= off)
		++next;
	for (std::size_t i = next; i < skip.size() && skip[i].begin < off + n; ++i) {
		auto from = std::max(skip[i].begin, off), to = std::min(skip[i].end, off + n);
		std::memcpy(buf + (from - off), m.base() + from, to - from);
	}
}

} // namespace rpmem::tool
