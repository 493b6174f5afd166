// SPDX-License-Identifier: BSD-3-Clause
// librpmem's asynchronous replication (RPMEM_REPLICATION=async): one remote pool written through
// the pipeline, so rpmem_persist returns once the range is snapshotted and the replica holds a
// prefix of the persists whenever it is in sync. A replica that goes away is reconnected and
// caught up by the writer itself (remote_writer_heal.cpp).
#pragma once

#include "async/pipeline.hpp"
#include "client/call_gate.hpp"
#include "client/dirty_map.hpp"
#include "client/remote_pool.hpp"
#include "client/reopen.hpp"
#include "client/replica_state.hpp"
#include "client/replica_sync.hpp"
#include "control/messages.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace rpmem::async
{

/**
 * The calls of librpmem on a remote pool written asynchronously. persist and flush check their
 * arguments, snapshot the range and return (persist waits while the lag is over its bounds);
 * drain waits for the lag bound only; read, deep_persist and set_attr wait until the replica
 * holds everything persisted before them; close waits for everything, then clears the
 * replica's "possibly behind" mark. Lanes are virtual: every range joins one global order, so
 * the lane an application uses changes nothing but the argument check.
 *
 * A replica's outage (its session failed: rpmemd killed, frozen past RPMEM_TIMEOUT, the link
 * cut) holds no call: from the failed batch on, the replicator records what it would have
 * sent in a dirty map (and the calls record their own ranges), and a healer thread reconnects
 * (pauses doubling from RPMEM_RECONNECT_DELAY) and catches the replica up from the master's
 * memory while the application goes on; the last round holds the calls and the replicator for
 * its own time, and the replica is then a prefix of the persists again and in sync. While
 * blocks move the replica holds no
 * consistent image, and its header says so (pmdk::marked_rebuilding). An outage longer than
 * RPMEM_RECONNECT_TIMEOUT is the policy's (RPMEM_ASYNC_ON_FAILURE): fail, every call fails from
 * then on; continue, the writer keeps trying and the replica stays "lost" until it is back.
 */
class remote_writer final : public client::pool_calls
{
public:
	using state = client::replica_state;

	struct config {
		bounds lag;              // max_lag_bytes, max_lag_time
		bool keep_going = false; // RPMEM_ASYNC_ON_FAILURE=continue
		unsigned nlanes = 1;     // virtual lanes granted to the application
		bool marked = false;     // the replica's header is marked behind (headers only)
		// Reaching the replica again: the place, the pauses between attempts and how
		// long an outage may last before the policy decides (0: at once).
		client::pool_place place;
		std::chrono::milliseconds reconnect_delay{50};
		std::chrono::milliseconds reconnect_timeout{10000};
		// A catch-up round of this many bytes or fewer is its last (last_catch_up_round).
		std::uint64_t catch_up_hold_bytes = client::final_round_bytes;
	};
	/** rp: the remote pool, connected with one lane; pool: its local memory; attr: the
	 *  replica's attributes, already marked behind by the caller when it has headers. */
	remote_writer(std::unique_ptr<client::remote_pool> rp, const std::byte *pool,
	              std::size_t size, const control::pool_attr &attr, const config &c);
	~remote_writer() override;

	// close(): everything persisted reaches the replica, its mark is cleared, the session
	// ends; it throws what failed, and the session ends anyway with the mark kept.
	progress status() const;
	/** Virtual lanes granted to the application. */
	unsigned nlanes() const { return cfg_.nlanes; }
	state current() const noexcept { return state_.load(); }
	/** Bytes the replica lacks while it is away or catching up: the dirty map's. */
	std::uint64_t bytes_to_go() const noexcept
	{
		return dirty_.bytes() + moving_.load(std::memory_order_relaxed);
	}

	/** The remote pool's report, with the mode, the virtual lanes, the lag and the state. */
	client::pool_report report() const override;

private:
	class one_replica;
	class catch_up_target;
	shape contract() const override;
	void do_persist(std::size_t offset, std::size_t length, unsigned lane) override;
	void do_flush(std::size_t offset, std::size_t length, unsigned lane) override;
	void do_drain(unsigned lane) override;
	void do_deep_persist(std::size_t offset, std::size_t length, unsigned lane) override;
	void do_read(void *buf, std::size_t offset, std::size_t length, unsigned lane) override;
	void do_set_attr(const control::pool_attr *attr) override;
	void do_close() override;
	/** Throws what every call throws once the replica failed (or the pipeline did). */
	void throw_if_failed() const;
	/** While the replica is away a persist or flush only records its range (the sending
	 *  thread would only record it too, later): true when it did. */
	bool recorded_while_away(std::size_t offset, std::size_t length);
	/** Waits for the replica to hold everything, then runs f(remote pool) with the lane when
	 *  it is in sync and returns true; when it is away (or its session failed under f),
	 *  runs away() with the replicator held and returns false. */
	template <class F, class A> bool after_barrier(F &&f, A &&away);
	void log_summary(const char *how);

	// The outage side (remote_writer_heal.cpp).
	/** The session of `epoch` failed under the replicator or a call: reconnect. */
	void connection_failed(std::uint64_t epoch, const rpmem::error &e);
	/** The outage outlasted the reconnect timeout (mu_ held): lost or failed. */
	void give_up(const std::string &why);
	void set_state(state s, const std::string &why); // mu_ held
	void heal_loop();
	/** Installs a new session (the replicator held meanwhile). */
	void install(std::unique_ptr<client::remote_pool> rp);
	/** Moves what the replica missed, in rounds, the last one with the calls and the
	 *  replicator held;
	 *  the replica is in sync after. False if it failed (the state says what now). */
	bool catch_up();

	std::unique_ptr<client::remote_pool> rp_; // swapped with sink_->mu and mu_ held
	std::unique_ptr<one_replica> sink_;
	const std::byte *pool_; // the application's memory: range offsets index it
	std::size_t size_;
	bool headers_;            // every session's: read once, as every call checks against it
	control::pool_attr attr_; // as the application set it (the marks added on the wire)
	config cfg_;
	std::unique_ptr<pipeline> pipe_;

	client::dirty_map dirty_; // what the replica missed since it went away
	// Calls that record while the replica is away pass it; the catch-up's last round closes
	// it, empties the pipeline and takes what is recorded, with nothing recorded meanwhile.
	client::call_gate gate_;
	std::atomic<std::uint64_t> moving_{0};    // the catch-up's round in flight
	std::atomic<std::uint64_t> caught_up_{0}; // bytes every catch-up moved: its progress
	std::atomic<std::uint64_t> epoch_{0};     // sessions so far
	std::atomic<state> state_{state::in_sync};
	// Dropped for being too slow (one_replica::congested) and not in sync since: its
	// catch-up holds the calls only for a round its measured rate says is short.
	std::atomic<bool> slow_{false};
	// close() began: no call is left for a held catch-up round to hold, and close waits for
	// the round, so its bound (config::lag.congestion) does not end it.
	std::atomic<bool> closing_{false};
	mutable std::mutex mu_; // state changes, the cause, the outage's start, attr_
	std::condition_variable cv_;
	std::string cause_;
	std::optional<rpmem::error> failure_; // state failed: what every call throws
	std::chrono::steady_clock::time_point outage_start_{};
	mutable std::mutex rp_mu_;  // rp_ for report() (the metrics thread)
	rpmem::pool_stats earlier_; // what the sessions replaced by reconnects counted
	bool stop_ = false;
	std::thread healer_;
};

} // namespace rpmem::async
