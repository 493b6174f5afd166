// SPDX-License-Identifier: BSD-3-Clause
// Bringing one copy of a pool in line with another: the one implementation of "find what
// differs, mark the destination not current, move those blocks, clear the mark". Its promise:
// the destination is marked durably before the first byte moves and the mark is cleared only
// after the last byte moved is durable there, so an interruption at any moment (the client, the
// rpmemd or the link gone) leaves it marked and the next sync finishes it.
//
// Callers: `rpmem sync` to the replicas and `rpmem sync --from` to the master
// (tools/rpmem/sync.cpp, rebuild.cpp), `rpmem check --repair` (through the former),
// replicated_pool::resync (lib/replication/resync.cpp), and the catch-up of a replica back
// from an outage while the application writes (client/resilient_pool.cpp).
#pragma once

#include "client/block_diff.hpp"
#include "client/remote_pool.hpp"
#include "control/messages.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rpmem::client
{

/** What a sync moves, and how it was found. */
struct sync_plan {
	std::string method;   // "delta" (block checksums compared) or "full"
	std::string fallback; // why a delta was wanted and could not be had
	block_diff diff;      // delta: the comparison's figures
	std::vector<byte_span> ranges;
	std::uint64_t bytes() const;
};

/**
 * The blocks of [begin, end) in which `local` (the memory registered with rp, pool offset 0)
 * and the replica differ (block checksums); everything when `full`, or when its rpmemd cannot
 * checksum (older than protocol 1.2, or block-checksums = no: `fallback` says so).
 */
sync_plan plan_sync(remote_pool &rp, const std::uint8_t *local, std::uint64_t begin,
                    std::uint64_t end, bool full, std::uint32_t block = default_diff_block);

/** Where a sync's bytes go, and how that copy is marked as not current. */
class sync_destination
{
public:
	virtual ~sync_destination() = default;
	/** Durably marks the destination as not current. */
	virtual void mark() = 0;
	/** Moves [offset, offset+length) and makes it durable at the destination. */
	virtual void move(std::uint64_t offset, std::uint64_t length) = 0;
	/** Durably clears the mark: the destination is current. */
	virtual void clear() = 0;
};

/** A replica brought in line with the local copy: set_attr(marked) marks it, persists move
 *  the bytes, set_attr(current) clears the mark. A pool without headers cannot be marked. */
class replica_destination final : public sync_destination
{
public:
	/** marked / current: the replica's attributes while bytes move and after (nullptr: a
	 *  pool without headers). */
	replica_destination(remote_pool &rp, const control::pool_attr *marked,
	                    const control::pool_attr *current);
	void mark() override;
	void move(std::uint64_t offset, std::uint64_t length) override;
	void clear() override;

private:
	remote_pool &rp_;
	std::optional<control::pool_attr> marked_, current_;
};

/** The local copy (the master) rebuilt from a replica: read into `local`, persisted by
 *  `persist`; marked and cleared by `set_mark`. */
class local_destination final : public sync_destination
{
public:
	local_destination(remote_pool &rp, std::uint8_t *local,
	                  std::function<void(std::uint64_t, std::uint64_t)> persist,
	                  std::function<void(bool)> set_mark);
	void mark() override { set_mark_(true); }
	void move(std::uint64_t offset, std::uint64_t length) override;
	void clear() override { set_mark_(false); }

private:
	remote_pool &rp_;
	std::uint8_t *local_;
	std::function<void(std::uint64_t, std::uint64_t)> persist_;
	std::function<void(bool)> set_mark_;
};

/** How a destination was found and what else the caller writes to it. */
struct sync_state {
	bool found_marked = false; // marked already (created so, or an earlier sync stopped)
	bool other_writes = false; // the caller also rewrites something (its header attributes)
};

/**
 * The protocol: when anything is to be written, the destination is marked first (unless it
 * was found marked); every range moves in chunks, each durable before the next, progress
 * after each; then the mark is cleared — also when nothing moved but it was found marked.
 * Returns whether anything was written. Throws what a step threw: the mark then stays.
 */
bool apply_sync(sync_destination &dest, const std::vector<byte_span> &ranges,
                const sync_state &state, const progress_fn &progress = {});

/**
 * A replica its last writer left marked (possibly behind, or not whole), opened again under a
 * policy that goes on (continue): brought in line before the application reads it (libpmemobj
 * reads the pool's descriptor and heap right after opening) by comparing block checksums and
 * pushing what differs from `local`. Its header must already carry "possibly behind" (the
 * caller set it for the open pool); it keeps that mark and loses the not-whole one (`open`:
 * its attributes without rpmem's marks). Logs what it does.
 */
void bring_in_line(remote_pool &rp, const std::uint8_t *local, std::uint64_t size,
                   const control::pool_attr &open, bool not_whole, const std::string &where);

/** A caller that registers this little is probing the replica, not lending the master's
 *  memory: libpmempool's health check opens a remote replica over an 8 KiB volatile buffer
 *  (header and pool descriptor). A marked replica is refused to it, never "brought in line"
 *  from that buffer (which would overwrite the replica's descriptor); libpmempool then takes
 *  the replica as broken and `pmempool sync` re-creates it. */
inline constexpr std::uint64_t probe_bytes = 8192;

/** A destination that counts the bytes moved through it: how a close that waits for a
 *  catch-up tells one that progresses from one that does not. */
class counted_moves final : public sync_destination
{
public:
	counted_moves(sync_destination &to, std::atomic<std::uint64_t> &moved)
	    : to_(to), moved_(moved)
	{
	}
	void mark() override { to_.mark(); }
	void move(std::uint64_t offset, std::uint64_t length) override
	{
		to_.move(offset, length);
		moved_.fetch_add(length, std::memory_order_relaxed);
	}
	void clear() override { to_.clear(); }

private:
	sync_destination &to_;
	std::atomic<std::uint64_t> &moved_;
};

/** A catch-up round this small or smaller is the last: pushed with the calls held (the C
 *  ABI's default; RPMEM_CATCH_UP_HOLD_BYTES sets it). */
constexpr std::uint64_t final_round_bytes = 1u << 20;
/** Rounds after which the last one is taken whatever its size. */
constexpr int max_catch_up_rounds = 16;

/** Whether a catch-up's round `round` (1, 2, ...), about to move `bytes` after a round that
 *  moved `previous`, is its last, pushed with the calls held: it is small (`small` bytes or
 *  fewer), or the rounds stopped converging (the writers dirty about what a round moves, so
 *  more rounds would only repeat it: 16 such rounds took minutes under load), or there were
 *  enough. The calls then wait for at most what one round's time of writes dirtied. */
constexpr bool last_catch_up_round(std::uint64_t bytes, std::uint64_t previous, int round,
                                   std::uint64_t small = final_round_bytes)
{
	return bytes <= small || (round > 1 && bytes > previous / 2) ||
	       round >= max_catch_up_rounds;
}

/** Whether a catch-up's round, about to move `bytes`, is its last (moved with the calls held)
 *  when the replica was dropped for being too slow to keep the lag bound: only when the round
 *  before, which moved `previous` bytes in `took`, says this one takes `budget` or less (an
 *  empty round always is). Otherwise another round moves it with the calls going on, however
 *  many that takes: a replica that cannot keep up stays catching up (DRBD's "Behind"),
 *  rather than hold the calls for what its link takes. */
constexpr bool last_round_of_slow(std::uint64_t bytes, std::uint64_t previous,
                                  std::chrono::nanoseconds took, std::chrono::nanoseconds budget)
{
	if (bytes == 0)
		return true;
	if (previous == 0)
		return false; // its rate is not known yet
	// bytes / (previous / took) <= budget, without the division
	return static_cast<double>(bytes) * static_cast<double>(took.count()) <=
	       static_cast<double>(budget.count()) * static_cast<double>(previous);
}

/** A slow replica's catch-up rounds judged by last_round_of_slow, and what took its last
 *  one, for the log line that says it is in sync: an operator sees why the calls were held
 *  then, and for how long the link's rate said. */
struct slow_last_round {
	bool taken = false;      ///< a round was taken as the last by last_round_of_slow
	std::uint64_t bytes = 0; ///< what it was to move when judged
	double predicted_ms = 0; ///< its time at the rate the round before it measured
	std::chrono::nanoseconds budget{};

	/** last_round_of_slow(b, previous, took, within), remembered when it says last. */
	bool decide(std::uint64_t b, std::uint64_t previous, std::chrono::nanoseconds took,
	            std::chrono::nanoseconds within)
	{
		if (!last_round_of_slow(b, previous, took, within))
			return false;
		taken = true;
		bytes = b;
		budget = within;
		predicted_ms = previous == 0
		                   ? 0
		                   : static_cast<double>(b) * static_cast<double>(took.count()) /
		                         static_cast<double>(previous) / 1e6;
		return true;
	}
	/** "; its last round, N bytes, taken by the link's measured rate (P ms, within B ms)", or
	 *  nothing when the replica was not slow. */
	std::string note() const;
};

/** The same protocol with the ranges given a round at a time: next() until it returns none
 *  (a catch-up while the application keeps writing: a block written again after its round
 *  comes in a later one). Progress counts each round's bytes against that round. */
bool apply_sync_rounds(sync_destination &dest, const std::function<std::vector<byte_span>()> &next,
                       const sync_state &state, const progress_fn &progress = {});

} // namespace rpmem::client
