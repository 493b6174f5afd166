// SPDX-License-Identifier: BSD-3-Clause
// The master replica of a pool set on this host, mapped as libpmemobj maps it: every part back
// to back in one range, part 0 from its header, parts i > 0 from past their own 4 KiB header
// (none with SINGLEHDR/NOHDRS), so range offsets are the ones libpmemobj sends to replicas.
// Mapping and headers come from the local pool layer (lib/pmdk): one implementation of
// PMDK's layout for the daemon, replicated_pool and the tool.
#pragma once

#include "pmdk/part_set.hpp"
#include "pmdk/pool_header.hpp"
#include "pmdk/pool_map.hpp"
#include "poolset/poolset.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace rpmem::tool
{

class master
{
public:
	/** Opens, locks (flock, as libpmemobj does: a pool in use is refused) and maps
	 * replica 0's parts. Throws failure naming the part and what to do. */
	explicit master(const poolset::poolset &ps);

	std::uint8_t *base() const { return static_cast<std::uint8_t *>(map_->base()); }
	/** PMDK's pool size: what libpmemobj registers with rpmem_create/rpmem_open. */
	std::uint64_t size() const { return size_; }
	/** First byte replicated through persists: 4096 with headers (the header travels only
	 * as attributes), 0 for NOHDRS. */
	std::uint64_t data_offset() const { return header_ ? pmdk::pool_hdr_size : 0; }
	/** Part 0's header; nullopt for NOHDRS pools. */
	const std::optional<pmdk::pool_hdr> &header() const { return header_; }
	/** Makes [offset, offset+len) of the mapping durable (pmem_persist or pmem_msync). */
	void persist(std::uint64_t offset, std::uint64_t len) const { map_->persist(offset, len); }
	/** Part 0's header carries pmdk::feat_incompat_rpmem_rebuilding: a rebuild from a
	 *  replica (rpmem sync --from) began and did not finish. */
	bool rebuilding() const;
	/** Sets or clears that mark in part 0's header, durably (checksum resealed). */
	void mark_rebuilding(bool on);

private:
	std::unique_ptr<pmdk::part_set> parts_; // declared before map_: unmapped before unlocked
	std::unique_ptr<pmdk::pool_map> map_;
	std::uint64_t size_ = 0;
	std::optional<pmdk::pool_hdr> header_;
};

/** The attributes replica r (> 0) of an n-replica set must carry: the master's signature,
 * version, features, pool set UUID and arch flags; uuid/next/prev as given. */
pool_attr replica_attr(const pmdk::pool_hdr &master_hdr);

} // namespace rpmem::tool
