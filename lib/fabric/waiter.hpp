// SPDX-License-Identifier: BSD-3-Clause
// One thread's way of waiting on a completion queue, chosen once (spin_policy.hpp): block on
// the provider's wait object, poll, or poll for an adaptive budget and then block.
#pragma once

#include "fabric/cq.hpp"
#include "fabric/spin_policy.hpp"

#include <chrono>
#include <span>

namespace rpmem::fabric
{

class cq_waiter
{
public:
	explicit cq_waiter(wait_mode mode, spin_budget::limits limits = {})
	    : mode_(mode), budget_(limits)
	{
	}

	/**
	 * Completions from `q`: with wait_mode::spin whatever is there now (the caller loops);
	 * otherwise at least one, an error, or nothing after `timeout` (or a signal()). Adaptive
	 * waits poll first, for the budget, while the machine has a core to spare.
	 */
	cq_result wait(cq &q, std::span<cq_entry> out, std::chrono::milliseconds timeout);

	/** The wait object a CQ waited on this way needs. */
	wait_object needs() const
	{
		return mode_ == wait_mode::spin ? wait_object::none : wait_object::unspec;
	}
	wait_mode mode() const { return mode_; }
	spin_budget &budget() { return budget_; }

private:
	wait_mode mode_;
	spin_budget budget_;
};

} // namespace rpmem::fabric
