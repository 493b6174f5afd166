// SPDX-License-Identifier: BSD-3-Clause
// What changed in a pool while a replica was away (DRBD's "quick sync" bitmap, md-raid's
// write-intent bitmap): one bit per block, set by every persist the replica did not take, taken
// and cleared a round at a time by the catch-up that brings the replica back. Lock-free: writers
// set bits with atomic or; a round exchanges whole words with zero, so a block written again
// after its round began is set again and goes in a later round.
#pragma once

#include "client/byte_span.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace rpmem::client
{

class dirty_map
{
public:
	/** A map of [0, pool_size) in blocks of `block` bytes (a power of two). */
	dirty_map(std::uint64_t pool_size, std::uint64_t block);
	/** The block for a pool: 4 KiB, doubled until the map takes at most 2 MiB (16 Mi blocks).
	 */
	static std::uint64_t block_for(std::uint64_t pool_size) noexcept;

	dirty_map(const dirty_map &) = delete;
	dirty_map &operator=(const dirty_map &) = delete;

	/** Marks every block [offset, offset+length) touches. */
	void mark(std::uint64_t offset, std::uint64_t length) noexcept;
	/** Marks each range. */
	void mark(const std::vector<byte_span> &ranges) noexcept;
	/** Takes the marked blocks and clears them: merged byte ranges, clipped to the pool. */
	std::vector<byte_span> take();
	/** Whether the block holding `offset` is marked now (false past the pool). */
	bool marked(std::uint64_t offset) const noexcept;
	/** Bytes of the blocks marked now (the last block counted as far as the pool goes). */
	std::uint64_t bytes() const noexcept;
	bool empty() const noexcept;
	std::uint64_t block() const noexcept { return block_; }
	std::uint64_t pool_size() const noexcept { return size_; }

private:
	std::uint64_t size_;
	std::uint64_t block_;
	unsigned shift_;
	std::size_t words_;
	std::unique_ptr<std::atomic<std::uint64_t>[]> bits_;
};

} // namespace rpmem::client
