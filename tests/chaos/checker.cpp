// SPDX-License-Identifier: BSD-3-Clause
#include "chaos/checker.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <thread>

namespace rpmem::chaos
{

checker::checker(writer &w, const run_settings &s) : w_(w)
{
	const auto ns = [](std::chrono::milliseconds ms) {
		return static_cast<std::uint64_t>(ms.count()) * 1000000u;
	};
	switch (w.config().kind) {
	case writer_kind::pmemobj:
		// A transaction persists to each replica in turn; each call waits at most
		// RPMEM_CALL_TIMEOUT, by default RPMEM_TIMEOUT to see its replica gone plus
		// RPMEM_RECONNECT_TIMEOUT for it to come back (librpmem(7), "A replica's outage"),
		// behind a throttled link as well: past it the replica is dropped.
		bound_ns_ = w.replicas() * (ns(s.timeout) + ns(s.reconnect_timeout));
		waits_for_slow_ = false;
		bound_text_ =
		    fmt::format("{} replicas x (RPMEM_TIMEOUT {} ms + "
		                "RPMEM_RECONNECT_TIMEOUT {} ms) per transaction",
		                w.replicas(), s.timeout.count(), s.reconnect_timeout.count());
		break;
	case writer_kind::rp_sync:
	case writer_kind::pool:
		// A call waits for its replicas together; one that went silent is given up
		// (degrade: lost, caught up later; rpmem::pool: the call fails) after
		// RPMEM_TIMEOUT.
		bound_ns_ = ns(s.timeout);
		bound_text_ = fmt::format("RPMEM_TIMEOUT {} ms per call", s.timeout.count());
		break;
	case writer_kind::rp_async:
		// A persist waits for the lag bound (max_lag_time 1 s) while the replication thread
		// waits for a silent replica (RPMEM_TIMEOUT).
		bound_ns_ = ns(s.timeout) + ns(std::chrono::milliseconds(1000));
		// ... and drops a replica too slow for that (pull-ahead): behind a throttled
		// link as well.
		waits_for_slow_ = false;
		bound_text_ = fmt::format("RPMEM_TIMEOUT {} ms + max_lag_time 1000 ms per call",
		                          s.timeout.count());
		break;
	}
}

void checker::reset()
{
	generation_ = w_.generation();
	covered_.assign(w_.replicas(), std::vector<std::uint64_t>(w_.threads(), 0));
	pending_.reset();
	last_ = {};
	reported_.clear();
	noted_.clear();
}

std::string checker::check_calls(std::uint64_t allowance_ns, bool throttled)
{
	// The documented bound, once more as slack (a loaded 2-vCPU machine, sanitizer builds
	// beside), and what the driver measured of load: a call over this is stuck, not slow.
	allowance_ns += std::max<std::uint64_t>(bound_ns_, 5000000000u);
	const auto limit = bound_ns_ + allowance_ns;
	for (const auto &c : w_.calls()) {
		// Opens and closes start sessions over SSH: the tasks' hang bounds judge them.
		const bool session_running = c.what == "open" || c.what == "close";
		const bool session_longest = c.longest_what == "open" || c.longest_what == "close";
		if (session_running && session_longest)
			continue;
		if (!session_longest && c.longest_ns > longest_ns) {
			longest_ns = c.longest_ns;
			longest_what = c.longest_what;
		}
		auto &noted = noted_[c.slot];
		if (!session_longest && c.longest_ns > bound_ns_ && c.longest_ns > noted) {
			noted = c.longest_ns;
			over_bound_.push_back(fmt::format(
			    "a {} of thread {} took {:.3f} s, over its bound {:.3f} s{}",
			    c.longest_what, c.slot, double(c.longest_ns) / 1e9,
			    double(bound_ns_) / 1e9,
			    throttled ? " (behind a throttled link)" : ""));
		}
		auto &seen = reported_[c.slot];
		if (throttled && waits_for_slow_) {
			if (!session_longest && c.longest_ns > limit && c.longest_ns > seen) {
				seen = c.longest_ns;
				++over_bound_throttled;
			}
			continue;
		}
		if (!session_running && c.running_ns > limit)
			return fmt::format(
			    "a {} of thread {} has been running for {:.3f} s, beyond its "
			    "bound {:.3f} s ({}) + {:.3f} s allowed for load",
			    c.what, c.slot, double(c.running_ns) / 1e9, double(bound_ns_) / 1e9,
			    bound_text_, double(allowance_ns) / 1e9);
		if (!session_longest && c.longest_ns > limit && c.longest_ns > seen) {
			seen = c.longest_ns;
			return fmt::format(
			    "a {} of thread {} took {:.3f} s, beyond its bound {:.3f} s "
			    "({}) + {:.3f} s allowed for load",
			    c.longest_what, c.slot, double(c.longest_ns) / 1e9,
			    double(bound_ns_) / 1e9, bound_text_, double(allowance_ns) / 1e9);
		}
	}
	return {};
}

std::string checker::round(std::uint64_t allowance_ns, bool throttled)
{
	if (w_.generation() != generation_ || covered_.empty() ||
	    covered_[0].size() != w_.threads())
		reset();
	++rounds;
	if (auto f = check_calls(allowance_ns, throttled); !f.empty())
		return f;
	if (w_.marks_replicas())
		for (std::size_t r = 0; r < w_.replicas(); ++r) {
			const auto m = w_.marked(r);
			if (!m)
				return fmt::format(
				    "replica {} ({}) has no readable pool header while its "
				    "writer has it open",
				    r, w_.replica_part(static_cast<int>(r)).string());
			if (!*m && w_.unmarked_by_gap(r)) {
				++unmarked_by_gap;
				continue;
			}
			if (!*m)
				return fmt::format("replica {} ({}) is not marked \"possibly "
				                   "behind\" while its writer "
				                   "has it open under continue/degrade: a replica "
				                   "left behind now would "
				                   "be taken as current",
				                   r,
				                   w_.replica_part(static_cast<int>(r)).string());
		}
	if (w_.pid() != pid_) {
		pid_ = w_.pid();
		since_ = w_.now();
		last_ = {};
	}
	const auto obs = w_.observe();
	if (obs.valid && obs.after > since_)
		last_ = obs;
	if (pending_ && obs.valid && obs.after > pending_->t0) {
		for (std::size_t r = 0; r < w_.replicas() && r < obs.states.size(); ++r)
			if (obs.states[r] == replica_state::in_sync) {
				++in_sync_observations;
				for (std::size_t t = 0; t < covered_[r].size(); ++t)
					covered_[r][t] =
					    std::max(covered_[r][t], pending_->history[t]);
			}
		pending_.reset();
	}
	if (!pending_) {
		pending p;
		p.history = w_.coverable();
		p.t0 = w_.now(); // after the read: every record in it was acknowledged before
		if (p.history.size() == w_.threads())
			pending_ = std::move(p);
	}
	const bool async = w_.config().kind == writer_kind::rp_async;
	for (std::size_t r = 0; r < w_.replicas(); ++r) {
		const bool prefix = async && last_.valid && r < last_.states.size() &&
		                    last_.states[r] == replica_state::in_sync;
		++replica_reads;
		auto v = w_.check_replica(r, covered_[r], prefix);
		if (v.empty() || !prefix)
			return v.empty() ? std::string() : v;
		// Not a prefix: a failure only if the replica was in sync after the read too
		// (one caught up meanwhile gets blocks in any order).
		if (auto plain = w_.check_replica(r, covered_[r], false); !plain.empty())
			return plain;
		const auto read_end = w_.now();
		for (int i = 0; i < 50; ++i) {
			const auto o = w_.observe();
			if (o.valid && o.after > read_end) {
				if (r < o.states.size() && o.states[r] == replica_state::in_sync)
					return v + " (the replica was in sync before and after the "
					           "read)";
				break;
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		}
	}
	return {};
}

bool checker::caught_up()
{
	if (covered_.empty() || !last_.valid)
		return false;
	const auto acked = w_.coverable();
	for (std::size_t r = 0; r < w_.replicas(); ++r) {
		if (r >= last_.states.size() || last_.states[r] != replica_state::in_sync)
			return false;
		for (std::size_t t = 0; t < acked.size() && t < covered_[r].size(); ++t)
			if (covered_[r][t] == 0 && acked[t] > 0)
				return false;
	}
	return true;
}

std::string checker::final_check()
{
	const auto acked = w_.acked();
	std::string out;
	for (std::size_t r = 0; r < w_.replicas(); ++r) {
		const auto m = w_.marked(r);
		if (!m)
			return fmt::format(
			    "replica {} ({}) has no readable pool header after the close", r,
			    w_.replica_part(static_cast<int>(r)).string());
		if (*m) {
			out +=
			    fmt::format("note: replica {} stays marked possibly behind after the "
			                "close (it was away at the close)\n",
			                r);
			continue; // refused until synced: may lack records, as documented
		}
		if (auto v = w_.check_replica(r, acked, false, std::uint64_t(1) << 40); !v.empty())
			return "after a clean close, unmarked: " + v;
	}
	return out;
}

std::string checker::describe() const
{
	std::string s;
	const auto acked = w_.acked();
	s += fmt::format("    acknowledged per thread: {}\n", fmt::join(acked, " "));
	if (w_.config().kind == writer_kind::rp_async)
		s += fmt::format("    covered by barriers:     {}\n",
		                 fmt::join(w_.coverable(), " "));
	for (std::size_t r = 0; r < covered_.size(); ++r)
		s += fmt::format("    replica {} (host {}) covered: {}; last seen {}\n", r,
		                 w_.config().hosts[r], fmt::join(covered_[r], " "),
		                 r < last_.states.size() ? name(last_.states[r]) : "-");
	for (const auto &c : const_cast<writer &>(w_).calls())
		s += fmt::format("    slot {}: {} running {:.3f} s; longest {} {:.3f} s\n", c.slot,
		                 c.running_ns ? c.what : "no call", double(c.running_ns) / 1e9,
		                 c.longest_what, double(c.longest_ns) / 1e9);
	return s;
}

} // namespace rpmem::chaos
