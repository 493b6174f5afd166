// SPDX-License-Identifier: BSD-3-Clause
// The chaos run's schedule: which fault, where, when and for how long, drawn from one seed
// before anything runs. A pure function of its configuration, so the same seed gives the same
// faults at the same offsets with the same durations (tests/chaos/schedule_test.cpp), and
// `rpmem-chaos --seed S --print-schedule` shows it without running it.
//
// What the run makes of an event can still depend on the moment (which rpmemd processes exist
// when "kill one of host 1's" comes, whether a writer is running when `rpmem sync` comes): the
// driver logs what each event met (tests/chaos/driver.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rpmem::chaos
{

enum class fault {
	rpmemd_kill, // SIGKILL one rpmemd of a host (param picks which)
	rpmemd_stop, // SIGSTOP one rpmemd of a host, SIGCONT after the duration
	link_down,   // the host's veth down, up after the duration
	link_slow,   // tc tbf on both ends of the host's link (param: the rate), removed after
	sshd_stop,   // the host's sshd stopped (sessions go on, new logins fail), started after
	fs_full,     // the host's tmpfs filled up, the filler removed after the duration
	writer_kill, // SIGKILL a writer; restarted (open again, recover) after the duration
	tool_sync,   // `rpmem sync` on a writer's master pool set, by an operator
	tool_check,  // `rpmem check` on it
	promote,     // the writer killed, its master declared lost, a replica (param) promoted
};
inline constexpr int fault_kinds = 10;

const char *name(fault f) noexcept;

struct event {
	std::int64_t at_ms = 0; // from the start of the faults
	fault what = fault::rpmemd_kill;
	int host = -1;   // the replica host a host fault hits
	int writer = -1; // the writer a writer fault or a tool run hits
	std::int64_t duration_ms = 0;
	std::uint64_t param = 0;
};

/** A writer as the schedule sees it. */
struct writer_shape {
	std::string name;
	std::vector<int> hosts;  // the replica hosts it writes to
	bool has_poolset = true; // a master pool set: `rpmem sync|check` apply
	bool promotable = false; // its replicas are promoted when its master is lost
};

struct schedule_config {
	std::uint64_t seed = 1;
	std::int64_t length_ms = 60000;
	int hosts = 3;
	std::vector<writer_shape> writers;
	double mean_gap_ms = 1500; // between two fault starts (a Poisson process)
};

/** The events, ordered by at_ms. A host's link, sshd, file system and stopped rpmemd, and a
 *  writer's life (kill, promote) each carry one fault at a time; different ones overlap. */
std::vector<event> make_schedule(const schedule_config &c);

/** One line: "t=12.345s link_down host 1 for 2.500s". */
std::string describe(const event &e, const std::vector<writer_shape> &writers);

/** The tbf rate (kbit/s) an event's param stands for. */
std::uint64_t slow_rate_kbit(std::uint64_t param) noexcept;

} // namespace rpmem::chaos
