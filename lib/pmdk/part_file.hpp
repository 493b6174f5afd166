// SPDX-License-Identifier: BSD-3-Clause
// Part files of a pool, as PMDK keeps them: each part of an open pool holds an exclusive
// flock (so a second process, rpmemd or libpmemobj, cannot open the pool meanwhile), and a new
// part has its blocks allocated at creation, so a full file system fails there and not as a
// SIGBUS later. Used by rpmemd's store, replicated_pool's local replicas and the rpmem tool.
#pragma once

#include "pmdk/pool_map.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace rpmem::pmdk
{

/** Who holds a flock on fd's file, from /proc/locks: " (pid N)", or "" when unknown. */
std::string lock_holder(int fd);

/** Takes the exclusive flock without waiting: 0, EWOULDBLOCK (held elsewhere: lock_holder
 *  says by whom) or another errno. */
int try_lock(int fd) noexcept;

/** Locks fd or throws rpmem::error: EBUSY "<path> is in use<holder>: <remedy>", or the
 *  system's reason. */
void lock_or_throw(int fd, const std::string &path, std::string_view remedy);

/** Creates part `path` (it must not exist, or be empty), locks it and allocates `size` bytes.
 *  Throws rpmem::error naming the path. */
unique_fd create_part(const std::string &path, std::uint64_t size);

/** Opens existing part `path` read-write and locks it. Throws rpmem::error naming the path. */
unique_fd open_part(const std::string &path);

} // namespace rpmem::pmdk
