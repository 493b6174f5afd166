// SPDX-License-Identifier: BSD-3-Clause
// One local replica of a pool set: its part files, created or opened, and mapped contiguously
// by the local pool layer (pmdk::pool_map: part 0 whole, each later part without its 4 KiB
// header, right after the previous), with the copies and flushes replication needs.
#pragma once

#include "pmdk/part_set.hpp"
#include "pmdk/pool_header.hpp"
#include "pmdk/pool_map.hpp"
#include "poolset/poolset.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace rpmem::replication
{

using pmdk::header_fields;

class local_map
{
public:
	/** Creates the part files (they must not exist, or be empty), locked, and maps them. */
	static std::unique_ptr<local_map> create(const poolset::replica &r, std::size_t size);
	/** Maps existing part files, locked as PMDK locks them: EBUSY while another process
	 *  (libpmemobj, rpmemd, another replicated_pool) has the pool open. */
	static std::unique_ptr<local_map> open(const poolset::replica &r, std::size_t size);
	~local_map();
	local_map(const local_map &) = delete;
	local_map &operator=(const local_map &) = delete;

	std::byte *base() const { return static_cast<std::byte *>(map_->base()); }
	std::size_t size() const { return map_->size(); }
	bool is_pmem() const { return map_->is_pmem(); }
	std::size_t parts() const { return parts_->size(); }
	const std::string &path(std::size_t part) const { return (*parts_)[part].path; }

	/** Writes part i's header durably (the part layer's one path: pmdk::header_window). */
	void write_header(std::size_t part, const header_fields &h);
	/** Reads and checks part i's header; throws rpmem::error(EINVAL) naming the file. */
	header_fields read_header(std::size_t part) const;

	void persist(std::size_t off, std::size_t len) const;
	/** Copies [off, off+len) from src (another mapping of the same pool) and persists it. */
	void copy_persist(const std::byte *src, std::size_t off, std::size_t len) const;
	/** Copies and flushes; drain() completes it. */
	void copy_flush(const std::byte *src, std::size_t off, std::size_t len) const;
	void flush(std::size_t off, std::size_t len) const;
	void drain() const;

private:
	explicit local_map(pmdk::part_set parts);
	void map(const poolset::replica &r, std::size_t size);

	std::unique_ptr<pmdk::part_set> parts_; // declared before map_: unmapped before unlocked
	std::unique_ptr<pmdk::pool_map> map_;
};

} // namespace rpmem::replication
