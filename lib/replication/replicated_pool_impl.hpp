// SPDX-License-Identifier: BSD-3-Clause
// The state behind rpmem::replicated_pool, shared by the files that implement it:
//   replicated_pool.cpp   create / open, the data path calls, status, close
//   fanout.cpp            remote operations on every replica at once, the failure policy
//   async_replicator.cpp  asynchronous mode: snapshots, the replication thread, barrier, lag
//   resync.cpp            bringing a lost replica back
// Internal: included by those files only (it opens namespace rpmem::replication to them).
#pragma once

#include "rpmem/replicated_pool.hpp"

#include "async/pipeline.hpp"
#include "async/remote_writer.hpp"
#include "client/catch_up_window.hpp"
#include "client/dirty_map.hpp"
#include "client/remote_pool.hpp"
#include "client/resilient_pool_timing.hpp"
#include "client/stats_export.hpp"
#include "pmdk/behind_record.hpp"
#include "pmdk/pool_header.hpp"
#include "poolset/poolset.hpp"
#include "replication/local_map.hpp"
#include "replication/writer_first_mutex.hpp"

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
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace rpmem
{

using namespace replication;

namespace replication
{

using pmdk::generate_uuid;
using pmdk::uuid;
using pmdk::uuid_string;

using async::clock_type;

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
	// What changed while it was lost (failure_policy::degrade): what a catch-up moves. With
	// `compare` the changes are not all known (lost at open, or a catch-up interrupted by a
	// reconnect that re-created it): block checksums find them first.
	std::unique_ptr<client::dirty_map> dirty;
	bool compare = false;
	bool catching_up = false; // a catch-up works on it (the healer's or resync's)
	// Unmarked on its host while it may lack acknowledged writes (unreachable at open, or
	// listed in the master's behind_record): listed in that record until a catch-up completes
	// (which marks its header before the first byte moves).
	bool unmarked = false;
	std::uint64_t moving = 0; // bytes of the catch-up's round in flight (state_mu)
	// Dropped for being too slow (degrade; asynchronous mode: to keep the lag bound,
	// synchronous: within the call bound): its catch-up holds the calls only for a round its
	// measured rate says is short, and sends it no call (state_mu).
	bool slow = false;
	// While a catch-up moves its blocks in synchronous mode: the persists go to it directly
	// when the window lets them. Set and cleared with remote_mu held exclusively, so a call
	// (which holds it shared) sees it and the session it goes with, or neither.
	std::unique_ptr<client::catch_up_forwarding> forwarding;
	/** What it lacks: what changed while it was lost, and the round being moved. */
	std::uint64_t bytes_to_go() const { return (dirty ? dirty->bytes() : 0) + moving; }
};

/** A local replica: written with the master on every call. A failure to write it fails the
 *  call (a local replica is never left behind), so it has no lost state. */
struct local_copy {
	std::size_t index = 0;
	std::unique_ptr<local_map> map;
};

/**
 * How persist, flush, drain and barrier reach the remote replicas, picked once at create/open
 * from options::replication: synchronous (fanout.cpp: every call waits for every replica) or
 * asynchronous (async_replicator.cpp: snapshots replicated in persist order by a thread).
 * Each call finds the range already durable on the master and the local replicas.
 */
class replication_mode
{
public:
	virtual ~replication_mode() = default;
	virtual void persist(range r) = 0;
	virtual void flush(range r) = 0;
	virtual void drain() = 0;
	virtual void barrier() = 0;
	/** Before close: everything persisted is on the replicas in sync, and their "possibly
	 *  behind" marks are cleared; or throws why not (close goes on). */
	virtual void finish() = 0;
	virtual replicated_pool::lag_info lag() const = 0;
	/** Every lost replica is back (resync): replication goes on. */
	virtual void replicas_back() = 0;
	/** Whether a replica may lag the master, so its header is marked while the pool is open. */
	virtual bool may_fall_behind() const = 0;
};

std::unique_ptr<replication_mode> make_synchronous_mode(replicated_pool::impl &d);
std::unique_ptr<replication_mode> make_asynchronous_mode(replicated_pool::impl &d);

struct replicated_pool::impl {
	poolset::poolset ps;
	options opts;
	std::unique_ptr<local_map> master;
	std::vector<local_copy> locals;
	// Outlives the remote pools: the asynchronous mode's staging ring is registered with them.
	std::unique_ptr<replication_mode> replication;
	std::vector<remote_replica> remotes;
	// Remote operations: fan-outs hold it shared and their lane's mutex (a lane has one user
	// at a time); resync, the replicator and close hold it exclusively.
	// Exclusive lockers first (writer_first_mutex.hpp): the writers' back-to-back calls must
	// not keep a catch-up's last round, resync or close out.
	replication::writer_first_mutex remote_mu;
	unsigned nlanes = 1; // lanes of every connected remote replica (the fewest granted)
	std::unique_ptr<std::mutex[]> lane_mu{new std::mutex[lanes_per_replica]};
	mutable std::mutex state_mu; // lost / error fields, for replicas() and callbacks
	// The master's record of replicas behind but unmarked (behind_record.hpp): written at open
	// and when a catch-up of an unmarked replica completes, under record_mu.
	std::unique_ptr<pmdk::behind_record> record;
	std::mutex record_mu;
	/** Rewrites the record: the remote replicas still `unmarked`. Throws as
	 *  behind_record::write. */
	void write_record();
	bool closed = false;

	/** Makes `replication` from options::replication (the asynchronous mode starts its
	 *  thread): the one place the mode is looked at. */
	void choose_mode()
	{
		replication = opts.replication == replicated_pool::mode::asynchronous
		                  ? make_asynchronous_mode(*this)
		                  : make_synchronous_mode(*this);
	}
	bool may_fall_behind() const { return replication->may_fall_behind(); }
	/** Asynchronous mode under degrade: how long one batch may take, or a catch-up's held
	 *  last round, before the replica is too slow (connect_options::timeout, else
	 *  RPMEM_TIMEOUT); zero otherwise (the calls go at its pace). */
	std::chrono::milliseconds congestion_bound() const;
	/** How long a data-path wait goes without a sign of life before it fails:
	 *  connect_options::timeout, else RPMEM_TIMEOUT. */
	std::chrono::milliseconds silence_bound() const;
	/** The calling thread's number for this pool, fixed while it keeps using the pool: its
	 * lane. Numbered per pool, so a pool's first threads take its first lanes whatever
	 * other pools the process has (lanes beyond the first connections' cost more where
	 * rpmemd runs several workers: docs/lab/performance-records.md, replicated_pool
	 * threads). */
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

	/** Runs post(r) on every remote replica in sync, then complete(r) on each: all of them
	 *  work at once; then after() (the replicas that failed are lost by then), then applies
	 *  the failure policy. No allocation unless one fails. */
	template <class Post, class Complete, class After>
	void remote_all(const char *what, Post &&post, Complete &&complete, After &&after);
	template <class Post, class Complete>
	void remote_all(const char *what, Post &&post, Complete &&complete)
	{
		remote_all(what, post, complete, [] {});
	}
	/** remote_all's failures, errors[i] for remotes[i]: marks them lost; under
	 *  failure_policy::fail, returns what the call throws. */
	std::exception_ptr apply_failures(const char *what,
	                                  std::span<const std::exception_ptr> errors);
	/** Marks remote replica `index` lost; on_replica_lost hears of it from notify_lost().
	 *  Logs the transition (level 1) unless `say` is false: the caller says more itself. */
	void mark_lost(std::size_t index, const std::string &why, bool say = true);
	/** The same for a failure: says why with this pool's remedy (resync); its errno. */
	int mark_lost(std::size_t index, std::exception_ptr failure, bool say = true);
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
	// Metrics (rpmem::pool::export_stats, RPMEM_STATS_FILE): one report per remote replica,
	// exports[i] for remotes[i]; empty when the process keeps no metrics file.
	std::vector<std::unique_ptr<client::pool_export>> exports;
	/** Registers the remote replicas with the process's exporter, if there is one. */
	void start_export();
	/** A persist, drain or barrier returned: when, for every replica's report. */
	void note_durable() noexcept
	{
		if (exports.empty())
			return;
		const auto now = client::unix_now_ns(); // one clock read for every replica
		for (auto &e : exports)
			e->durable(now);
	}
	/** r's state changed: the metrics file says so now (with state_mu not held: the report
	 *  takes it). */
	void metrics_changed(const remote_replica &r) noexcept
	{
		for (std::size_t k = 0; k < exports.size() && k < remotes.size(); ++k)
			if (&remotes[k] == &r)
				exports[k]->state_changed();
	}
	/** Writes every replica's final report (close). */
	void finish_export() noexcept
	{
		for (auto &e : exports)
			e->finish("closed");
		exports.clear();
	}
	// Healing (failure_policy::degrade): every call records the ranges a lost replica
	// misses (track_lost); a thread reconnects lost replicas and catches them up while the
	// calls go on (heal.cpp).
	std::atomic<int> lost_count{0}; // remotes lost now: track_lost costs nothing at 0
	/** Records `r` in every lost replica's dirty map (remote_mu held, shared or not), but
	 *  those `sent` says got it (forward()). */
	void track_lost(range r, const std::vector<char> *sent = nullptr) noexcept
	{
		if (lost_count.load(std::memory_order_acquire) == 0)
			return;
		std::lock_guard g(state_mu);
		for (std::size_t i = 0; i < remotes.size(); ++i)
			if (remotes[i].lost && remotes[i].dirty && !(sent && (*sent)[i]))
				remotes[i].dirty->mark(r.offset, r.length);
	}
	/** Synchronous mode: a persist of `r` on `lane` (remote_mu held shared) goes to each
	 *  replica being caught up whose window lets it, as librpmem's does
	 *  (client/catch_up_window.hpp). Which ones got it, or nullptr when none did. */
	const std::vector<char> *forward(range r, unsigned lane);
	std::atomic<int> forwarding_count{0}; // replicas with `forwarding` set
	/** A flush() not yet drained, per lane: a replica lost before the drain gets these in
	 *  its dirty map (under the lane's mutex). */
	std::unique_ptr<std::vector<range>[]> lane_flushed {
		new std::vector<range>[ lanes_per_replica ]
	};
	std::thread healer;
	std::condition_variable heal_cv; // with state_mu: a replica lost, or stop
	bool heal_stop = false;          // under state_mu
	// Synchronous mode under degrade: each call's wait for the remote replicas, bounded by
	// call_bound() (fanout.cpp) on each replica: since when a lane's call waits on which
	// replica (its position in remotes; -1: none yet). The watch thread looks at them.
	struct lane_wait {
		std::atomic<std::chrono::steady_clock::rep> since{0};
		std::atomic<int> on{-1};
		std::atomic<const char *> call{"call"}; // what waits: "persist", "flush", "drain"
	};
	std::unique_ptr<lane_wait[]> lane_waits; // while the watch runs
	// Held where a replica's session (remote_replica::rp) is put in or taken out while the
	// watch runs, and by the watch when it fails one.
	std::mutex session_mu;
	/** r's session from now on (session_mu taken): nullptr drops it. */
	void set_session(remote_replica &r, std::unique_ptr<client::remote_pool> rp)
	{
		std::lock_guard g(session_mu);
		r.rp = std::move(rp);
	}
	std::thread watcher;
	std::condition_variable watch_cv; // with state_mu: stop
	bool watch_stop = false;          // under state_mu
	/** Synchronous mode under degrade: the longest one call may wait for a remote replica
	 *  before the replica is dropped as too slow, twice the silence bound
	 *  (connect_options::timeout, else RPMEM_TIMEOUT); zero otherwise. */
	std::chrono::milliseconds call_bound() const;
	void start_watch();
	void stop_watch() noexcept;
	void watch_loop();
	/** A call (`call`: its name) waited `waited` on r, past the call bound: r's session is
	 *  failed, r slow. */
	void drop_slow(remote_replica &r, const char *call, std::chrono::nanoseconds waited,
	               std::chrono::milliseconds bound);
	/** The lane's call waits on r from now (lane_waits, when the watch runs): a replica
	 *  is blamed only for its own wait, not for one before it in the same call. */
	void waiting_on(unsigned lane, const remote_replica &r) noexcept
	{
		if (!lane_waits)
			return;
		auto &w = lane_waits[lane];
		w.since.store(0, std::memory_order_relaxed); // never the old time with the new one
		w.on.store(static_cast<int>(&r - remotes.data()), std::memory_order_relaxed);
		w.since.store(client::resilient_timing::stamp_now(), std::memory_order_relaxed);
	}
	std::mutex heal_mu; // one catch-up at a time: the healer's or resync's
	/** Takes r out of the calls' way (lost, what it misses recorded) without the failure
	 *  policy's say: a catch-up follows (remote_mu held exclusively). */
	void fence(remote_replica &r, const std::string &why);
	void start_healer();
	void stop_healer() noexcept;
	void heal_loop();
	/**
	 * Brings remote replica r back while the calls go on: reconnects when it has no session
	 * (re-creating it when gone), compares block checksums when its changes are not all
	 * known, pushes what changed in rounds, the last one with remote_mu held exclusively so
	 * nothing changes meanwhile; marked behind while bytes move (client/replica_sync.hpp).
	 * In sync after; throws otherwise (r stays lost). progress(done, total) per round.
	 */
	void catch_up(remote_replica &r,
	              const std::function<void(std::size_t, std::size_t)> &progress);

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

template <class Post, class Complete, class After>
void replicated_pool::impl::remote_all(const char *what, Post &&post, Complete &&complete,
                                       After &&after)
{
	const std::size_t n = remotes.size();
	if (n == 0)
		return;
	// Per thread, reused: a synchronous persist allocates nothing here.
	thread_local std::vector<char> active;
	thread_local std::vector<std::exception_ptr> errors;
	active.assign(n, 0);
	errors.assign(n, nullptr);
	{
		std::lock_guard g(state_mu);
		for (std::size_t i = 0; i < n; ++i)
			active[i] = !remotes[i].lost && remotes[i].rp;
	}
	bool failed = false;
	auto step = [&](auto &&op) {
		for (std::size_t i = 0; i < n; ++i) {
			if (!active[i] || errors[i])
				continue;
			try {
				op(remotes[i]);
			} catch (...) {
				errors[i] = std::current_exception();
				failed = true;
			}
		}
	};
	step(post);
	step(complete);
	if (!failed) {
		after();
		return;
	}
	std::vector<std::exception_ptr> e(errors.begin(), errors.begin() + n);
	std::fill(errors.begin(), errors.end(), nullptr);
	auto thrown = apply_failures(what, e);
	after();
	if (thrown)
		std::rethrow_exception(thrown);
}

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

/** The "possibly behind" mark (lib/pmdk, beside the header that carries it). */
using pmdk::with_behind_mark;

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
