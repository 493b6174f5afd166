// SPDX-License-Identifier: BSD-3-Clause
// What the commands that work on a whole pool set share (verify, sync, check): naming and
// choosing replicas, the replica ring's UUIDs, the attributes a remote replica must carry, and
// anonymous memory registered as the "local pool" when a command only reads a replica.
#pragma once

#include "master.hpp"

#include "control/messages.hpp"
#include "poolset/poolset.hpp"

#include <array>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace rpmem::tool
{

/** "replica 2 (user@host pool.set)". */
std::string replica_name(const poolset::poolset &ps, std::size_t r);

/** rpmemd answers for the replica but refused to open it as damaged (control status
 *  damaged: an invalid part header, a part shorter than its pool set declares, an ADR
 *  failure), as opposed to a replica that cannot be reached or opened at all. */
bool damaged_replica(const std::exception &e);

/** Which replicas to work on: the given indexes (checked) or every remote one. Throws
 *  failure (exit_usage for a bad index). */
std::vector<std::size_t> selected(const poolset::poolset &ps, const std::vector<unsigned> &want);

/** Parses a pool set file; a parse error is a failure with exit_usage. */
poolset::poolset load(const std::string &file);

/** Page-aligned anonymous memory registered as the local pool when a command only reads a
 *  replica (nothing of it is written to any file). */
class scratch
{
public:
	explicit scratch(std::uint64_t size);
	~scratch();
	scratch(const scratch &) = delete;
	scratch &operator=(const scratch &) = delete;
	std::uint8_t *data() const { return addr_; }
	std::uint64_t size() const { return size_; }

private:
	std::uint8_t *addr_ = nullptr;
	std::uint64_t size_ = 0;
};

/**
 * The UUIDs of part 0 of every replica, as the replica ring links them: the master's own, its
 * next (replica 1) and prev (the last replica); others are learned from the replicas opened.
 */
class ring
{
public:
	using uuid = std::array<std::uint8_t, 16>;
	ring(const poolset::poolset &ps, const master &m);
	void learn(std::size_t r, const uuid &self, const uuid &prev, const uuid &next);
	const std::optional<uuid> &self(std::size_t r) const { return ids_[r]; }
	const std::optional<uuid> &prev(std::size_t r) const
	{
		return ids_[(r + ids_.size() - 1) % ids_.size()];
	}
	const std::optional<uuid> &next(std::size_t r) const { return ids_[(r + 1) % ids_.size()]; }

private:
	std::vector<std::optional<uuid>> ids_;
};

/** What the replica's attributes must be; fields the ring does not know keep `have`'s. */
control::pool_attr expected_attr(const master &m, const ring &ring, std::size_t r,
                                 const control::pool_attr &have);

/** Names of the attribute fields that differ. */
std::vector<std::string> attr_differences(const control::pool_attr &want,
                                          const control::pool_attr &have, const ring &ring,
                                          std::size_t r);

/** Remote replica r brought in line with the master as `rpmem sync -r R` does (block
 *  checksums; created when missing; header attributes repaired; the behind mark cleared),
 *  printing nothing; returns what it did in words. Throws rpmem::error or failure. */
std::string resync_replica(const poolset::poolset &ps, const master &m, ring &ring, std::size_t r);

} // namespace rpmem::tool
