// SPDX-License-Identifier: BSD-3-Clause
// The pool store's work on files: the pool set layout (parts, headers, the contiguous
// extents) and the rules rpmemd holds pool sets to, its use of the part layer (lib/pmdk:
// part_set), and how a failure is reported (PMDK's status and the system's reason). Used by
// pool.cpp and pool_store.cpp.
#pragma once

#include "pool_store.hpp"

#include "poolset/poolset.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rpmemd::store_detail
{

using rpmem::control::pool_attr;
using rpmem::control::status;

/** What to do about a pool that is damaged (status damaged): the pool set is right, the
 *  files are not, and the master holds what the replica should. */
inline constexpr std::string_view damaged_remedy =
    "restore the part, or re-create the replica from a sound copy (rpmem check --repair, "
    "rpmem sync or pmempool sync on the master's pool set)";

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

/** How rpmemd opens the parts of pool `descriptor`: exactly the declared size, Device DAX
 *  through `sys`, and its words for a part in use or already taken. */
part_rules rules_for(std::string_view descriptor, const sysfs &sys);

/** A failure of the part layer as the client is told of it: PMDK's status for its errno
 *  (a part locked elsewhere: busy). */
[[noreturn]] void fail_parts(const rpmem::error &e);

/** Opens (create: creates) and locks every part; on failure removes what it created. A part
 *  of an existing pool shorter than declared is status damaged. */
part_set acquire_parts(const layout &l, std::string_view descriptor, bool create, const sysfs &sys);

} // namespace rpmemd::store_detail
