// SPDX-License-Identifier: BSD-3-Clause
// A remote pool that outlives its sessions: the synchronous pool_calls behind librpmem's C ABI.
// When its replica goes away (rpmemd killed or frozen past RPMEM_TIMEOUT, the link cut, the
// host rebooting) it reconnects by itself — a new SSH session, rpmemd reopens the pool, the
// fabric connects — and sends again what was in flight, while the calls wait; NVMe-oF hosts
// behave so (reconnect_delay, ctrl_loss_tmo). An outage that outlasts RPMEM_RECONNECT_TIMEOUT
// is then the policy's:
//
//   fail      every call fails from then on (PMDK's behaviour: libpmemobj aborts);
//   continue  the calls go on without the replica (the default). It was marked "possibly
//             behind" in its header when the pool was opened, so nothing takes it as current
//             meanwhile; what changed is recorded in a dirty map, and when it is reachable
//             again the changed blocks are pushed while the application keeps writing (its
//             persists go to the replica directly meanwhile: client/catch_up_window.hpp), a
//             short final step makes it current, and it is in synchronous service again. A
//             clean close clears the mark.
//
// Under continue one call waits for the replica at most config::call_timeout
// (RPMEM_CALL_TIMEOUT, NVMe's fast_io_fail_tmo), however it is away: slow (a link that
// trickles, storage that lags: it still answers, so no silence ends the wait), frozen, or
// being reconnected. Past it the replica is dropped as above; one dropped while its session
// lived is "slow": its catch-up sends it no call (they are recorded) and holds the calls for
// its last round only when its measured rate says that round is short (DRBD's pull-ahead).
//
// States, as the metrics file and the log show them: in_sync, reconnecting, lost (fenced and
// tracked), catching_up, failed; closed.
#pragma once

#include "client/byte_span.hpp"
#include "client/call_gate.hpp"
#include "client/catch_up_window.hpp"
#include "client/dirty_map.hpp"
#include "client/pool_calls.hpp"
#include "client/remote_pool.hpp"
#include "client/replica_state.hpp"
#include "client/replica_sync.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace rpmem::client
{

class resilient_pool final : public pool_calls
{
public:
	using state = replica_state;

	/** What the pool is and how to reach it again. */
	struct config {
		std::string target, descriptor;
		void *addr = nullptr;
		std::size_t size = 0;
		pool_options conn;
		std::chrono::milliseconds reconnect_delay{50};
		std::chrono::milliseconds reconnect_timeout{10000};
		bool keep_going = true; // the policy: continue (true) or fail
		// A catch-up round of this many bytes or fewer is its last, moved with the calls
		// held (last_catch_up_round).
		std::uint64_t catch_up_hold_bytes = final_round_bytes;
		// Continue only: the longest one call waits for the replica before the replica is
		// dropped and the call goes on without it (RPMEM_CALL_TIMEOUT). 0: no bound.
		std::chrono::milliseconds call_timeout{0};
	};

	/** Creates the pool (with headers when attr is set and not zero); the replica is
	 *  marked possibly behind from now on under continue. *nlanes: wanted in, granted out. */
	static std::unique_ptr<resilient_pool> create(const config &c, unsigned *nlanes,
	                                              const control::pool_attr *attr);
	/** Opens the pool; *attr_out gets its attributes without rpmem's mark. A replica found
	 *  marked is refused (ESTALE) under fail, and brought in line here (block checksums
	 *  compared, the differing blocks pushed) under continue. */
	static std::unique_ptr<resilient_pool> open(const config &c, unsigned *nlanes,
	                                            control::pool_attr *attr_out);
	~resilient_pool() override;

	state current() const noexcept { return state_.load(); }
	/** Bytes the replica lacks (lost or catching up): the dirty map's. */
	std::uint64_t bytes_to_go() const noexcept
	{
		return dirty_.bytes() + moving_.load(std::memory_order_relaxed);
	}
	pool_report report() const override;

private:
	resilient_pool(const config &c, std::unique_ptr<remote_pool> rp, unsigned nlanes,
	               const control::pool_attr &attr);

	shape contract() const override;
	void do_persist(std::size_t offset, std::size_t length, unsigned lane) override;
	void do_flush(std::size_t offset, std::size_t length, unsigned lane) override;
	void do_drain(unsigned lane) override;
	void do_deep_persist(std::size_t offset, std::size_t length, unsigned lane) override;
	void do_read(void *buf, std::size_t offset, std::size_t length, unsigned lane) override;
	void do_set_attr(const control::pool_attr *attr) override;
	void do_close() override;

	/** What a call does with the replica away: records its range (a write) or fails (a read).
	 */
	enum class when_away { record, refuse };
	/** Runs f on the replica when it is in sync (after resending the lane's flushes that an
	 *  earlier session may have lost); waits while it reconnects; when it is lost: records
	 *  [offset, offset+length) in the dirty map (a write), or fails (a read); when it is
	 *  catching up, a write runs g(remote pool) if the window lets it (forward()), else is
	 *  recorded. A failure of the connection starts a reconnect and the call waits for it. */
	template <class F, class G>
	void on_replica(unsigned lane, std::size_t offset, std::size_t length, when_away away,
	                F &&f, G &&g);
	/** A write while the replica catches up: g(remote pool) when fwd_.window lets it, with lane
	 *  0 shared with the catch-up's moves. False: the caller records it instead. */
	template <class G>
	bool forward(unsigned lane, std::size_t offset, std::size_t length, G &&g);
	/** The connection failed under a call on session `epoch`: reconnect (once per epoch). */
	void connection_failed(std::uint64_t epoch, const rpmem::error &e);
	/** Waits until the state is no longer `from` (or the outage's deadline, then decides). */
	void wait_while(state from);
	void set_state(state s, const std::string &why);
	/** Whether calls are bounded by config::call_timeout (continue, and a bound set). */
	bool watched() const noexcept { return cfg_.keep_going && cfg_.call_timeout.count() > 0; }

	void heal_loop();
	/** One attempt at a new session; the remote pool or nullopt (the reason kept). */
	std::unique_ptr<remote_pool> try_connect(std::string *why);
	/** Installs a new session: every call after sees it (the gate closed meanwhile). */
	void install(std::unique_ptr<remote_pool> rp);
	/** The outage outlasted the reconnect timeout: fenced (continue) or failed (fail). */
	void give_up(const std::string &why);
	/** Continue: the calls go on without the replica from now on (lost), `why`. mu_ held. */
	void go_on_without(const std::string &why);
	/** The watch of config::call_timeout: a thread that looks at the lanes' waits. */
	void watch_loop();
	/** A call has waited longer than config::call_timeout (mu_ held): the replica is
	 *  dropped, its session given up if it has one (then it is slow). */
	void call_overdue(std::chrono::steady_clock::duration waited);
	/** Pushes what changed while the replica was away, in rounds, then a final step with the
	 *  calls held; the replica is in sync after. False if the session failed meanwhile. */
	bool catch_up();
	void push(const std::vector<byte_span> &ranges);

	config cfg_;
	unsigned nlanes_;
	bool headers_;
	control::pool_attr attr_; // as the application set it (the mark is added on the wire)

	call_gate gate_; // every call passes it; closed to swap sessions and for the final step
	std::unique_ptr<remote_pool> rp_; // calls use it inside the gate; swapped with it closed
	mutable std::mutex rp_mu_;        // and under this, for report() (the metrics thread)
	pool_report last_;                // the session's last report, once closed
	pool_stats earlier_;              // what the sessions replaced by reconnects counted
	std::atomic<std::uint64_t> epoch_{0}; // sessions so far
	struct lane_state {
		std::vector<byte_span>
		    flushed;             // flushed since the last drain: resent on a new session
		std::uint64_t epoch = 0; // the session the flushes went to
		// Since when the lane's call has been waiting (steady_clock ticks; 0: none), for
		// the watch of config::call_timeout.
		std::atomic<std::chrono::steady_clock::rep> waiting{0};
	};
	std::unique_ptr<lane_state[]> lanes_; // a lane is used by one thread at a time (PMDK)
	dirty_map dirty_;
	std::atomic<std::uint64_t> moving_{0}; // the catch-up's round in flight
	// While catching up: the window of the move in flight, lane 0's turns (the catch-up's
	// moves use it too), the bytes of persists sent to the replica directly.
	catch_up_forwarding fwd_{dirty_};
	std::atomic<std::uint64_t> caught_up_{0}; // bytes every catch-up moved: its progress

	std::atomic<state> state_{state::in_sync};
	mutable std::mutex mu_; // state changes, the cause, the outage's start
	std::condition_variable cv_;
	std::string cause_;
	std::optional<rpmem::error> failure_; // state failed: what every call throws
	std::chrono::steady_clock::time_point outage_start_{};
	std::uint64_t reconnects_ = 0;
	// Dropped by the watch while its session lived (too slow), and not in sync since.
	std::atomic<bool> slow_{false};
	std::uint64_t given_up_epoch_ = ~std::uint64_t{0}; // the session the watch gave up
	bool stop_ = false;
	std::thread healer_;
	std::thread watch_; // only with a call_timeout under continue
};

} // namespace rpmem::client
