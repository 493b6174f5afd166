// SPDX-License-Identifier: BSD-3-Clause
// The persist request a lane builds in its message slot (docs/protocol.md, "Lane messages"): the
// ranges flushed on the lane and not yet durable. A range up to the inline threshold carries its
// bytes in the request; a larger one was written by RDMA and only its entry travels. Pure logic
// over a buffer — no libfabric — so it is unit-tested directly (tests/unit/lane_batch_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace rpmem::client
{

struct range {
	std::uint64_t offset = 0;
	std::uint64_t length = 0;

	std::uint64_t end() const { return offset + length; }
	bool overlaps(const range &o) const { return offset < o.end() && o.offset < end(); }
};

class lane_batch
{
public:
	lane_batch() = default;
	/** slot: room for the request header and payload_max bytes of payload. Ranges of at most
	 * inline_threshold bytes carry their data. */
	lane_batch(std::uint8_t *slot, std::size_t payload_max, std::uint64_t inline_threshold);

	/** Whether a range of `length` bytes carries its data in the request. */
	bool travels_inline(std::uint64_t length) const { return length <= inline_threshold_; }
	/** Payload bytes a range of `length` takes: its entry, and its data when inline. */
	std::size_t cost(std::uint64_t length) const;
	/** Payload bytes one request holds. */
	std::size_t capacity() const { return payload_max_; }
	/** Whether a range of `length` bytes still fits this request. */
	bool fits(std::uint64_t length) const { return bytes_ + cost(length) <= payload_max_; }

	/** Adds a range with its bytes (from src). Requires travels_inline(len) and fits(len). */
	void add_inline(range r, const void *src);
	/** Adds the entry of a range written by RDMA. Requires fits(len). */
	void add_written(range r);

	/**
	 * Whether older inline bytes of this batch lie under r. rpmemd applies a request's inline
	 * data when the request arrives, after every RDMA write posted before it: such a batch
	 * must be sent (and completed) before a newer write of r, or its older bytes would land
	 * on top of the write.
	 */
	bool under_inline(range r) const { return has_inline_ && r.overlaps(inline_extent_); }

	bool empty() const { return entries_ == 0; }
	bool has_inline() const { return has_inline_; }
	std::uint64_t entries() const { return entries_; }
	std::size_t payload_bytes() const { return bytes_; }
	/** The latest range of this batch written by RDMA (APM reads its end back). */
	std::optional<range> last_written() const { return last_written_; }

	/** Writes the request header of a persist of this batch into the slot, empties the batch
	 * and returns the bytes to send (header + payload). */
	std::size_t seal(std::uint32_t lane, std::uint64_t cookie);
	/** Empties the batch without sending it (its ranges were made durable otherwise). */
	void clear();

	std::uint8_t *slot() const { return slot_; }
	std::uint64_t inline_threshold() const { return inline_threshold_; }

private:
	std::uint8_t *slot_ = nullptr;
	std::size_t payload_max_ = 0;
	std::uint64_t inline_threshold_ = 0;
	std::size_t bytes_ = 0;
	std::uint64_t entries_ = 0;
	bool has_inline_ = false;
	range inline_extent_;
	std::optional<range> last_written_;
};

/** How a large persist is pipelined: `count` chunks of `chunk` bytes go first, each written
 * and announced by its own request, so rpmemd makes chunk k durable while chunk k+1 is in
 * transit; the rest travels in the lane's own request. count == 0: not pipelined. */
struct chunk_plan {
	std::uint64_t chunk = 0;
	std::uint32_t count = 0;
};

/** At most `pipeline` requests in flight (the lane's own included), chunks of at least
 * min_chunk bytes rounded up to 4 KiB; persists shorter than 2 x min_chunk are not cut. */
chunk_plan plan_chunks(std::uint64_t length, std::uint32_t pipeline, std::uint64_t min_chunk);

/** The smallest chunk of a pipelined persist unless RPMEM_PIPELINE_CHUNK says otherwise. */
inline constexpr std::uint64_t default_pipeline_chunk = 512u << 10;

/**
 * The smallest chunk a connection pipelines large persists in (0: each persist whole):
 * `asked` (RPMEM_PIPELINE_CHUNK) where set; else default_pipeline_chunk where the provider moves
 * data only inside our calls (tcp: rpmemd's worker receives chunk k+1 while it flushes chunk
 * k), and 0 where it runs progress threads of its own (sockets: with those threads on both
 * sides, the chunks' extra requests cost more than the overlap gains; measured on 2 vCPUs,
 * docs/lab/performance-records.md).
 */
std::uint64_t pipeline_chunk_for(std::optional<std::uint64_t> asked, bool provider_threads);

/** Round trips of one size, in microseconds: a range carried inside the request, and the same
 * range written by RDMA (the method's own way of making it durable). */
struct path_costs {
	std::uint64_t size = 0;
	double inline_us = 0;
	double rma_us = 0;
};

/** Which way a measured tie (within 5 %) goes. */
enum class tie_goes {
	inline_, // GPSPM: rpmemd's worker takes part either way, and inline is one operation fewer
	rdma,    // APM, commit: the RDMA way needs no thread of rpmemd, the inline way does
};

/**
 * The inline threshold two measured sizes suggest (small.size < large.size <= the largest
 * inline range): none when inline is not cheaper at the small size, every range inline when
 * it is cheaper at both, else where the difference crosses zero, interpolated linearly and
 * rounded down to 8 bytes. A difference within 5 % of the RDMA way is a tie, settled by
 * `tie`.
 */
std::uint64_t inline_crossover(const path_costs &small, const path_costs &large,
                               tie_goes tie = tie_goes::inline_);

} // namespace rpmem::client
