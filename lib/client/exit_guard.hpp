// SPDX-License-Identifier: BSD-3-Clause
// Background SSH work and process exit. An application may exit with pools still open (PMDK
// allows it). exit() then runs OpenSSL's atexit cleanup, which frees the locks libssh needs: a
// keep-alive ping or a reconnect running at that moment crashed (seen under TSan: SEGV in
// RAND_bytes from a ping). Our handler, registered when the first background user starts and
// so after OpenSSL's (handlers run in reverse order), runs first: it stops new work and waits
// for the work in flight, at most a few seconds.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace rpmem::client
{

class exit_guard
{
public:
	static exit_guard &get()
	{
		static exit_guard *const g = new exit_guard(); // used while the process exits
		return *g;
	}
	/** Registers the exit handler (once). Call it after libssh has initialized OpenSSL. */
	static void install();
	/** False once the process is exiting: no more work. Else the caller must leave(). */
	bool enter()
	{
		std::lock_guard lock(mu_);
		if (exiting_)
			return false;
		++in_flight_;
		return true;
	}
	void leave()
	{
		{
			std::lock_guard lock(mu_);
			--in_flight_;
		}
		cv_.notify_all();
	}

	/** For a background thread that works between enter() and leave(): runs wait() (its
	 *  sleep) outside the guard, so exit never waits for a sleeper, then enters again.
	 *  False when the process began exiting meanwhile: the caller is not inside and must not
	 *  work any more (exit destroys what its work would touch); it should park. */
	template <class Wait> bool sleep(Wait &&wait)
	{
		leave();
		wait();
		return enter();
	}

private:
	static void at_exit();

	std::mutex mu_;
	std::condition_variable cv_;
	int in_flight_ = 0;
	bool exiting_ = false;
};

} // namespace rpmem::client
