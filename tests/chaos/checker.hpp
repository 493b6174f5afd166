// SPDX-License-Identifier: BSD-3-Clause
// The continuous checks of one writer, against what the documentation promises:
//
//  * every acknowledged record is on every replica that reports itself in sync. A replica
//    covers the history read at T0 once the writer saw it in sync at a moment after T0
//    (observation.after > T0); from then on those records must be on it, whatever comes
//    (they only ever get overwritten by the same record or, SLOTS records later, a newer
//    one). Asynchronous: what a barrier covered, and the records present on a replica seen
//    in sync before and after the read form a prefix of each thread's records.
//    rpmem::pool: every record a drain or persist acknowledged, always (nothing reconnects
//    it but the writer, which only goes on from there);
//  * while the writer has its replicas open under continue/degrade, every one carries the
//    "possibly behind" mark (so nothing takes one as current behind the writer's back),
//    but for replicated_pool's documented gap: a replica unreachable at open is marked only
//    when the healer reaches it, so it is exempt until the writer has seen it in sync
//    (writer::unmarked_by_gap; counted, and reported at the end);
//  * no call takes longer than its bound (bound_ns(); docs/chaos.md says how it is measured).
#pragma once

#include "chaos/writer.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace rpmem::chaos
{

class checker
{
public:
	checker(writer &w, const run_settings &s);

	/** One round (the caller holds w.mu and the writer runs); "" or what failed.
	 *  allowance_ns: what the bound allows beyond the documentation (load). throttled: a
	 *  link of the writer's was throttled lately; the bounds are about outages, and in
	 *  synchronous mode a slow replica that keeps answering is waited for, so calls over the
	 *  bound are counted, not failed. An asynchronous writer under degrade drops a replica
	 *  that holds a batch longer than RPMEM_TIMEOUT: its bound holds behind a throttled link
	 *  too, and is judged there as anywhere. */
	std::string round(std::uint64_t allowance_ns, bool throttled = false);
	/** After a clean close: every replica unmarked, and holding every acknowledged record of
	 *  the whole ring (not only the newest). */
	std::string final_check();
	/** Whether every replica has covered everything acknowledged (after the faults ended,
	 *  with the writer running: its replicas are back in sync). */
	bool caught_up();

	/** The bound of a call of this writer, in ns, and what it is made of. */
	std::uint64_t bound_ns() const { return bound_ns_; }
	const std::string &bound_text() const { return bound_text_; }
	/** Covered records per replica and thread, the last observation: for a failure report. */
	std::string describe() const;
	/** What replica `replica` was seen to hold of the writer's current generation: nothing
	 *  when no round has looked at this generation yet (a promote right after a new one). */
	std::vector<std::uint64_t> covered(std::size_t replica) const
	{
		if (generation_ != w_.generation())
			return std::vector<std::uint64_t>(w_.threads(), 0);
		return covered_.at(replica);
	}
	/** Counters for the closing report. */
	std::uint64_t rounds = 0, replica_reads = 0, in_sync_observations = 0;
	std::uint64_t longest_ns = 0;
	std::string longest_what;
	std::uint64_t over_bound_throttled = 0; // calls over the bound behind a throttled link
	std::uint64_t unmarked_by_gap = 0;      // rounds that found a replica unmarked by the gap
	/** Calls seen over their bound but within the allowance since the last take, one line
	 *  each, for the run's log (which fault they met is read beside them). */
	std::vector<std::string> take_over_bound() { return std::exchange(over_bound_, {}); }

private:
	void reset();
	std::string check_calls(std::uint64_t allowance_ns, bool throttled);

	writer &w_;
	std::uint64_t bound_ns_ = 0;
	bool waits_for_slow_ = true; // a slow replica sets the calls' pace (see round())
	std::string bound_text_;
	int generation_ = -1;
	std::vector<std::vector<std::uint64_t>> covered_; // [replica][thread]
	struct pending {
		std::vector<std::uint64_t> history;
		std::uint64_t t0 = 0;
	};
	std::optional<pending> pending_;
	observation last_;
	// The writer process the observations are of, and when it was first seen: the history
	// keeps a killed process's last word until the one started again observes for itself.
	pid_t pid_ = -1;
	std::uint64_t since_ = 0;
	std::map<std::size_t, std::uint64_t> reported_; // slot -> longest already judged
	std::map<std::size_t, std::uint64_t> noted_;    // slot -> longest already logged over bound
	std::vector<std::string> over_bound_;
};

} // namespace rpmem::chaos
