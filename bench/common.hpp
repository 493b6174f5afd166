// SPDX-License-Identifier: BSD-3-Clause
// What every part of rpmem-bench shares: the options, one result row, and the statistics.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rpmem::bench
{

using clock_type = std::chrono::steady_clock;

struct options {
	std::string target;
	std::string poolset;
	std::vector<std::string> scenarios{"all"};
	std::vector<std::string> providers; // empty: RPMEM_PROVIDER, else "tcp"
	std::vector<std::string> methods{"gpspm"};
	std::vector<std::size_t> sizes;        // latency sizes; empty: 8 B ... 4 MiB
	std::vector<unsigned> flush_counts;    // empty: 1, 2, 4 ... 64
	std::vector<unsigned> threads;         // empty: 1, 2, 4, 8
	std::vector<std::size_t> tp_sizes;     // empty: 4 KiB, 64 KiB, 1 MiB, 4 MiB
	unsigned pool_lanes = 0;               // throughput: lanes of the pool (0: one per thread)
	std::vector<unsigned> pmemobj_threads; // empty: 1
	std::size_t pool_size = 256 << 20;
	unsigned iterations = 1000;
	std::size_t bytes_budget = 256 << 20; // per latency point: fewer iterations for big sizes
	unsigned rounds = 5;                  // floor and ours alternate this many times per point
	double seconds = 0.5;                 // per throughput point (ours and the floor each)
	unsigned window = 16;                 // writes in flight in the streaming floor
	unsigned open_reps = 5;
	std::string pmemobj_remote_set;       // pool set on the replica node for the REPLICA line
	std::string pmemobj_dir = "/dev/shm"; // where the local libpmemobj pool part goes
	std::size_t pmemobj_size = 64 << 20;
	unsigned pmemobj_ops = 2000;
	std::string librpmem_dir;    // where librpmem.so.1 is; empty: <exe dir>/../lib
	std::string floor_cmd;       // empty: RPMEM_CMD's rpmemd path with rpmemd -> rpmem-floor
	unsigned lanes_check = 1024; // lanes requested by the "lanes" scenario
	std::vector<std::string> fanout_sets; // pool sets of the "fanout" scenario's replicas
	std::string mr_mode; // both sides' memory registration mode; empty: as RPMEM_MR_MODE
	bool csv = false;
	std::string plot;
};

/** One line of output. `value` is what the ratio compares: latency (µs), MiB/s or ops/s. */
struct row {
	std::string provider;
	std::string method;
	std::string scenario;
	std::string param;
	std::size_t size = 0; // bytes, for plots (0: none)
	unsigned threads = 1;
	double median_us = 0;
	double p99_us = 0;
	double mib_s = 0;
	double ops_s = 0;
	std::string floor; // name of the floor row compared against; empty: this is a floor
	double floor_value = 0;
	double ratio = 0; // ours / floor (latency: lower is better; throughput: higher)
	std::string note;
};

struct stats {
	double median = 0;
	double p99 = 0;
};

stats summarize(std::vector<double> samples);

inline double us_since(clock_type::time_point t)
{
	return std::chrono::duration<double, std::micro>(clock_type::now() - t).count();
}

inline double mib_per_s(double bytes, double us)
{
	return us > 0 ? bytes / us * 1e6 / double(1 << 20) : 0;
}

std::string size_text(std::size_t n);
/** "64", "4K", "4KiB", "1M", "1MiB" -> bytes. Throws std::invalid_argument. */
std::size_t parse_size(const std::string &text);

/** Iterations for one latency point of `size` bytes: o.iterations, fewer for big sizes. */
unsigned iterations_for(const options &o, std::size_t size);

} // namespace rpmem::bench
