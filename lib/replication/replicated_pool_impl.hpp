// SPDX-License-Identifier: BSD-3-Clause
// The state behind rpmem::replicated_pool, shared by the files that implement it:
//   replicated_pool.cpp   create / open, the data path calls, status, close
//   fanout.cpp            remote operations on every replica at once, the failure policy
//   async_replicator.cpp  asynchronous mode: snapshots, the replication thread, barrier, lag
//   resync.cpp            bringing a lost replica back
// Internal: included by those files only (it opens namespace rpmem::replication to them).
#pragma once

#include "rpmem/replicated_pool.hpp"

#include "client/remote_pool.hpp"
#include "pmdk/pool_header.hpp"
#include "poolset/poolset.hpp"
#include "replication/local_map.hpp"
#include "replication/staging_ring.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace rpmem
{

using namespace replication;

namespace replication
{

using pmdk::generate_uuid;
using pmdk::uuid;
using pmdk::uuid_string;

using clock_type = std::chrono::steady_clock;

/** Lanes asked of every remote replica: each thread persists on a lane of its own (while there
 * are no more threads than lanes), so the fan-outs of different threads proceed at once. */
inline constexpr unsigned lanes_per_replica = 16;

/** The errno and message of a failure (EIO for one that is not an rpmem::error). */
inline int errnum_of(std::exception_ptr e, std::string *msg)
{
	try {
		std::rethrow_exception(e);
	} catch (const rpmem::error &x) {
		*msg = x.message();
		return x.errnum() ? x.errnum() : EIO;
	} catch (const std::exception &x) {
		*msg = x.what();
		return EIO;
	}
}

struct range {
	std::size_t offset;
	std::size_t length;
};

} // namespace replication

struct remote_replica {
	std::size_t index = 0;
	std::string target;
	std::string descriptor;
	client::pool_options conn;
	control::pool_attr attr; // what create() wrote / open() found: used to re-create
	std::unique_ptr<client::remote_pool> rp;
	const client::remote_pool *staged_on = nullptr; // rp that has the staging ring registered
	unsigned lanes = 0;                             // granted to rp
	bool lost = false;
	std::string error;
};

struct local_copy {
	std::size_t index = 0;
	std::unique_ptr<local_map> map;
	bool lost = false;
	std::string error;
};

struct replicated_pool::impl {
	poolset::poolset ps;
	options opts;
	std::unique_ptr<local_map> master;
	std::vector<local_copy> locals;
	staging_ring staging; // asynchronous mode; outlives the remote pools registered with it
	std::vector<remote_replica> remotes;
	// Remote operations: fan-outs hold it shared and their lane's mutex (a lane has one user
	// at a time); resync, the replicator and close hold it exclusively.
	std::shared_mutex remote_mu;
	unsigned nlanes = 1; // lanes of every connected remote replica (the fewest granted)
	std::unique_ptr<std::mutex[]> lane_mu{new std::mutex[lanes_per_replica]};
	mutable std::mutex state_mu; // lost / error fields, for replicas() and callbacks
	bool closed = false;

	// Asynchronous mode: entries persisted locally, not yet on the replicas.
	struct entry {
		range r;
		clock_type::time_point when;
		std::size_t stage;  // where its snapshot is in `staging`
		std::size_t charge; // ring bytes it holds
	};
	mutable std::mutex q_mu;
	std::condition_variable work_cv; // the replicator has something to do
	std::condition_variable done_cv; // the replicator finished a batch
	std::deque<entry> queue;         // [0, in_flight) are being replicated
	std::size_t in_flight = 0;
	std::size_t lag_bytes = 0;
	std::uint64_t enqueued = 0;   // entries ever queued
	std::uint64_t replicated = 0; // entries ever replicated (a prefix of enqueued)
	std::exception_ptr async_error;
	bool stop = false;
	std::vector<range> flushed; // asynchronous flush() ranges waiting for drain()
	std::thread replicator;

	bool asynchronous() const { return opts.replication == mode::asynchronous; }
	/** The calling thread's number for this pool, fixed while it keeps using the pool: its
	 * lane. Numbered per pool, so a pool's first threads take its first lanes whatever
	 * other pools the process has (lanes beyond the first connections' cost more where
	 * rpmemd runs several workers: docs/performance.md, replicated_pool threads). */
	unsigned thread_slot()
	{
		thread_local struct {
			const impl *pool = nullptr;
			unsigned slot = 0;
		} mine;
		if (mine.pool != this)
			mine = {this, next_slot.fetch_add(1, std::memory_order_relaxed)};
		return mine.slot;
	}
	std::atomic<unsigned> next_slot{0};
	/** nlanes: the fewest lanes a connected remote replica was granted (with remote_mu held
	 * exclusively, or before the pool is shared). */
	void count_lanes()
	{
		nlanes = lanes_per_replica;
		for (const auto &r : remotes)
			if (r.rp)
				nlanes = std::min(nlanes, std::max(r.lanes, 1u));
	}
	void check_range(const char *what, std::size_t off, std::size_t len) const;
	void start_async();
	void stop_async();
	void replicate_loop();
	void enqueue(range r);
	/** A snapshot on its way to the replicas. */
	struct piece {
		range r;
		const std::byte *src;
	};
	void enqueue_chunk(range r, std::unique_lock<std::mutex> &lk);
	/** The replicator's three steps: waits for queued snapshots and joins them into `batch`
	 *  (0: stopped); sends them to every replica in rounds; frees the first n. */
	std::size_t take_batch(std::vector<piece> &batch);
	std::exception_ptr send_batch(const std::vector<piece> &batch);
	void retire(std::size_t n, std::exception_ptr err);
	void wait_barrier();
	void rethrow_async_error();

	/** Runs op on every remote replica in sync, all at once; applies the failure policy. */
	void remote_all(const char *what, const std::function<void(remote_replica &)> &post,
	                const std::function<void(remote_replica &)> &complete);
	/** Marks remote replica `index` lost; on_replica_lost hears of it from notify_lost(). */
	void mark_lost(std::size_t index, const std::string &why);
	/** Calls on_replica_lost for every replica lost since the last call. Called with no lock
	 * held, so the callback may call the pool (see on_replica_lost). */
	void notify_lost();
	/** Runs f(lane) on the calling thread's lane (remote_mu shared, the lane's mutex held),
	 * then notify_lost(), then rethrows what f threw. */
	template <class F> void with_lane(F &&f);
	bool active(const remote_replica &r) const
	{
		std::lock_guard g(state_mu);
		return !r.lost && r.rp;
	}
	std::vector<replica_status> lost_unreported; // under state_mu
	std::atomic<bool> any_unreported{false};     // lost_unreported is not empty
	[[noreturn]] void fail_lost(const char *what, std::size_t index, int err,
	                            const std::string &why) const;
	void check_not_lost(const char *what) const;
	std::string where(const remote_replica &r) const
	{
		return fmt::format("{}:{}", r.target, r.descriptor);
	}
	void close_all();
	/** After the last barrier: every remote replica in sync holds everything. */
	void clear_behind_marks();
};

template <class F> void replicated_pool::impl::with_lane(F &&f)
{
	std::exception_ptr err;
	{
		std::shared_lock g(remote_mu);
		const unsigned lane = thread_slot() % nlanes;
		std::lock_guard l(lane_mu[lane]);
		try {
			f(lane);
		} catch (...) {
			err = std::current_exception();
		}
	}
	notify_lost();
	if (err)
		std::rethrow_exception(err);
}

namespace replication
{

/** attr with the "possibly behind" mark set or cleared (pmdk::feat_compat_rpmem_behind). */
inline control::pool_attr marked_behind(control::pool_attr a, bool behind)
{
	if (behind)
		a.compat_features |= pmdk::feat_compat_rpmem_behind;
	else
		a.compat_features &= ~pmdk::feat_compat_rpmem_behind;
	return a;
}

/** The state of a pool handle; a moved-from handle has none and every call on it throws. */
inline replicated_pool::impl &live(replicated_pool::impl *p, const char *what)
{
	if (!p)
		throw rpmem::error(EINVAL,
		                   fmt::format("replicated_pool::{}: this replicated_pool "
		                               "was moved from: use the one it was moved to",
		                               what));
	return *p;
}

/** live(), and the pool not closed. */
inline replicated_pool::impl &open_pool(replicated_pool::impl *p, const char *what)
{
	auto &d = live(p, what);
	if (d.closed)
		throw rpmem::error(EINVAL,
		                   fmt::format("replicated_pool::{}: the pool is closed", what));
	return d;
}

} // namespace replication

} // namespace rpmem
