// SPDX-License-Identifier: BSD-3-Clause
// rpmemd's pool store: pool sets on disk under the poolset directory. Create, open, set the
// attributes of, close and remove pools with PMDK's rules (docs/design.md, PMDK §P2),
// PMDK-compatible headers, one flock per part and descriptors confined to the directory.
#pragma once

#include "pool_header.hpp"

#include "control/messages.hpp"
#include <rpmem/error.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rpmemd
{

/** A pool store failure: the status rpmemd reports to the client, an errno and a message.
 * The message is complete (it carries the system's reason where there is one), so what() is
 * the message itself, without a second strerror. */
class store_error : public rpmem::error
{
public:
	store_error(rpmem::control::status st, int errnum, std::string msg);
	rpmem::control::status status() const noexcept { return status_; }
	const char *what() const noexcept override;

private:
	rpmem::control::status status_;
};

/** Remote pools must have parts of at least 2 MiB (librpmem.h RPMEM_MIN_PART). */
inline constexpr std::uint64_t min_part_size = 2u << 20;
/** and be at least 8 KiB large (RPMEM_MIN_POOL). */
inline constexpr std::uint64_t min_pool_size = 8u << 10;

/**
 * An open pool: every part mapped into one contiguous range and flock(LOCK_EX|LOCK_NB)-ed.
 * Offset 0 is the start of part 0 (its header included); every part after the first is mapped
 * from past its own 4 KiB header, so offsets stay contiguous (docs/design.md, PMDK §P2). The
 * destructor marks a clean shutdown (SDS pools), unmaps and unlocks; it never throws.
 */
class pool
{
public:
	pool(const pool &) = delete;
	pool &operator=(const pool &) = delete;
	~pool();

	void *base() noexcept { return map_->base(); }
	/** Bytes mapped: what the client may register (PMDK's set->poolsize). */
	std::uint64_t size() const noexcept { return map_->size(); }
	bool is_pmem() const noexcept { return map_->is_pmem(); }
	bool has_headers() const noexcept { return nhdrs_ > 0; }
	/** The attributes stored in part 0's header (docs/design.md, PMDK §P3); zeros for NOHDRS.
	 */
	rpmem::control::pool_attr attr() const { return attr_; }
	/** Rewrites every part header (links, checksum) durably. nullopt or zeros are valid
	 * only for NOHDRS pools. Throws store_error(pool_cfg) on a mismatch. */
	void set_attr(const std::optional<rpmem::control::pool_attr> &attr);
	/** Durable: pmem_persist on pmem, else pmem_msync. Throws rpmem::error. */
	void persist(std::uint64_t offset, std::uint64_t len) { map_->persist(offset, len); }
	void deep_persist(std::uint64_t offset, std::uint64_t len)
	{
		map_->deep_persist(offset, len);
	}
	const std::string &descriptor() const noexcept { return descriptor_; }

private:
	friend class pool_store;
	pool(std::string descriptor, part_set parts, bool single_header);

	void map_parts();
	/** Part p's header, mapped on its own (a Device DAX maps its whole alignment). */
	header_window window(unsigned p) const { return parts_.header(p, *map_); }
	void write_headers(const rpmem::control::pool_attr &attr);
	void load_headers();
	void check_single_header(std::uint32_t incompat, const char *where) const;
	/** PMDK's shutdown state check of part 0 (ADR failure: refused; else reinitialised). */
	void check_unsafe_shutdown(const pool_hdr &first);
	device_state devices() const;
	void mark_open(bool open);
	void discard() noexcept;

	std::string descriptor_;
	part_set parts_; // declared before map_: unmapped before unlocked
	unsigned nhdrs_; // parts with a header: all, 1 (SINGLEHDR) or 0 (NOHDRS)
	bool single_header_;
	std::unique_ptr<pool_map> map_;
	rpmem::control::pool_attr attr_{};
	bool marked_open_ = false; // shutdown state says "open": clear it on close
};

class pool_store
{
public:
	/** poolset_dir must be an absolute path to an existing directory. Throws store_error.
	 * sysfs_root: where Device DAX parts are looked up (tests give a fake tree). */
	explicit pool_store(std::string poolset_dir, std::string sysfs_root = "/sys");

	const std::string &poolset_dir() const noexcept { return dir_; }

	/**
	 * The real path of a descriptor's pool set (or plain pool) file. Refused with
	 * store_error(badname, EINVAL): empty, absolute or '..' descriptors, and ones that lead
	 * outside the poolset directory through a symbolic link or name a device, directory or
	 * anything else that is not a regular file. A missing file is noexist (ENOENT).
	 */
	std::string resolve(std::string_view descriptor) const;

	/**
	 * Creates the pool described by the pool set file: part files (O_EXCL, mode 0600 minus
	 * the umask, fallocated, locked) and PMDK headers from attr (nullopt: a NOHDRS pool).
	 * A pool set must give at least min_size bytes (the client's pool size, header
	 * included). On any failure every part file this call created is removed.
	 */
	std::unique_ptr<pool> create(std::string_view descriptor,
	                             const std::optional<rpmem::control::pool_attr> &attr,
	                             std::uint64_t min_size);

	/** Opens, locks, maps and validates an existing pool of at least min_size bytes. */
	std::unique_ptr<pool> open(std::string_view descriptor, std::uint64_t min_size);

	/**
	 * Removes every part file (each locked first, so a pool in use is busy and nothing is
	 * removed). force: missing pool set or part files and parse errors are ignored.
	 * remove_poolset_file: also unlinks the pool set file.
	 */
	void remove(std::string_view descriptor, bool force, bool remove_poolset_file);

private:
	std::string dir_;      // as given
	std::string real_dir_; // realpath(dir_), for confinement checks
	sysfs sysfs_;
};

} // namespace rpmemd
