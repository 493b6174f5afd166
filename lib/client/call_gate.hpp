// SPDX-License-Identifier: BSD-3-Clause
// A gate the application's calls pass through and one thread can close: close() waits until
// every call inside has left and holds new ones at the gate until open(). Unlike a
// reader-preferring rwlock (glibc's default), a closing thread is never starved by a steady
// stream of calls. Entering and leaving an open gate costs two atomic operations.
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
			if (!closed_.load()) {
				inside_.fetch_add(1);
				if (!closed_.load())
					return;
				leave();
			}
			std::unique_lock l(mu_);
			cv_.wait(l, [&] { return !closed_.load(); });
		}
	}
	void leave()
	{
		if (inside_.fetch_sub(1) == 1 && closed_.load()) {
			std::lock_guard l(mu_);
			cv_.notify_all();
		}
	}
	/** Holds new callers and waits until every caller inside has left. One closer at a time. */
	void close()
	{
		closed_.store(true);
		std::unique_lock l(mu_);
		cv_.wait(l, [&] { return inside_.load() == 0; });
	}
	/** Whether a closer has closed it (or is waiting for the calls inside to leave). */
	bool closed() const noexcept { return closed_.load(); }
	void open()
	{
		{
			std::lock_guard l(mu_);
			closed_.store(false);
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
	std::atomic<bool> closed_{false};
	std::mutex mu_;
	std::condition_variable cv_;
};

} // namespace rpmem::client
