// SPDX-License-Identifier: BSD-3-Clause
#include "client/dirty_map.hpp"

#include <algorithm>
#include <bit>

namespace rpmem::client
{

dirty_map::dirty_map(std::uint64_t pool_size, std::uint64_t block)
    : size_(pool_size), block_(block), shift_(static_cast<unsigned>(std::countr_zero(block))),
      words_(static_cast<std::size_t>(((pool_size + block - 1) / block + 63) / 64)),
      bits_(new std::atomic<std::uint64_t>[words_])
{
	for (std::size_t i = 0; i < words_; ++i)
		bits_[i].store(0, std::memory_order_relaxed);
}

std::uint64_t dirty_map::block_for(std::uint64_t pool_size) noexcept
{
	std::uint64_t block = 4096;
	while (pool_size / block > (std::uint64_t{16} << 20))
		block *= 2;
	return block;
}

void dirty_map::mark(std::uint64_t offset, std::uint64_t length) noexcept
{
	if (length == 0 || offset >= size_)
		return;
	const std::uint64_t first = offset >> shift_;
	const std::uint64_t last = (std::min(offset + length, size_) - 1) >> shift_;
	for (std::uint64_t b = first; b <= last;) {
		const std::size_t w = static_cast<std::size_t>(b / 64);
		const unsigned from = static_cast<unsigned>(b % 64);
		const unsigned to =
		    static_cast<unsigned>(std::min<std::uint64_t>(63, from + (last - b)));
		const std::uint64_t bits =
		    (to == 63 ? ~std::uint64_t{0} : ((std::uint64_t{1} << (to + 1)) - 1)) &
		    ~((std::uint64_t{1} << from) - 1);
		// seq_cst: a catch-up that clears this word before reading the master sees a
		// block set again by a write after that read (dirty_map.hpp).
		bits_[w].fetch_or(bits);
		b += to - from + 1;
	}
}

void dirty_map::mark(const std::vector<byte_span> &ranges) noexcept
{
	for (const auto &r : ranges)
		mark(r.begin, r.size());
}

std::vector<byte_span> dirty_map::take()
{
	std::vector<byte_span> out;
	for (std::size_t w = 0; w < words_; ++w) {
		if (bits_[w].load(std::memory_order_relaxed) == 0)
			continue;
		std::uint64_t bits = bits_[w].exchange(0);
		while (bits) {
			const unsigned i = static_cast<unsigned>(std::countr_zero(bits));
			bits &= bits - 1;
			const std::uint64_t begin = (std::uint64_t{w} * 64 + i) << shift_;
			const std::uint64_t end = std::min(begin + block_, size_);
			if (!out.empty() && out.back().end == begin)
				out.back().end = end;
			else
				out.push_back({begin, end});
		}
	}
	return out;
}

std::uint64_t dirty_map::bytes() const noexcept
{
	std::uint64_t n = 0;
	for (std::size_t w = 0; w < words_; ++w)
		n += static_cast<std::uint64_t>(
		    std::popcount(bits_[w].load(std::memory_order_relaxed)));
	n *= block_;
	// The last block may be short.
	const std::uint64_t last = (size_ - 1) >> shift_;
	if (bits_[last / 64].load(std::memory_order_relaxed) & (std::uint64_t{1} << (last % 64)))
		n -= ((last + 1) << shift_) - size_;
	return n;
}

bool dirty_map::marked(std::uint64_t offset) const noexcept
{
	if (offset >= size_)
		return false;
	const std::uint64_t b = offset >> shift_;
	return (bits_[static_cast<std::size_t>(b / 64)].load() >> (b % 64)) & 1;
}

bool dirty_map::empty() const noexcept
{
	for (std::size_t w = 0; w < words_; ++w)
		if (bits_[w].load(std::memory_order_relaxed))
			return false;
	return true;
}

} // namespace rpmem::client
