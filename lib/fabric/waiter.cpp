// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/waiter.hpp"

namespace rpmem::fabric
{

namespace
{

inline void cpu_relax()
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

} // namespace

cq_result cq_waiter::wait(cq &q, std::span<cq_entry> out, std::chrono::milliseconds timeout)
{
	if (mode_ == wait_mode::spin)
		return q.read(out);
	if (mode_ == wait_mode::block)
		return q.sread(out, timeout);
	const auto start = std::chrono::steady_clock::now();
	auto budget = budget_.next();
	if (budget.count() > 0) {
		// Held while polling only: a thread blocked below (an idle rpmemd worker, for up
		// to its whole timeout) must not keep the other waiters from polling.
		spin_licence licence;
		if (licence && machine_has_core_to_spare()) {
			for (;;) {
				cq_result r = q.read(out);
				auto spent = std::chrono::steady_clock::now() - start;
				if (r.count || r.error) {
					budget_.hit(spent);
					return r;
				}
				if (spent >= budget)
					break;
				cpu_relax();
			}
			budget_.miss();
		}
	}
	cq_result r = q.sread(out, timeout);
	if (r.count || r.error)
		budget_.late(std::chrono::steady_clock::now() - start);
	return r;
}

} // namespace rpmem::fabric
