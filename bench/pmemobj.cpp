// SPDX-License-Identifier: BSD-3-Clause
#include "pmemobj.hpp"

#include "client/remote_pool.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>
#include <libpmemobj.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace rpmem::bench
{

namespace fs = std::filesystem;

namespace
{

inline constexpr std::size_t object_size = 256;
inline constexpr std::size_t slots = 1024;

struct worker_result {
	unsigned ops = 0;
	double seconds = 0; // the transactions and pmemobj_close (asynchronous: the replica
	                    // complete)
	double close_ms = 0;
	double median_us = 0;
	double p99_us = 0;
};

fs::path librpmem_dir(const options &o)
{
	fs::path dir = o.librpmem_dir;
	if (dir.empty())
		dir = fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "lib";
	if (!fs::exists(dir / "librpmem.so.1"))
		throw rpmem::error(ENOENT, fmt::format("librpmem.so.1 is not in {}: pass "
		                                       "--librpmem-dir with the directory of "
		                                       "rpmem's librpmem.so.1",
		                                       dir.string()));
	return dir;
}

/** Runs the worker on `poolset` with extra environment and `threads` threads; its one result
 * line parsed. */
worker_result run_worker(const options &o, const fs::path &poolset,
                         const std::vector<std::string> &extra_env, unsigned threads)
{
	std::vector<std::string> env;
	for (char **e = environ; *e; ++e) {
		std::string kv = *e;
		bool replaced = false;
		for (const auto &x : extra_env)
			if (kv.compare(0, x.find('=') + 1, x, 0, x.find('=') + 1) == 0)
				replaced = true;
		if (!replaced)
			env.push_back(kv);
	}
	env.insert(env.end(), extra_env.begin(), extra_env.end());
	std::vector<char *> envp;
	for (auto &s : env)
		envp.push_back(s.data());
	envp.push_back(nullptr);

	std::string exe = fs::read_symlink("/proc/self/exe").string();
	std::string ops = std::to_string(o.pmemobj_ops), nt = std::to_string(threads);
	std::string flag = pmemobj_worker_flag, set = poolset.string();
	std::vector<char *> argv{exe.data(), flag.data(), set.data(),
	                         ops.data(), nt.data(),   nullptr};

	int fds[2];
	if (pipe(fds) != 0)
		throw rpmem::error(errno, "pipe for the libpmemobj worker failed");
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	pid_t pid = -1;
	int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), envp.data());
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc != 0) {
		close(fds[0]);
		throw rpmem::error(rc,
		                   fmt::format("starting the libpmemobj worker {} failed", exe));
	}
	std::string text;
	char buf[512];
	ssize_t n;
	while ((n = read(fds[0], buf, sizeof(buf))) > 0)
		text.append(buf, static_cast<std::size_t>(n));
	close(fds[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	worker_result r;
	std::istringstream in(text);
	std::string ok;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
	    !(in >> ok >> r.ops >> r.seconds >> r.median_us >> r.p99_us >> r.close_ms) ||
	    ok != "ok")
		throw rpmem::error(EIO, fmt::format("the libpmemobj worker on {} failed (status "
		                                    "{}): {}; its error is above",
		                                    poolset.string(), status, text));
	return r;
}

} // namespace

namespace
{

/** `ops` transactions (after 10 unmeasured) on the objects [first, first + count) of the root
 * array; their latencies in t. False (with the reason on stderr) when one fails. */
bool run_transactions(PMEMobjpool *pop, unsigned ops, std::size_t first, std::size_t count,
                      std::vector<double> &t)
{
	PMEMoid root = pmemobj_root(pop, object_size * slots);
	auto *base = static_cast<std::uint8_t *>(pmemobj_direct(root));
	for (unsigned i = 0; i < ops + 10; ++i) {
		auto t0 = clock_type::now();
		std::size_t off = (first + i % count) * object_size;
		if (pmemobj_tx_begin(pop, nullptr, TX_PARAM_NONE) != 0 ||
		    pmemobj_tx_add_range(root, off, object_size) != 0) {
			std::fprintf(stderr, "rpmem-bench worker: transaction failed: %s\n",
			             pmemobj_errormsg());
			if (pmemobj_tx_stage() != TX_STAGE_NONE)
				pmemobj_tx_end();
			return false;
		}
		std::memset(base + off, static_cast<int>(i & 0xff), object_size);
		pmemobj_tx_commit();
		if (pmemobj_tx_end() != 0) {
			std::fprintf(stderr, "rpmem-bench worker: commit failed: %s\n",
			             pmemobj_errormsg());
			return false;
		}
		if (i >= 10)
			t.push_back(us_since(t0));
	}
	return true;
}

} // namespace

int pmemobj_worker(int argc, char **argv)
{
	if (argc < 5) {
		std::fprintf(stderr, "usage: %s %s POOLSET OPS THREADS\n", argv[0],
		             pmemobj_worker_flag);
		return 2;
	}
	const char *set = argv[2];
	unsigned ops = static_cast<unsigned>(std::strtoul(argv[3], nullptr, 10));
	unsigned nt = std::max(1u, static_cast<unsigned>(std::strtoul(argv[4], nullptr, 10)));
	PMEMobjpool *pop = pmemobj_create(set, "rpmem-bench", 0, 0600);
	if (!pop) {
		std::fprintf(stderr, "rpmem-bench worker: pmemobj_create(%s) failed: %s\n", set,
		             pmemobj_errormsg());
		return 1;
	}
	pmemobj_root(pop, object_size * slots);
	// Each thread its own objects, `ops` transactions in all.
	std::vector<std::vector<double>> times(nt);
	std::vector<char> ok(nt, 0);
	std::vector<std::thread> ts;
	auto start = clock_type::now();
	for (unsigned k = 0; k < nt; ++k)
		ts.emplace_back([&, k] {
			ok[k] =
			    run_transactions(pop, ops / nt, k * (slots / nt), slots / nt, times[k]);
		});
	for (auto &th : ts)
		th.join();
	auto closing = clock_type::now();
	pmemobj_close(pop);
	double close_ms = us_since(closing) / 1e3;
	double secs = us_since(start) / 1e6;
	std::vector<double> all;
	for (unsigned k = 0; k < nt; ++k) {
		if (!ok[k])
			return 1;
		all.insert(all.end(), times[k].begin(), times[k].end());
	}
	auto s = summarize(all);
	std::printf("ok %zu %.6f %.3f %.3f %.3f\n", all.size(), secs, s.median, s.p99, close_ms);
	return 0;
}

namespace
{

/** One pmemobj point: nt threads, local only and with a REPLICA line. */
template <class MakeSet, class ToRow>
void pmemobj_point(const options &o, const std::string &provider, unsigned nt, MakeSet &make_set,
                   ToRow &to_row, const std::vector<std::string> &env, std::vector<row> &out)
{
	auto local = run_worker(o, make_set("local", false), env, nt);
	row lr = to_row("local", nt, local);
	out.push_back(lr);
	if (o.pmemobj_remote_set.empty()) {
		row r = to_row("replica", nt, {});
		r.note = "skipped: no --pmemobj-remote-set";
		out.push_back(r);
		return;
	}
	client::pool_options po;
	auto s = client::process_settings();
	s.providers = provider;
	po.tuning = s;
	auto remove_remote = [&] {
		try {
			client::remote_pool::remove(o.target, o.pmemobj_remote_set,
			                            client::remove_force, po);
		} catch (const rpmem::error &) {
		}
	};
	remove_remote();
	worker_result rep;
	try {
		rep = run_worker(o, make_set("replica", true), env, nt);
	} catch (...) {
		remove_remote();
		throw;
	}
	remove_remote();
	row r = to_row("replica", nt, rep);
	r.floor = "pmemobj-tx local";
	r.floor_value = lr.ops_s;
	r.ratio = lr.ops_s > 0 ? r.ops_s / lr.ops_s : 0;
	out.push_back(r);
}

} // namespace

void pmemobj_scenario(const options &o, const std::string &provider, std::vector<row> &out)
{
	auto libdir = librpmem_dir(o);
	std::string templ = (fs::path(o.pmemobj_dir) / "rpmem-bench-obj.XXXXXX").string();
	if (!mkdtemp(templ.data()))
		throw rpmem::error(errno, fmt::format("cannot make a directory in {} for the "
		                                      "libpmemobj pool: pass --pmemobj-dir",
		                                      o.pmemobj_dir));
	fs::path dir = templ;
	struct cleanup {
		fs::path d;
		~cleanup()
		{
			std::error_code ec;
			fs::remove_all(d, ec);
		}
	} guard{dir};
	std::string ld = libdir.string();
	if (const char *old = std::getenv("LD_LIBRARY_PATH"); old && *old)
		ld += std::string(":") + old;
	std::vector<std::string> env{"LD_LIBRARY_PATH=" + ld, "PMEM_IS_PMEM_FORCE=1",
	                             "RPMEM_PROVIDER=" + provider};

	auto make_set = [&](const std::string &name, bool replica) {
		fs::path set = dir / (name + ".set");
		fs::remove(dir / (name + ".part")); // from the previous point
		std::ofstream f(set);
		f << "PMEMPOOLSET\n"
		  << o.pmemobj_size << " " << (dir / (name + ".part")).string() << "\n";
		if (replica)
			f << "REPLICA " << o.target << " " << o.pmemobj_remote_set << "\n";
		return set;
	};
	auto to_row = [&](const std::string &param, unsigned nt, const worker_result &w) {
		row r;
		r.provider = param == "local" ? "-" : provider;
		r.method = param == "local" ? "-" : "gpspm";
		r.scenario = "pmemobj-tx";
		r.param = nt > 1 ? fmt::format("{} {}T", param, nt) : param;
		r.threads = nt;
		r.median_us = w.median_us;
		r.p99_us = w.p99_us;
		r.ops_s = w.seconds > 0 ? w.ops / w.seconds : 0;
		r.note =
		    fmt::format("tx: add_range 256B + write; close {:.1f} ms counted", w.close_ms);
		if (param != "local" && client::process_settings().async)
			r.method += " async";
		return r;
	};
	std::vector<unsigned> threads = o.pmemobj_threads;
	if (threads.empty())
		threads = {1};
	for (unsigned nt : threads)
		pmemobj_point(o, provider, nt, make_set, to_row, env, out);
}

} // namespace rpmem::bench
