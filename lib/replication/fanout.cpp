// SPDX-License-Identifier: BSD-3-Clause
// replicated_pool's fan-out: an operation posted to every remote replica in sync, then waited on
// for each (the call costs the slowest replica, not the sum), and the failure policy that
// decides what a replica's failure does to the call.
#include "replication/replicated_pool_impl.hpp"

#include "client/control_session.hpp"

#include <cstring>

namespace rpmem
{

using namespace replication;

// ---------------------------------------------------------------------------------------------
// failure policy

void replicated_pool::impl::mark_lost(std::size_t index, const std::string &why)
{
	// The lower layer's advice (close the pool and open it again) is not this pool's remedy.
	std::string reason = why;
	const std::string remedy = fmt::format("resync({}) brings it back", index);
	if (auto at = reason.find(client::reopen_advice); at != std::string::npos)
		reason.replace(at, std::strlen(client::reopen_advice),
		               "the replica is unusable: " + remedy);
	else
		reason += " (" + remedy + ")";
	std::lock_guard g(state_mu);
	for (auto &r : remotes)
		if (r.index == index && !r.lost) {
			r.lost = true;
			r.error = reason;
			lost_unreported.push_back({index, true, where(r), false, reason});
			any_unreported.store(true, std::memory_order_release);
		}
}

void replicated_pool::impl::notify_lost()
{
	// Every fan-out ends here: no lock unless a loss waits to be reported.
	if (!any_unreported.load(std::memory_order_acquire))
		return;
	std::vector<replica_status> lost;
	{
		std::lock_guard g(state_mu);
		lost.swap(lost_unreported);
		any_unreported.store(false, std::memory_order_relaxed);
	}
	if (opts.on_replica_lost)
		for (const auto &st : lost)
			opts.on_replica_lost(st);
}

void replicated_pool::impl::fail_lost(const char *what, std::size_t index, int err,
                                      const std::string &why) const
{
	// `why` already ends with the remedy (mark_lost): resync(index).
	throw rpmem::error(err,
	                   fmt::format("{}: replica {} is lost: {}; the pool set is not fully "
	                               "replicated (failure_policy::degrade goes on without it)",
	                               what, index, why));
}

void replicated_pool::impl::check_not_lost(const char *what) const
{
	if (opts.on_failure == failure_policy::degrade)
		return;
	std::lock_guard g(state_mu);
	for (const auto &r : remotes)
		if (r.lost)
			fail_lost(what, r.index, EIO, r.error);
}

/**
 * Fan-out without threads: post(r) sends to every replica in sync, then complete(r) waits for
 * each in turn. The replicas work in parallel, so the call costs the slowest one, not the sum.
 */
void replicated_pool::impl::remote_all(const char *what,
                                       const std::function<void(remote_replica &)> &post,
                                       const std::function<void(remote_replica &)> &complete)
{
	if (remotes.empty())
		return;
	std::vector<bool> active(remotes.size());
	{
		std::lock_guard g(state_mu);
		for (std::size_t i = 0; i < remotes.size(); ++i)
			active[i] = !remotes[i].lost && remotes[i].rp;
	}
	std::vector<std::exception_ptr> errors(remotes.size());
	for (auto step : {&post, &complete}) {
		for (std::size_t i = 0; i < remotes.size(); ++i) {
			if (!active[i] || errors[i])
				continue;
			try {
				(*step)(remotes[i]);
			} catch (...) {
				errors[i] = std::current_exception();
			}
		}
	}
	std::size_t failed = remotes.size();
	int failed_err = 0;
	std::string failed_msg;
	for (std::size_t i = 0; i < errors.size(); ++i) {
		if (!errors[i])
			continue;
		std::string msg;
		int err = errnum_of(errors[i], &msg);
		mark_lost(remotes[i].index, msg);
		if (failed == remotes.size()) {
			failed = i;
			failed_err = err;
			failed_msg = msg;
		}
	}
	if (failed != remotes.size() && opts.on_failure == failure_policy::fail)
		throw rpmem::error(failed_err,
		                   fmt::format("{}: remote replica {} ({}) failed: {}: the data is "
		                               "durable on the master but not on every replica; "
		                               "bring the replica back and call resync({}), or use "
		                               "failure_policy::degrade",
		                               what, remotes[failed].index, where(remotes[failed]),
		                               failed_msg, remotes[failed].index));
}

void replicated_pool::impl::clear_behind_marks()
{
	// A replica whose mark stays (lost, or this fails) is reported behind by the next open.
	for (auto &r : remotes) {
		if (r.lost || !r.rp)
			continue;
		try {
			const auto clean = marked_behind(r.attr, false);
			r.rp->set_attr(&clean);
		} catch (const rpmem::error &e) {
			mark_lost(r.index, e.message());
		}
	}
	notify_lost();
}

} // namespace rpmem
