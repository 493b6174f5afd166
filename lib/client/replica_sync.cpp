// SPDX-License-Identifier: BSD-3-Clause
#include "client/replica_sync.hpp"

#include "client/log.hpp"
#include "pmdk/pool_header.hpp"

#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

namespace rpmem::client
{

namespace
{

/** Bytes moved per step, either way: one persist round trip, or one read and one local
 *  persist. */
constexpr std::uint64_t move_chunk = 4u << 20;

} // namespace

std::string slow_last_round::note() const
{
	if (!taken)
		return {};
	return fmt::format("; its last round, {} bytes, was taken by the link's measured rate: "
	                   "{:.1f} ms at it, within {} ms",
	                   bytes, predicted_ms,
	                   std::chrono::duration_cast<std::chrono::milliseconds>(budget).count());
}

std::uint64_t sync_plan::bytes() const
{
	std::uint64_t n = 0;
	for (const auto &r : ranges)
		n += r.size();
	return n;
}

sync_plan plan_sync(remote_pool &rp, const std::uint8_t *local, std::uint64_t begin,
                    std::uint64_t end, bool full, std::uint32_t block)
{
	sync_plan p;
	if (!full) {
		try {
			p.diff = compare_blocks(rp, local, begin, end, block);
			p.method = "delta";
			p.ranges = p.diff.ranges;
			return p;
		} catch (const rpmem::error &e) {
			if (e.errnum() != ENOTSUP)
				throw;
			p.fallback = e.message();
		}
	}
	p.method = "full";
	if (end > begin)
		p.ranges.push_back({begin, end});
	return p;
}

replica_destination::replica_destination(remote_pool &rp, const control::pool_attr *marked,
                                         const control::pool_attr *current)
    : rp_(rp)
{
	if (marked)
		marked_ = *marked;
	if (current)
		current_ = *current;
}

void replica_destination::mark()
{
	if (marked_)
		rp_.set_attr(&*marked_);
}

void replica_destination::move(std::uint64_t offset, std::uint64_t length)
{
	rp_.persist(offset, length, 0, 0);
}

void replica_destination::clear()
{
	if (current_)
		rp_.set_attr(&*current_);
}

local_destination::local_destination(remote_pool &rp, std::uint8_t *local,
                                     std::function<void(std::uint64_t, std::uint64_t)> persist,
                                     std::function<void(bool)> set_mark)
    : rp_(rp), local_(local), persist_(std::move(persist)), set_mark_(std::move(set_mark))
{
}

void local_destination::move(std::uint64_t offset, std::uint64_t length)
{
	rp_.read(local_ + offset, offset, length, 0);
	persist_(offset, length);
}

bool apply_sync_rounds(sync_destination &dest, const std::function<std::vector<byte_span>()> &next,
                       const sync_state &state, const progress_fn &progress)
{
	bool writes = state.other_writes;
	bool marked = state.found_marked;
	for (auto round = next(); !round.empty(); round = next()) {
		if (!marked)
			dest.mark(); // before the first byte moves
		marked = writes = true;
		std::uint64_t total = 0, done = 0;
		for (const auto &r : round)
			total += r.size();
		for (const auto &r : round)
			for (std::uint64_t off = r.begin; off < r.end; off += move_chunk) {
				const std::uint64_t n = std::min(move_chunk, r.end - off);
				dest.move(off, n);
				done += n;
				if (progress)
					progress(done, total);
			}
	}
	if (writes && !marked)
		dest.mark(); // other writes only
	if (writes || state.found_marked)
		dest.clear(); // every byte moved is durable there
	return writes;
}

bool apply_sync(sync_destination &dest, const std::vector<byte_span> &ranges,
                const sync_state &state, const progress_fn &progress)
{
	bool given = false;
	return apply_sync_rounds(
	    dest,
	    [&]() -> std::vector<byte_span> {
		    if (given)
			    return {};
		    given = true;
		    return ranges;
	    },
	    state, progress);
}

void bring_in_line(remote_pool &rp, const std::uint8_t *local, std::uint64_t size,
                   const control::pool_attr &open, bool not_whole, const std::string &where)
{
	const std::uint64_t begin = rp.has_headers() ? header_size : 0;
	auto plan = plan_sync(rp, local, begin, size, false);
	log(1,
	    "{}: the replica was left behind by its last writer: {} of it differs from the "
	    "master ({}); bringing it in line",
	    where, plan.bytes(),
	    plan.method == "delta" ? "block checksums compared" : plan.fallback);
	// Marked already; "possibly behind" stays while the pool is open, "not whole" goes.
	const auto after = pmdk::with_behind_mark(open, true);
	replica_destination dest(rp, nullptr, not_whole ? &after : nullptr);
	apply_sync(dest, plan.ranges, {.found_marked = true});
}

} // namespace rpmem::client
