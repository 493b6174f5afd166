// SPDX-License-Identifier: BSD-3-Clause
// Executes one in-band lane request against a pool: validates every field (lane, kind, range,
// overflow, payload size) before touching memory, then persists. Pure logic — no fabric — so it
// is unit tested and fuzzed directly.
#pragma once

#include "lane/lane_msg.hpp"

#include <cstdint>
#include <span>

namespace rpmemd
{

/** Where persisted bytes live: the mapped pool, as the lane executor sees it. */
class persist_region
{
public:
	virtual ~persist_region() = default;
	virtual std::uint8_t *base() = 0;
	/** Bytes clients may address: the size the client registered (≤ the pool's size). */
	virtual std::uint64_t size() const = 0;
	/** Makes [offset, offset+len) durable: pmem_persist on pmem, msync otherwise. */
	virtual void persist(std::uint64_t offset, std::uint64_t len) = 0;
	/** Durable down to the media even where CPU caches are persistent (msync on files). */
	virtual void deep_persist(std::uint64_t offset, std::uint64_t len) = 0;
};

struct lane_limits {
	std::uint32_t nlanes = 0;
	std::uint32_t inline_max = 0; // largest payload a request may carry
};

/**
 * Validates and executes the request in `msg` (header plus payload, exactly as received).
 * Returns 0 on success or a positive errno (EINVAL for a malformed or out-of-range request,
 * EPROTO for bytes that are not a request, EIO when persisting failed). Never throws.
 * *decoded receives the request header when it could be decoded; *persisted the bytes made
 * durable.
 */
int execute(std::span<const std::uint8_t> msg, const lane_limits &limits, persist_region &region,
            rpmem::lane::request *decoded, std::uint64_t *persisted = nullptr);

/** Copies n bytes so that every 8-byte-aligned word of dst is written by one 8-byte store:
 * a reader of the replica never sees a torn aligned word. */
void atomic_copy(std::uint8_t *dst, const std::uint8_t *src, std::size_t n) noexcept;

} // namespace rpmemd
