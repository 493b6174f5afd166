// SPDX-License-Identifier: BSD-3-Clause
// The parts of one replica of a pool set, open and locked, with PMDK's layout over them
// (PMDK 1.12.1 set.c): each part's share of the pool's address space, the contiguous mapping of
// all of them, and every part header read and written durably through one path. rpmemd's store,
// replicated_pool's local replicas and the rpmem tool (master, promote, check) all use it.
#pragma once

#include "pmdk/part_file.hpp"
#include "pmdk/pool_map.hpp"
#include "poolset/poolset.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

namespace rpmem::pmdk
{

class part_set
{
public:
	/** Opens and locks every part of `parts` (`nhdrs` of them carry a header: all, 1 for
	 *  SINGLEHDR, 0 for NOHDRS). Throws rpmem::error naming the part. */
	static part_set open(std::span<const poolset::part> parts, std::size_t nhdrs,
	                     const part_rules &rules);
	/** Creates (or adopts unused) parts, locked, blocks allocated; on failure removes what
	 *  it created. */
	static part_set create(std::span<const poolset::part> parts, std::size_t nhdrs,
	                       const part_rules &rules);

	part_set(part_set &&) noexcept = default;
	part_set &operator=(part_set &&) noexcept = default;

	std::size_t size() const noexcept { return parts_.size(); }
	const part_file &operator[](std::size_t i) const { return parts_.at(i); }
	std::span<const part_file> parts() const noexcept { return parts_; }
	/** Parts that carry a header. */
	std::size_t headers() const noexcept { return nhdrs_; }

	/** Part i's share of the pool's address space (part_extent; a Device DAX's cut to its
	 *  alignment). */
	extent extent_of(std::size_t i) const;
	/** PMDK's set->poolsize: the extents' sum, part 0's header included. */
	std::uint64_t pool_size() const;
	/** Maps the parts back to back: the first `limit` bytes of the pool (a replica larger
	 *  than its master maps only the master's size). */
	std::unique_ptr<pool_map>
	map(std::uint64_t limit = std::numeric_limits<std::uint64_t>::max()) const;

	/** Part i's header, mapped on its own (parts i > 0 lie outside the pool's range);
	 *  written durably by header_window::persist. `m`: this set's mapping. */
	header_window header(std::size_t i, const pool_map &m) const;
	/** Part i's header as it is on its medium (read, not checked). */
	pool_hdr read_header(std::size_t i) const;

	/** A creation that failed: removes the parts this set created and zeroes the heads of
	 *  the ones it adopted (they were unused: they are given back that way). */
	void discard() noexcept;

private:
	part_set(std::vector<part_file> parts, std::size_t nhdrs);
	/** PMDK's util_poolset_check_devdax: Device DAX parts are all or none, and several of
	 *  them with a header each need a 4 KiB alignment. */
	void check_dax(const part_rules &rules) const;

	std::vector<part_file> parts_;
	std::size_t nhdrs_ = 0;
};

} // namespace rpmem::pmdk
