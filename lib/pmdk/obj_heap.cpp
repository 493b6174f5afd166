// SPDX-License-Identifier: BSD-3-Clause
#include "pmdk/obj_heap.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace rpmem::pmdk
{

namespace
{

// obj.h and heap_layout.h of libpmemobj 1.12.
constexpr std::uint64_t pool_hdr = 4096;
constexpr std::uint64_t dsc_persistent = 2048;                    // OBJ_DSC_P_SIZE
constexpr std::uint64_t lanes_offset = 8192;                      // OBJ_LANES_OFFSET
constexpr std::uint64_t heap_offset_field = pool_hdr + 1024 + 16; // after layout, lanes, nlanes
constexpr std::uint64_t heap_header_size = 1024;
constexpr std::uint64_t zone_header_size = 64;
constexpr std::uint64_t chunk_header_size = 8;
constexpr std::uint64_t chunksize = 256 * 1024;
constexpr std::uint64_t chunks_per_zone = 65528;
constexpr std::uint32_t zone_magic = 0xC3F0A2D2;
constexpr std::uint64_t run_header_size = 16; // block_size, alignment
constexpr std::uint64_t bits_per_value = 64;
constexpr std::uint64_t run_base_metadata_values = run_header_size / 8;

enum chunk_type : std::uint16_t { footer = 1, free_chunk = 2, used = 3, run = 4 };
constexpr std::uint16_t flag_flex_bitmap = 8;

class reader
{
public:
	explicit reader(std::span<const std::uint8_t> p) : p_(p) {}
	bool has(std::uint64_t off, std::uint64_t len) const
	{
		return off <= p_.size() && len <= p_.size() - off;
	}
	template <class T> T get(std::uint64_t off) const
	{
		T v{};
		std::memcpy(&v, p_.data() + off, sizeof v);
		return v;
	}
	std::uint64_t size() const { return p_.size(); }

private:
	std::span<const std::uint8_t> p_;
};

void add(std::vector<byte_range> &out, std::uint64_t begin, std::uint64_t end)
{
	if (begin < end)
		out.push_back({begin, end});
}

/** Sorted, neighbours merged (chunk headers and chunk data are found interleaved). */
std::vector<byte_range> merged(std::vector<byte_range> in)
{
	std::sort(in.begin(), in.end(),
	          [](const byte_range &a, const byte_range &b) { return a.begin < b.begin; });
	std::vector<byte_range> out;
	for (const auto &r : in)
		if (!out.empty() && out.back().end >= r.begin)
			out.back().end = std::max(out.back().end, r.end);
		else
			out.push_back(r);
	return out;
}

/** The unallocated blocks of a run (memblock.c: memblock_run_bitmap, flexible bitmaps).
 *  Returns false when the run is not one this walk understands. */
bool run_free_blocks(const reader &r, std::uint64_t data, std::uint32_t size_idx,
                     std::uint16_t flags, std::vector<byte_range> &out)
{
	if (!(flags & flag_flex_bitmap) || !r.has(data, run_header_size))
		return false;
	const auto block = r.get<std::uint64_t>(data);
	const auto alignment = r.get<std::uint64_t>(data + 8);
	if (block == 0 || alignment != 0)
		return false; // aligned runs shift their data: compared whole
	const std::uint64_t content = size_idx * chunksize - run_header_size;
	std::uint64_t nbits = content / block;
	std::uint64_t nvalues = (nbits + bits_per_value - 1) / bits_per_value;
	nvalues = (nvalues + run_base_metadata_values + 7) / 8 * 8 - run_base_metadata_values;
	const std::uint64_t bitmap_size = nvalues * 8;
	if (bitmap_size > content)
		return false;
	nbits = (content - bitmap_size) / block;
	const std::uint64_t bitmap = data + run_header_size;
	const std::uint64_t first = bitmap + bitmap_size;
	if (!r.has(first, nbits * block))
		return false;
	for (std::uint64_t i = 0; i < nbits; ++i) {
		auto value = r.get<std::uint64_t>(bitmap + i / bits_per_value * 8);
		if (!(value >> (i % bits_per_value) & 1))
			add(out, first + i * block, first + (i + 1) * block);
	}
	return true;
}

/** One zone's chunks; false when the zone is not a valid one (the walk ends). */
bool walk_zone(const reader &r, std::uint64_t zone, std::vector<byte_range> &out)
{
	if (!r.has(zone, zone_header_size) || r.get<std::uint32_t>(zone) != zone_magic)
		return false;
	const auto nchunks = r.get<std::uint32_t>(zone + 4);
	const std::uint64_t headers = zone + zone_header_size;
	const std::uint64_t chunks = headers + chunks_per_zone * chunk_header_size;
	if (nchunks > chunks_per_zone || !r.has(chunks, nchunks * chunksize))
		return false;
	for (std::uint32_t c = 0; c < nchunks;) {
		const std::uint64_t h = headers + c * chunk_header_size;
		const auto type = r.get<std::uint16_t>(h);
		const auto flags = r.get<std::uint16_t>(h + 2);
		const auto n = r.get<std::uint32_t>(h + 4);
		if (n == 0 || n > nchunks - c)
			return false;
		const std::uint64_t data = chunks + std::uint64_t{c} * chunksize;
		switch (type) {
		case free_chunk:
			add(out, data, data + n * chunksize);
			[[fallthrough]];
		case used:
			if (n > 1) // the footer: the span's last chunk header
				add(out, h + (n - 1) * chunk_header_size,
				    h + n * chunk_header_size);
			break;
		case run:
			if (!run_free_blocks(r, data, n, flags, out))
				return false;
			break;
		default:
			return false;
		}
		c += n;
	}
	return true;
}

} // namespace

std::vector<byte_range> obj_unreplicated(std::span<const std::uint8_t> pool)
{
	reader r(pool);
	std::vector<byte_range> out;
	if (!r.has(0, lanes_offset) || std::memcmp(pool.data(), "PMEMOBJ", 8) != 0)
		return out;
	out.push_back({pool_hdr + dsc_persistent, lanes_offset});
	const auto heap = r.get<std::uint64_t>(heap_offset_field);
	if (heap < lanes_offset || !r.has(heap, heap_header_size) ||
	    std::memcmp(pool.data() + heap, "MEMORY_HEAP_HDR", 16) != 0 ||
	    r.get<std::uint64_t>(heap + 40) != chunksize ||
	    r.get<std::uint64_t>(heap + 48) != chunks_per_zone)
		return out;
	const std::uint64_t zone_size =
	    zone_header_size + chunks_per_zone * (chunk_header_size + chunksize);
	for (std::uint64_t zone = heap + heap_header_size; walk_zone(r, zone, out);
	     zone += zone_size)
		;
	return merged(std::move(out));
}

} // namespace rpmem::pmdk
