// SPDX-License-Identifier: BSD-3-Clause
// rpmem-chaos's command line: the options of a run, and what follows from them (its writers,
// the shapes its schedule is drawn for, the command that replays it).
#pragma once

#include "chaos/schedule.hpp"
#include "chaos/writer.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace rpmem::chaos
{

struct options {
	std::uint64_t seed = 0;
	double seconds = 180;
	int hosts = 3;
	double mean_gap_ms = 1500;
	bool print_schedule = false;
	bool keep = false;
	std::vector<fault> kinds; // empty: all
	std::vector<std::string> writers{"obj", "rps", "rpa", "pool"};
};

/** The options of argv; a bad one prints the usage and exits 2. */
options parse(int argc, char **argv);
/** The command that replays a run: every option that shapes its schedule. */
std::string replay_command(const options &o);
/** The writers a run can have, on hosts 0..n-1. */
std::vector<writer_config> writer_configs(const options &o);
std::vector<writer_shape> shapes(const std::vector<writer_config> &ws);

} // namespace rpmem::chaos
