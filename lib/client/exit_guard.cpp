// SPDX-License-Identifier: BSD-3-Clause
#include "client/exit_guard.hpp"

#include <cstdlib>

namespace rpmem::client
{

void exit_guard::install()
{
	static std::once_flag once;
	std::call_once(once, [] { std::atexit(at_exit); });
}

void exit_guard::at_exit()
{
	auto &g = get();
	std::unique_lock lock(g.mu_);
	g.exiting_ = true;
	// Work in flight is bounded by its own timeouts; do not hold up exit much longer.
	g.cv_.wait_for(lock, std::chrono::seconds(5), [&] { return g.in_flight_ == 0; });
}

} // namespace rpmem::client
