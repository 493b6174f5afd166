// SPDX-License-Identifier: BSD-3-Clause
// A gate the application's calls pass through and threads can close: close() waits until
// every call inside has left and holds new ones at the gate until open(). Unlike a
// reader-preferring rwlock (glibc's default), a closing thread is never starved by a steady
// stream of calls. Entering and leaving an open gate costs two atomic operations.
// Closers may overlap (a healer installing a session while a call, or the call bound's watch,
// gives the replica up): the gate stays closed until every one of them has opened it. They
// hold the calls, not each other: each guards its own state by other means.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace rpmem::client
{

class call_gate
{
public:
	/** Waits while the gate is closed, then counts the caller in. */
	void enter()
	{
		for (;;) {
			if (closers_.load() == 0) {
				inside_.fetch_add(1);
				if (closers_.load() == 0)
					return;
				leave();
			}
			std::unique_lock l(mu_);
			cv_.wait(l, [&] { return closers_.load() == 0; });
		}
	}
	void leave()
	{
		if (inside_.fetch_sub(1) == 1 && closers_.load() != 0) {
			std::lock_guard l(mu_);
			cv_.notify_all();
		}
	}
	/** Holds new callers and waits until every caller inside has left. Each close() is
	 *  ended by one open(). */
	void close()
	{
		closers_.fetch_add(1);
		std::unique_lock l(mu_);
		cv_.wait(l, [&] { return inside_.load() == 0; });
	}
	/** Whether a closer has closed it (or is waiting for the calls inside to leave). */
	bool closed() const noexcept { return closers_.load() != 0; }
	/** Ends one close(): the calls go on once no closer holds the gate. */
	void open()
	{
		{
			std::lock_guard l(mu_);
			closers_.fetch_sub(1);
		}
		cv_.notify_all();
	}

	/** enter() .. leave() as a scope. */
	class pass
	{
	public:
		explicit pass(call_gate &g) : g_(g) { g_.enter(); }
		~pass() { g_.leave(); }
		pass(const pass &) = delete;
		pass &operator=(const pass &) = delete;

	private:
		call_gate &g_;
	};

private:
	std::atomic<int> inside_{0};
	std::atomic<int> closers_{0};
	std::mutex mu_;
	std::condition_variable cv_;
};

} // namespace rpmem::client
