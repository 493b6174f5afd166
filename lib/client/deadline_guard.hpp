// SPDX-License-Identifier: BSD-3-Clause
// A bound on something that holds others, where its own waits give none: a catch-up's last
// round holds the calls, and its waits last as long as the replica answers, however slowly.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace rpmem::client
{

/** Runs `on_expiry`, from a thread of its own, if the guard still lives `after` from its
 *  construction; `after` of zero: no bound. The destructor ends the thread (after on_expiry,
 *  if that began). on_expiry must not wait for what the guarded code holds. */
class deadline_guard
{
public:
	deadline_guard(std::chrono::milliseconds after, std::function<void()> on_expiry)
	{
		if (after.count() <= 0)
			return;
		thread_ = std::thread([this, after, f = std::move(on_expiry)] {
			std::unique_lock l(mu_);
			if (cv_.wait_for(l, after, [this] { return done_; }))
				return;
			expired_ = true;
			l.unlock();
			f();
		});
	}
	~deadline_guard()
	{
		{
			std::lock_guard l(mu_);
			done_ = true;
		}
		cv_.notify_all();
		if (thread_.joinable())
			thread_.join();
	}
	deadline_guard(const deadline_guard &) = delete;
	deadline_guard &operator=(const deadline_guard &) = delete;

	/** Whether on_expiry ran (or runs now). */
	bool expired() const
	{
		std::lock_guard l(mu_);
		return expired_;
	}

private:
	mutable std::mutex mu_;
	std::condition_variable cv_;
	bool done_ = false, expired_ = false;
	std::thread thread_; // last: started once the rest is built
};

} // namespace rpmem::client
