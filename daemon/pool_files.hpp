// SPDX-License-Identifier: BSD-3-Clause
// The pool store's work on files: the pool set layout (parts, headers, the contiguous
// extents), part files (open, create, lock, allocate, remove) and how a failed system call is
// reported (PMDK's status and the system's reason). Used by pool.cpp and pool_store.cpp.
#pragma once

#include "pool_store.hpp"

#include "pmdk/device_dax.hpp"
#include "poolset/poolset.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <vector>

namespace rpmemd::store_detail
{

using rpmem::control::pool_attr;
using rpmem::control::status;

/** rpmemd.c rpmemd_db_get_status: how PMDK reports a failed system call to the client. */
status status_of_errno(int e) noexcept;

[[noreturn]] void fail(status st, int e, std::string msg);

/** A failed system call: the message says what failed, the system's reason and what to do. */
[[noreturn]] void fail_errno(int e, std::string_view what, std::string_view todo = {});

bool is_zero(const pool_attr &a) noexcept;

std::uint64_t page_down(std::uint64_t v) noexcept;

/** A pool set (or a plain pool file, PMDK's single-part pool) as the store needs it. */
struct layout {
	std::string file;
	bool is_poolset = true;
	std::vector<rpmem::poolset::part> parts;
	std::size_t replicas = 1;
	bool single_header = false;
	bool no_headers = false;

	unsigned nhdrs() const
	{
		return no_headers ? 0 : single_header ? 1 : static_cast<unsigned>(parts.size());
	}
	/** PMDK's set->poolsize: the contiguous range, part 0's header included. */
	std::uint64_t map_size() const
	{
		std::uint64_t sum = 0;
		for (std::size_t i = 0; i < parts.size(); ++i)
			sum += part_extent(i, parts[i].size, parts.size(), nhdrs()).length;
		return sum;
	}
};

std::string read_poolset_text(int fd, const std::string &path);

/** Reads a pool set file; any other regular file is a single-part pool (PMDK set.c). */
layout load_layout(const std::string &path);

/** The rules every remote pool set obeys (util_pool_create_uuids / util_pool_open_remote). */
void check_layout(const layout &l, std::uint64_t min_size);

/** PMDK: attributes go with headers, and SINGLEHDR must match the incompat flag. */
void check_create_attr(const layout &l, const std::optional<pool_attr> &attr);

void lock_part(int fd, const std::string &path, std::string_view descriptor);

/** A Device DAX part as sysfs describes it; refuses other character devices. */
std::optional<dax_device> dax_of(const sysfs &sys, const struct stat &st,
                                 const rpmem::poolset::part &p, std::string_view descriptor);

part_file open_part(const rpmem::poolset::part &p, std::string_view descriptor, const sysfs &sys);

/** PMDK accepts an existing part of the declared size whose header area is all zeros. */
/** A Device DAX has no read(2): its head is read through a mapping of its alignment. */
std::array<std::uint8_t, pool_hdr_size> read_head(const part_file &f);

void check_unused(const part_file &f, std::string_view descriptor);

part_file create_part(const rpmem::poolset::part &p, std::string_view descriptor, const sysfs &sys);

/** Allocates the blocks now, so a full file system fails here instead of as SIGBUS later. */
void allocate_part(const part_file &f);

/** Zeroes the first `len` bytes of a part (a Device DAX through a mapping: it has no
 *  write(2)); false if that failed. */
bool zero_head(int fd, const std::string &path, std::uint64_t len,
               std::uint64_t dax_alignment) noexcept;

/** Removes a part as PMDK's util_unlink did: unlinks a file, zeroes the head of a Device DAX
 *  (which outlives any pool on it). Returns 0 or the errno. */
int remove_part(const part_file &f) noexcept;

void unlink_created(std::vector<part_file> &parts) noexcept;

/** Opens (create: creates) and locks every part; on failure removes what it created. */
/** PMDK's util_poolset_check_devdax: Device DAX parts are all or none, and several of them
 *  with a header each need a 4 KiB alignment (a header page must start the next mapping). */
void check_dax_rules(const std::vector<part_file> &parts, const layout &l,
                     std::string_view descriptor);

std::vector<part_file> acquire_parts(const layout &l, std::string_view descriptor, bool create,
                                     const sysfs &sys);

} // namespace rpmemd::store_detail
