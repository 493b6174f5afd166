// SPDX-License-Identifier: BSD-3-Clause
// Delta resync: which blocks of a replica differ from the local copy, found by comparing block
// checksums (rpmemd hashes its copy while this process hashes the local one, in parallel).
// replica_sync.hpp moves only those blocks.
#pragma once

#include "client/byte_span.hpp"
#include "client/remote_pool.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace rpmem::client
{

/** Default block of delta resync: 64 KiB (a 1 GiB pool: 16384 sums, 256 KiB of them). */
inline constexpr std::uint32_t default_diff_block = 64 * 1024;

/** What differs between the local copy and a replica over [begin, end). */
struct block_diff {
	std::uint32_t block = default_diff_block;
	std::uint64_t begin = 0, end = 0;
	std::uint64_t blocks = 0; // blocks compared
	std::uint64_t differing_blocks = 0;
	std::vector<byte_span> ranges; // differing blocks, neighbours merged, clipped to end
	double local_seconds = 0;      // hashing the local copy (beside rpmemd hashing its own)
	double compare_seconds = 0;    // the whole comparison: both sides and the sums' transfer
	std::uint64_t bytes() const;   // bytes in ranges: what a delta resync moves
};

/**
 * Compares [begin, end) of `local` (the memory registered with `rp`, pool offset 0 at local)
 * with the replica through block checksums. Throws rpmem::error(ENOTSUP) when its rpmemd
 * cannot checksum (older than protocol 1.2, or block-checksums = no): the caller copies all.
 */
block_diff compare_blocks(remote_pool &rp, const std::uint8_t *local, std::uint64_t begin,
                          std::uint64_t end, std::uint32_t block = default_diff_block);

/** Checksums of [begin, end) of local as compare_blocks computes them (the last block short). */
std::vector<control::block_sum> local_checksums(const std::uint8_t *local, std::uint64_t begin,
                                                std::uint64_t end, std::uint32_t block);

/** The differing blocks of two checksum lists, as merged byte ranges from `begin`. */
block_diff diff_sums(const std::vector<control::block_sum> &a,
                     const std::vector<control::block_sum> &b, std::uint64_t begin,
                     std::uint64_t end, std::uint32_t block);

/** Bytes done and to do, called after every chunk moved. */
using progress_fn = std::function<void(std::uint64_t done, std::uint64_t total)>;

} // namespace rpmem::client
