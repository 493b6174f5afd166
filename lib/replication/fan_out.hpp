// SPDX-License-Identifier: BSD-3-Clause
// Runs one task per replica at once and waits for all: task 0 on the calling thread, the others
// on one parked worker thread each (woken through a futex). remote_pool's calls block for their
// round trip, so this is how N replicas cost the slowest one's latency rather than the sum.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace rpmem::replication
{

class fan_out
{
public:
	/** Ready to run n tasks at once (n - 1 worker threads). */
	explicit fan_out(std::size_t n);
	~fan_out();
	fan_out(const fan_out &) = delete;
	fan_out &operator=(const fan_out &) = delete;

	/**
	 * Calls task(i) for every i < n with active[i], concurrently; returns when all are done.
	 * errors[i] receives what task(i) threw. Not reentrant: callers serialize.
	 */
	void run(const std::function<void(std::size_t)> &task, const std::vector<bool> &active,
	         std::vector<std::exception_ptr> &errors);

private:
	void worker(std::size_t index);

	std::size_t n_;
	std::vector<std::thread> threads_;
	std::atomic<std::uint32_t> generation_{0};
	std::atomic<std::uint32_t> pending_{0};
	std::atomic<bool> stop_{false};
	const std::function<void(std::size_t)> *task_ = nullptr;
	const std::vector<bool> *active_ = nullptr;
	std::vector<std::exception_ptr> *errors_ = nullptr;
};

} // namespace rpmem::replication
