// SPDX-License-Identifier: BSD-3-Clause
// rpmem-bench: the rpmem data path against a real rpmemd, each number beside the transport
// floor measured with raw libfabric on the same provider and addresses in the same run.
//
//   rpmem-bench TARGET POOLSET [-s latency,flush,throughput,pmemobj,open,lanes|all]
//               [--provider tcp,sockets] [--method gpspm,apm,commit] [--csv] [--plot FILE.png]
//
// TARGET and POOLSET as for rpmem_create; RPMEM_CMD and RPMEM_SSH* say how to reach rpmemd,
// and rpmem-floor (the floor's peer) is started the same way. Medians; nothing is asserted.
#include "common.hpp"
#include "floor.hpp"
#include "output.hpp"
#include "pmemobj.hpp"
#include "scenarios.hpp"

#include "rpmem/error.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>

namespace
{

using namespace rpmem::bench;

bool wanted(const options &o, const std::string &s)
{
	for (const auto &w : o.scenarios)
		if (w == s || w == "all")
			return true;
	return false;
}

void run(const options &o, std::vector<row> &rows)
{
	for (const auto &provider : o.providers) {
		scenarios sc(o, provider);
		bool needs_floor =
		    wanted(o, "latency") || wanted(o, "flush") || wanted(o, "throughput");
		std::unique_ptr<floor_link> fl;
		if (needs_floor)
			fl = std::make_unique<floor_link>(o, provider, o.pool_size, 4096);
		if (wanted(o, "latency"))
			for (std::size_t m = 0; m < o.methods.size(); ++m)
				sc.latency(o.methods[m], *fl, m == 0, rows);
		if (wanted(o, "flush"))
			sc.flush(*fl, rows);
		if (wanted(o, "throughput"))
			sc.throughput(*fl, rows);
		fl.reset();
		if (wanted(o, "pmemobj"))
			pmemobj_scenario(o, provider, rows);
		if (wanted(o, "open"))
			sc.startup(rows);
		if (wanted(o, "lanes"))
			sc.lanes(rows);
		if (wanted(o, "fanout") && !o.fanout_sets.empty())
			sc.fanout(rows);
	}
}

} // namespace

int main(int argc, char **argv)
{
	if (argc > 1 && std::strcmp(argv[1], pmemobj_worker_flag) == 0)
		return pmemobj_worker(argc, argv);
	std::signal(SIGPIPE, SIG_IGN);

	options o;
	std::vector<std::string> sizes, tp_sizes;
	std::string pool_size, pmemobj_size;
	CLI::App app{"rpmem-bench: rpmem against a real rpmemd, beside the transport floor"};
	app.add_option("target", o.target, "[user@]host[:port] of the replica node")->required();
	app.add_option("poolset", o.poolset,
	               "pool set name on the replica node (big enough for "
	               "--pool-size)")
	    ->required();
	app.add_option("-s,--scenario", o.scenarios,
	               "latency, flush, throughput, pmemobj, open, lanes, fanout or all (comma "
	               "list)")
	    ->delimiter(',')
	    ->check(CLI::IsMember(
	        {"latency", "flush", "throughput", "pmemobj", "open", "lanes", "fanout", "all"}));
	app.add_option("-p,--provider", o.providers,
	               "libfabric providers to run (comma list; default RPMEM_PROVIDER or tcp)")
	    ->delimiter(',');
	app.add_option("-m,--method", o.methods,
	               "persistence methods for the latency scenario: gpspm, apm, commit (apm "
	               "adds --persist-apm to RPMEM_CMD, commit --persist-commit; the replica "
	               "must be pmem, and commit needs a provider granting FI_RMA_PMEM: tcp)")
	    ->delimiter(',')
	    ->check(CLI::IsMember({"gpspm", "apm", "commit"}));
	app.add_option("--sizes", sizes,
	               "latency sizes (default 8 64 256 1K 4K 16K 64K 256K 1M 4M)")
	    ->delimiter(',');
	app.add_option("--flush-counts", o.flush_counts, "flushes per drain (default 1..64)")
	    ->delimiter(',');
	app.add_option("--threads", o.threads, "thread/lane counts (default 1,2,4,8)")
	    ->delimiter(',');
	app.add_option("--tp-sizes", tp_sizes, "throughput sizes (default 4K,64K,1M,4M)")
	    ->delimiter(',');
	app.add_option("--pool-lanes", o.pool_lanes,
	               "throughput: lanes of the pool, of which thread t uses lane t (1024: "
	               "libpmemobj's pattern; default one lane per thread)");
	app.add_option("--pmemobj-threads", o.pmemobj_threads,
	               "threads running transactions in the pmemobj scenario (default 1)")
	    ->delimiter(',');
	app.add_option("-n,--iterations", o.iterations, "round trips per latency point");
	app.add_option("--bytes-budget", o.bytes_budget,
	               "bytes per latency point: fewer iterations for big sizes");
	app.add_option("--rounds", o.rounds, "batches in which ours and the floor alternate");
	app.add_option("-t,--seconds", o.seconds, "seconds per throughput point");
	app.add_option("--window", o.window, "writes in flight in the streaming floor");
	app.add_option("--open-reps", o.open_reps, "create/open repetitions");
	app.add_option("--pool-size", pool_size, "bytes of the local pool (default 256M)");
	app.add_option("--pmemobj-remote-set", o.pmemobj_remote_set,
	               "pool set on the replica node for libpmemobj's REPLICA line");
	app.add_option("--pmemobj-dir", o.pmemobj_dir, "directory of the local libpmemobj pool");
	app.add_option("--pmemobj-size", pmemobj_size,
	               "bytes of the libpmemobj pool (default 64M)");
	app.add_option("--pmemobj-ops", o.pmemobj_ops, "transactions per libpmemobj run");
	app.add_option("--librpmem-dir", o.librpmem_dir,
	               "directory of rpmem's librpmem.so.1 (default <exe>/../lib)");
	app.add_option(
	    "--floor-cmd", o.floor_cmd,
	    "command starting rpmem-floor on the replica node (default: from RPMEM_CMD)");
	app.add_option("--lanes-check", o.lanes_check, "lanes requested by the lanes scenario");
	app.add_option("--fanout-sets", o.fanout_sets,
	               "pool sets on the replica node for the fanout scenario, one per replica "
	               "(each 72M or more; comma list)")
	    ->delimiter(',');
	app.add_option("--mr-mode", o.mr_mode,
	               "memory registration mode of rpmem (client and rpmemd) and of the floor: "
	               "auto, basic (FI_MR_BASIC: virtual addresses, provider keys, as RDMA "
	               "hardware) or scalable")
	    ->check(CLI::IsMember({"auto", "basic", "scalable"}));
	app.add_flag("--csv", o.csv, "CSV instead of a table");
	app.add_option("--plot", o.plot,
	               "write latency and throughput plots to this PNG (and one per provider)");
	std::string plot_from;
	app.add_option("--plot-from", plot_from,
	               "only plot the rows of an earlier --csv output (with --plot)");
	CLI11_PARSE(app, argc, argv);
	if (std::find(o.scenarios.begin(), o.scenarios.end(), "fanout") != o.scenarios.end() &&
	    o.fanout_sets.empty()) {
		fmt::print(stderr,
		           "rpmem-bench: the fanout scenario needs --fanout-sets SET1,SET2,... "
		           "(pool sets on the replica node, one per replica)\n");
		return 2;
	}
	try {
		for (const auto &s : sizes)
			o.sizes.push_back(parse_size(s));
		for (const auto &s : tp_sizes)
			o.tp_sizes.push_back(parse_size(s));
		if (!pool_size.empty())
			o.pool_size = parse_size(pool_size);
		if (!pmemobj_size.empty())
			o.pmemobj_size = parse_size(pmemobj_size);
	} catch (const std::exception &e) {
		fmt::print(stderr, "rpmem-bench: bad size: {}\n", e.what());
		return 2;
	}
	// The client and the floor read RPMEM_MR_MODE (client::process_settings).
	if (!o.mr_mode.empty())
		setenv("RPMEM_MR_MODE", o.mr_mode.c_str(), 1);
	if (o.providers.empty()) {
		const char *p = std::getenv("RPMEM_PROVIDER");
		o.providers.push_back(p && *p ? p : "tcp");
	}
	std::vector<row> rows;
	int rc = 0;
	if (!plot_from.empty()) {
		try {
			plot_all(read_csv(plot_from), o.plot.empty() ? "rpmem-bench.png" : o.plot);
			return 0;
		} catch (const std::exception &e) {
			fmt::print(stderr, "rpmem-bench: {}\n", e.what());
			return 1;
		}
	}
	try {
		run(o, rows);
	} catch (const std::exception &e) {
		fmt::print(stderr, "rpmem-bench: {}\n", e.what());
		rc = 1;
	}
	if (o.csv)
		print_csv(stdout, rows);
	else
		print_table(stdout, rows);
	if (!o.plot.empty() && rc == 0) {
		try {
			plot_all(rows, o.plot);
		} catch (const std::exception &e) {
			fmt::print(stderr, "rpmem-bench: {}\n", e.what());
			rc = 1;
		}
	}
	return rc;
}
