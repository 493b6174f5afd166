// SPDX-License-Identifier: BSD-3-Clause
// While a replica catches up (client/resilient_heal.cpp), the application's persists go to it
// directly, as DRBD mirrors writes to a SyncTarget during its resync: a block the catch-up has
// moved stays current by the persists that follow, so it is not moved again. Only the blocks
// changed since the loss move, once each, and the rounds converge whatever the write rate.
//
// One race decides which persists may go: a move reads the master's bytes while it is in
// flight, so a persist whose bytes were written during a move of the same range may land
// before that move's older copy of them. Such a persist is recorded in the dirty map instead,
// and its blocks move again in a later round. A persist checked before a move begins is safe
// (the move reads its bytes after they were written); one checked after the move is durable
// is safe (it lands after).
#pragma once

#include "client/dirty_map.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <utility>

namespace rpmem::client
{

class catch_up_window
{
public:
	explicit catch_up_window(const dirty_map &dirty) : dirty_(dirty) {}

	/** The catch-up is about to move [offset, offset+length). */
	void moving(std::uint64_t offset, std::uint64_t length)
	{
		std::lock_guard l(mu_);
		begin_ = offset;
		end_ = offset + length;
	}
	/** The move is durable on the replica, or failed. */
	void moved()
	{
		std::lock_guard l(mu_);
		begin_ = end_ = 0;
	}

	/**
	 * Whether a persist of [offset, offset+length), whose bytes the application wrote before
	 * this call, may go to the replica directly: not when a move in flight overlaps it (it
	 * may carry older bytes and land later), nor when every block it touches is marked (a
	 * later move carries its bytes anyway). Otherwise the caller records it in the map.
	 */
	bool may_forward(std::uint64_t offset, std::uint64_t length) const
	{
		if (length == 0)
			return false;
		const std::uint64_t end = offset + length;
		{
			std::lock_guard l(mu_);
			if (offset < end_ && begin_ < end)
				return false;
		}
		const std::uint64_t block = dirty_.block();
		for (std::uint64_t b = offset / block * block; b < end; b += block)
			if (!dirty_.marked(b))
				return true;
		return false;
	}

private:
	const dirty_map &dirty_;
	mutable std::mutex mu_;
	std::uint64_t begin_ = 0, end_ = 0; // the move in flight; empty when none
};

/**
 * Lane 0 while a replica catches up: the catch-up's moves use it too, and the two take turns
 * in the order they asked (a ticket lock). A plain mutex would let the catch-up, which asks
 * again at once after each move, keep a lane-0 call out for the whole catch-up; a lock that
 * prefers calls would let a writer persisting back to back on lane 0 hold the catch-up back.
 * In turns, a call waits for at most the one move in flight or waiting when it came, and a
 * move for the calls that asked before it.
 */
class lane_turns
{
public:
	/** One turn: lane 0 is the holder's until it ends. */
	class turn
	{
	public:
		explicit turn(lane_turns *t) : t_(t) {}
		turn(turn &&o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
		turn &operator=(turn &&o) noexcept
		{
			std::swap(t_, o.t_);
			return *this;
		}
		~turn()
		{
			if (t_)
				t_->done();
		}

	private:
		lane_turns *t_;
	};

	/** Waits for the turns asked before this one to end. */
	turn take()
	{
		std::unique_lock l(mu_);
		const std::uint64_t ticket = next_++;
		cv_.wait(l, [&] { return serving_ == ticket; });
		return turn(this);
	}

private:
	void done()
	{
		{
			std::lock_guard l(mu_);
			++serving_;
		}
		cv_.notify_all();
	}
	std::mutex mu_;
	std::condition_variable cv_;
	std::uint64_t next_ = 0, serving_ = 0;
};

/** What a replica being caught up while the persists go to it directly needs: the window, lane
 *  0's turns, and the bytes that went (for the catch-up's log line). */
struct catch_up_forwarding {
	explicit catch_up_forwarding(const dirty_map &dirty) : window(dirty) {}
	catch_up_window window;
	lane_turns lane0;
	std::atomic<std::uint64_t> bytes{0};
};

} // namespace rpmem::client
