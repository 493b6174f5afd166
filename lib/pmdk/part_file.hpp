// SPDX-License-Identifier: BSD-3-Clause
// Part files of a pool, as PMDK keeps them: each part of an open pool holds an exclusive
// flock (so a second process, rpmemd or libpmemobj, cannot open the pool meanwhile), a new
// part has its blocks allocated at creation (a full file system fails there and not as a
// SIGBUS later), and a part may be a Device DAX instead of a file. The one implementation for
// rpmemd's store, replicated_pool's local replicas and the rpmem tool; part_set.hpp puts a
// replica's parts together.
#pragma once

#include "pmdk/device_dax.hpp"
#include "pmdk/pool_header.hpp"
#include "posix/file.hpp"
#include "rpmem/error.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rpmem::pmdk
{

using posix::unique_fd;

/** Who holds a flock on fd's file, from /proc/locks: " (pid N)", or "" when unknown. */
std::string lock_holder(int fd);

/** Takes the exclusive flock without waiting: 0, EWOULDBLOCK (held elsewhere: lock_holder
 *  says by whom) or another errno. */
int try_lock(int fd) noexcept;

/** Locks fd or throws rpmem::error: EBUSY "<what> is in use<holder>: <remedy>", or the
 *  system's reason. */
void lock_or_throw(int fd, const std::string &what, std::string_view remedy);

/** A part file shorter than the pool set declares (EINVAL): bytes of the pool are missing,
 *  so the pool is damaged (the file was truncated), not merely configured otherwise. The
 *  callers that tell the two apart catch this type (rpmemd: status damaged). */
class part_truncated : public rpmem::error
{
public:
	using rpmem::error::error;
};

/** One part file of a pool, open; the descriptor holds the part's flock once locked. */
struct part_file {
	unique_fd fd;
	std::string path;
	std::uint64_t size = 0;          // as the pool set declares it
	std::uint64_t file_size = 0;     // what it holds: a file's size, a Device DAX's capacity
	bool created = false;            // created by this process: removed when the creation fails
	std::uint64_t dax_alignment = 0; // a Device DAX: every mapping keeps this alignment
};

/** How a caller's parts are opened and named in its messages. */
struct part_rules {
	/** The pool in messages ("pool app.set"): a part is then "part P of pool app.set";
	 *  empty: a part is named by its path alone. */
	std::string owner;
	/** What to do when another process holds a part's lock. */
	std::string in_use_remedy = "another process has the pool open; close it there first";
	/** What to do when create finds a part that is in use by a pool already. */
	std::string exists_remedy = "remove it, or open the pool set instead of creating it";
	/** How a part's size must compare with the declared one: at least as large; exactly
	 *  (rpmemd's rule); or anything (a pool being removed). */
	enum class size_rule { at_least, exact, any } sizes = size_rule::at_least;
	/** Open without write access (nothing is written; the lock is taken all the same). */
	bool read_only = false;
	/** Where Device DAX parts are described (tests give a fake tree). */
	sysfs dax{"/sys"};

	/** "part P of pool X", or P. */
	std::string name(const std::string &path) const;
};

/** Opens existing part `path` (declared `size` bytes, on pool set line `line`), checks what
 *  it is and its size, and locks it. Throws rpmem::error naming the part; part_truncated
 *  for a file shorter than declared under the exact rule (rpmemd's). */
part_file open_part(const std::string &path, std::uint64_t size, unsigned line,
                    const part_rules &rules);

/**
 * Creates part `path` and locks it, or adopts an unused one (empty, or of the declared size
 * with a zeroed first 4 KiB: what a removed pool leaves on a Device DAX), then allocates its
 * blocks (a Device DAX has them). Throws rpmem::error naming the part; a part it created is
 * removed again before it throws.
 */
part_file create_part(const std::string &path, std::uint64_t size, unsigned line,
                      const part_rules &rules);

/** The first 4 KiB of a part (a Device DAX has no read(2): read through a mapping). */
std::array<std::uint8_t, pool_hdr_size> read_head(const part_file &f);

/** A part's header as it is on its medium (read, not checked). */
pool_hdr read_header(const part_file &f);

/** Writes a part's header durably, through the one path every header write takes
 *  (pmdk::header_window: pmem_persist on persistent memory, else msync). */
void write_header(const part_file &f, const pool_hdr &h, bool is_pmem = false);

/** The header of the part at `path`, read without opening the pool (no lock: it may be in
 *  use); nullopt when it cannot be read. For a look at a replica's identity, never to write. */
std::optional<pool_hdr> peek_header(const std::string &path);

/** The pid that holds the flock of the regular file at `path`, if any. */
std::optional<long> lock_holder_pid(const std::string &path);

/** Zeroes the first `len` bytes of a part (a Device DAX through a mapping: it has no
 *  write(2)); false if that failed. */
bool zero_head(const part_file &f, std::uint64_t len) noexcept;

/** Removes a part as PMDK's util_unlink did: unlinks a file, zeroes the head of a Device DAX
 *  (which outlives any pool on it). Returns 0 or the errno. */
int remove_part(const part_file &f) noexcept;

} // namespace rpmem::pmdk
