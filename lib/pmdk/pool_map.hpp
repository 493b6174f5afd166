// SPDX-License-Identifier: BSD-3-Clause
// The address space of a pool: its part files mapped back to back into one contiguous range,
// and the persistence primitive that matches the medium (pmem_persist or pmem_msync).
#pragma once

#include "pmdk/pool_header.hpp"
#include "posix/file.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rpmem::pmdk
{

using posix::unique_fd;

class mapped_range;

/** One part's contribution to the pool's address space. */
struct map_source {
	int fd = -1;
	std::uint64_t offset = 0;        // file offset: 0, or 4096 past a header of part i > 0
	std::uint64_t length = 0;        // bytes, a multiple of the page size
	std::string path;                // for messages
	std::uint64_t dax_alignment = 0; // a Device DAX: persistent memory, mapped this aligned
};

/**
 * Reserves one range for all parts and maps each with MAP_SHARED|MAP_FIXED into it, in order.
 * Tries MAP_SYNC first: a file on a DAX file system is then persistent memory. is_pmem() also
 * honours PMEM_IS_PMEM_FORCE through pmem_is_pmem(). Failures throw rpmem::error.
 */
class pool_map
{
public:
	explicit pool_map(std::span<const map_source> parts);
	pool_map(const pool_map &) = delete;
	pool_map &operator=(const pool_map &) = delete;
	~pool_map();

	void *base() const noexcept { return base_; }
	std::uint64_t size() const noexcept { return size_; }
	bool is_pmem() const noexcept { return is_pmem_; }
	/** Whether the parts were mapped with MAP_SYNC (a DAX file system). */
	bool map_sync() const noexcept { return map_sync_; }

	/** Makes [offset, offset+len) durable: pmem_persist on pmem, else pmem_msync. */
	void persist(std::uint64_t offset, std::uint64_t len) const;
	/** Durable beyond the memory controller's queues (pmem_deep_persist), else pmem_msync. */
	void deep_persist(std::uint64_t offset, std::uint64_t len) const;

private:
	void *at(std::uint64_t offset, std::uint64_t len) const;

	void *base_ = nullptr;
	std::uint64_t size_ = 0;
	bool map_sync_ = false;
	bool is_pmem_ = false;
	std::vector<std::unique_ptr<mapped_range>> ranges_; // for a SIGBUS report (bus_error.hpp)
};

/** A separate 4 KiB mapping of one part's header, so headers of parts i > 0 (outside the
 * pool's range) and part 0's can be rewritten alike. */
class header_window
{
public:
	/** Maps `length` bytes (a Device DAX's alignment; else the 4 KiB header). */
	header_window(int fd, bool map_sync, bool is_pmem, const std::string &path,
	              std::uint64_t length = pool_hdr_size);
	header_window(const header_window &) = delete;
	header_window &operator=(const header_window &) = delete;
	~header_window();

	pool_hdr &hdr() noexcept { return *hdr_; }
	/** Writes the header durably (pmem_persist or pmem_msync). Throws rpmem::error. */
	void persist() const;

private:
	pool_hdr *hdr_ = nullptr;
	std::uint64_t length_;
	bool is_pmem_ = false;
	std::string path_;
};

/**
 * The text of a failed system call: "<what>: <strerror(e)>", then what to do (`todo`, or for
 * the reasons an administrator fixes the same way everywhere: permissions, a read-only or full
 * file system, limits). Storage errors carry it in message(), the text the client is shown.
 */
std::string system_failure(int e, std::string_view what, std::string_view todo = {});

/** The system page size; pool layout assumes 4 KiB (PMDK's x86-64 POOL_HDR_SIZE). */
std::uint64_t page_size() noexcept;

/** Where part i's share of a pool's address space lies in its file (PMDK set.c
 *  util_replica_map_local; docs/design.md §P2): parts i > 0 start past their own 4 KiB header
 *  when every part has one (not with SINGLEHDR or NOHDRS), and end at a page boundary. */
struct extent {
	std::uint64_t offset;
	std::uint64_t length;
};
extent part_extent(std::size_t i, std::uint64_t part_size, std::size_t nparts, std::size_t nhdrs);

} // namespace rpmem::pmdk
