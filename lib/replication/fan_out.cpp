// SPDX-License-Identifier: BSD-3-Clause
#include "replication/fan_out.hpp"

namespace rpmem::replication
{

fan_out::fan_out(std::size_t n) : n_(n)
{
	for (std::size_t i = 1; i < n; ++i)
		threads_.emplace_back([this, i] { worker(i); });
}

fan_out::~fan_out()
{
	stop_.store(true);
	generation_.fetch_add(1, std::memory_order_release);
	generation_.notify_all();
	for (auto &t : threads_)
		t.join();
}

void fan_out::worker(std::size_t index)
{
	// Generation 0 is the one before any run(): a worker that starts late still sees run 1.
	std::uint32_t seen = 0;
	for (;;) {
		generation_.wait(seen, std::memory_order_acquire);
		seen = generation_.load(std::memory_order_acquire);
		if (stop_.load())
			return;
		if ((*active_)[index]) {
			try {
				(*task_)(index);
			} catch (...) {
				(*errors_)[index] = std::current_exception();
			}
		}
		// Every worker checks in on every generation, active or not, so none is still
		// reading this run's arguments when the next run() stores its own.
		if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1)
			pending_.notify_one();
	}
}

void fan_out::run(const std::function<void(std::size_t)> &task, const std::vector<bool> &active,
                  std::vector<std::exception_ptr> &errors)
{
	errors.assign(n_, nullptr);
	bool others = false;
	for (std::size_t i = 1; i < n_; ++i)
		others |= bool(active[i]);
	if (others) {
		task_ = &task;
		active_ = &active;
		errors_ = &errors;
		pending_.store(static_cast<std::uint32_t>(n_ - 1), std::memory_order_relaxed);
		generation_.fetch_add(1, std::memory_order_release);
		generation_.notify_all();
	}
	if (n_ > 0 && active[0]) {
		try {
			task(0);
		} catch (...) {
			errors[0] = std::current_exception();
		}
	}
	for (;;) {
		auto left = pending_.load(std::memory_order_acquire);
		if (left == 0)
			break;
		pending_.wait(left, std::memory_order_acquire);
	}
}

} // namespace rpmem::replication
