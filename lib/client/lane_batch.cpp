// SPDX-License-Identifier: BSD-3-Clause
#include "client/lane_batch.hpp"

#include "lane/lane_msg.hpp"

#include <algorithm>

namespace rpmem::client
{

namespace ln = rpmem::lane;

lane_batch::lane_batch(std::uint8_t *slot, std::size_t payload_max, std::uint64_t inline_threshold)
    : slot_(slot), payload_max_(payload_max), inline_threshold_(inline_threshold)
{
}

std::size_t lane_batch::cost(std::uint64_t length) const
{
	return ln::entry_size(length, travels_inline(length));
}

void lane_batch::add_inline(range r, const void *src)
{
	bytes_ += ln::encode(r.offset, r.length, src, slot_ + ln::request_header_size + bytes_);
	++entries_;
	if (has_inline_) {
		auto lo = std::min(inline_extent_.offset, r.offset);
		auto hi = std::max(inline_extent_.end(), r.end());
		inline_extent_ = {lo, hi - lo};
	} else {
		inline_extent_ = r;
		has_inline_ = true;
	}
}

void lane_batch::add_written(range r)
{
	bytes_ += ln::encode(r.offset, r.length, nullptr, slot_ + ln::request_header_size + bytes_);
	++entries_;
	last_written_ = r;
}

std::size_t lane_batch::seal(std::uint32_t lane, std::uint64_t cookie)
{
	ln::encode(ln::request{ln::op::persist, lane, 0, entries_, cookie}, slot_);
	std::size_t n = ln::request_header_size + bytes_;
	clear();
	return n;
}

void lane_batch::clear()
{
	bytes_ = 0;
	entries_ = 0;
	has_inline_ = false;
	last_written_.reset();
}

chunk_plan plan_chunks(std::uint64_t length, std::uint32_t pipeline, std::uint64_t min_chunk)
{
	if (pipeline < 2 || min_chunk == 0 || length < 2 * min_chunk)
		return {};
	std::uint64_t chunk =
	    std::max<std::uint64_t>(min_chunk, (length + pipeline - 1) / pipeline);
	chunk = (chunk + 4095) & ~std::uint64_t(4095);
	chunk_plan p{chunk, 0};
	for (std::uint64_t left = length; left > chunk && p.count + 1 < pipeline; left -= chunk)
		++p.count;
	return p;
}

std::uint64_t pipeline_chunk_for(std::optional<std::uint64_t> asked, bool provider_threads)
{
	if (asked)
		return *asked;
	return provider_threads ? 0 : default_pipeline_chunk;
}

std::uint64_t inline_crossover(const path_costs &small, const path_costs &large, tie_goes tie)
{
	// Inline is chosen where it costs at most `margin` times the RDMA way.
	const double margin = tie == tie_goes::inline_ ? 1.05 : 0.95;
	const double d_small = small.inline_us - small.rma_us * margin;
	const double d_large = large.inline_us - large.rma_us * margin;
	// Inline saves a per-operation cost, which shows at the small size first: not cheaper
	// there means none, whatever the large size measured (seen: sockets probed while busy).
	if (d_small > 0)
		return 0;
	if (d_large <= 0)
		return large.size;
	const double span = double(large.size - small.size);
	const auto at =
	    small.size + static_cast<std::uint64_t>(span * -d_small / (d_large - d_small));
	return std::min(at, large.size) & ~std::uint64_t(7);
}

} // namespace rpmem::client
