// SPDX-License-Identifier: BSD-3-Clause
// A writer for tests that need a real application on a replicated pool: stock libpmemobj
// through our librpmem.so.1 (tests/support/pmemobj_log.c, threads committing transactions and
// publishing what they committed), a pool set with one remote replica on the test's sshd and
// rpmemd, a metrics file (RPMEM_STATS_FILE), and the checks of a replica once the writer closed.
#pragma once

#include "libpmemobj_crash.hpp"
#include "process.hpp"
#include "replica_fixture.hpp"
#include "support/child.hpp"

#include <chrono>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

namespace rpmem::test
{

constexpr int threads = 4;

/** What pmemobj_log publishes (tests/support/pmemobj_log.c, struct history). */
struct history {
	std::uint64_t committed[16];
	std::uint64_t longest_ns[16];
	std::uint64_t threads;
};

/**
 * A stock libpmemobj pool set with one remote replica, written by pmemobj_log. `where`: the
 * sshd and replica, reached from this process or from a network namespace's client side. The
 * writer reports to `metrics_name` in dir() (*.json: JSON, else the Prometheus format).
 */
class log_setup
{
public:
	log_setup(sshd &server, replica &node, std::string client_prefix = {},
	          std::string metrics_name = "metrics.json")
	    : server_(server), node_(node), prefix_(std::move(client_prefix)),
	      local_(make_temp_dir("/dev/shm", "rpmem-outage-")),
	      metrics_file_(local_ / metrics_name)
	{
		node_.write_poolset("log.set", {"96M"});
		std::ofstream(local_ / "pool.set")
		    << fmt::format("PMEMPOOLSET\n64M {}\nREPLICA {} log.set\n",
		                   (local_ / "local.part").string(), server_.target().str());
	}
	~log_setup()
	{
		std::error_code ec;
		fs::remove_all(local_, ec);
	}

	/** The writer's environment: our librpmem, the replica through the test's sshd; `extra`
	 *  adds to it or overrides it. */
	std::vector<std::string> environment(const std::vector<std::string> &extra) const
	{
		auto o = server_.client_options();
		std::vector<std::string> env{sanitizer_env("ASAN_OPTIONS", ":detect_leaks=0"),
		                             "LD_LIBRARY_PATH=" RPMEM_BINARY_DIR "/lib",
		                             "PMEM_IS_PMEM_FORCE=1",
		                             "RPMEM_CMD=" + node_.command(),
		                             "RPMEM_SSH_CONFIG=" + o.config_file,
		                             "RPMEM_SSH_KNOWN_HOSTS=" + o.known_hosts_file,
		                             "RPMEM_SSH_IDENTITY=" + o.identity_files.at(0),
		                             "RPMEM_PROVIDER=tcp",
		                             "RPMEM_TIMEOUT=2000",
		                             "RPMEM_LOG_LEVEL=1",
		                             "RPMEM_STATS_FILE=" + metrics_file_.string()};
		// First: a variable given twice is read as its first value, so `extra` overrides.
		env.insert(env.begin(), extra.begin(), extra.end());
		return env;
	}

	/** Starts a writer on fresh pools and waits until its transactions run. */
	std::unique_ptr<child> start(const std::vector<std::string> &extra_env = {})
	{
		std::error_code ec;
		fs::remove(local_ / "local.part", ec);
		fs::remove(node_.part("log.set"), ec);
		fs::remove(local_ / "history", ec);
		fs::remove(local_ / "writer.err", ec);
		std::vector<std::string> argv;
		if (!prefix_.empty()) // inside the client's namespace
			argv = {"/usr/bin/ip", "netns", "exec", prefix_};
		for (const char *a : {RPMEM_BINARY_DIR "/bin/rpmem_pmemobj_log", "run"})
			argv.push_back(a);
		argv.push_back((local_ / "pool.set").string());
		argv.push_back((local_ / "history").string());
		argv.push_back(std::to_string(threads));
		auto w = std::make_unique<child>(argv, environment(extra_env),
		                                 (local_ / "writer.err").string());
		auto line = w->read_line(std::chrono::seconds(60));
		INFO("the writer printed " << line.value_or("nothing") << "; its stderr:\n"
		                           << errors());
		REQUIRE(line == std::string("ready"));
		return w;
	}

	std::string errors() const { return slurp(local_ / "writer.err"); }
	/** Waits until the writer's stderr says `text` (its log lines: a state change, a
	 *  failure), for `bound` at most; the caller checks what it says. */
	void wait_said(const std::string &text,
	               std::chrono::seconds bound = std::chrono::seconds(120)) const
	{
		const auto give_up = std::chrono::steady_clock::now() + bound;
		while (errors().find(text) == std::string::npos &&
		       std::chrono::steady_clock::now() < give_up)
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
	}
	std::string metrics() const { return slurp(metrics_file_); }
	const fs::path &metrics_file() const { return metrics_file_; }
	const fs::path &dir() const { return local_; }

	history state() const
	{
		history h{};
		std::ifstream f(local_ / "history", std::ios::binary);
		f.read(reinterpret_cast<char *>(&h), sizeof h);
		return h;
	}
	std::uint64_t total() const
	{
		auto h = state();
		std::uint64_t n = 0;
		for (int t = 0; t < threads; ++t)
			n += h.committed[t];
		return n;
	}
	double longest_ms() const
	{
		auto h = state();
		std::uint64_t m = 0;
		for (int t = 0; t < threads; ++t)
			m = std::max(m, h.longest_ns[t]);
		return double(m) / 1e6;
	}

	/** Waits until the writer committed `n` transactions in all; fails when it committed
	 *  none for `bound` (a stall, not slowness: the bound restarts at each one). */
	void wait_total(std::uint64_t n, child &w,
	                std::chrono::seconds bound = std::chrono::seconds(120))
	{
		auto give_up = std::chrono::steady_clock::now() + bound;
		for (auto seen = total(); seen < n && std::chrono::steady_clock::now() < give_up &&
		                          !w.wait(std::chrono::milliseconds(0));) {
			std::this_thread::sleep_for(std::chrono::milliseconds(2));
			if (const auto now = total(); now != seen) {
				seen = now;
				give_up = std::chrono::steady_clock::now() + bound;
			}
		}
		INFO("the writer's stderr:\n" << errors());
		REQUIRE(total() >= n);
	}

	/** Once a fault healed: waits until the writer's log says its replica is in sync again
	 *  (caught up), then for 2000 more transactions; checks that it said so. */
	void wait_caught_up(child &w)
	{
		wait_said("replica in_sync (caught up");
		wait_total(total() + 2000, w);
		INFO("the writer's stderr:\n" << errors());
		CHECK(errors().find("replica in_sync (caught up") != std::string::npos);
	}

	/** Stops the writer: it closes the pool and must exit 0, never having seen an error. */
	void finish(child &w)
	{
		w.close_stdin();
		auto closed = w.read_line(std::chrono::seconds(120));
		auto status = w.wait(std::chrono::seconds(120));
		INFO("the writer's stderr:\n" << errors());
		REQUIRE(status);
		CHECK(WIFEXITED(*status));
		CHECK(WEXITSTATUS(*status) == 0);
		CHECK(closed == std::string("closed"));
	}

	/** Once its rpmemd is gone: the replica promoted (without --force: a clean close leaves
	 *  it unmarked), opened by stock libpmemobj, every acknowledged record checked. */
	void check_replica()
	{
		for (int i = 0; i < 1000 && find_rpmemd(node_.dir().string()) > 0; ++i)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		const auto promoted = local_ / "promoted.set";
		auto p = run(fmt::format("{}/bin/rpmem promote {} --output {}", RPMEM_BINARY_DIR,
		                         (node_.dir() / "log.set").string(), promoted.string()));
		// The writer's log to its end: a failed close (libpmemobj's pmemobj_close cannot
		// say so) leaves the replica marked, and only the log tells.
		INFO("rpmem promote printed:\n"
		     << p.output << "\nthe writer's stderr to its end:\n"
		     << errors());
		REQUIRE(p.status == 0);
		auto c = run(fmt::format("{}/bin/rpmem_pmemobj_log check {} {}", RPMEM_BINARY_DIR,
		                         promoted.string(), (local_ / "history").string()),
		             sanitizer_env("ASAN_OPTIONS", ":detect_leaks=0"));
		INFO("pmemobj_log check printed:\n" << c.output);
		CHECK(c.status == 0);
		CHECK(c.output.rfind("ok ", 0) == 0);
	}

private:
	sshd &server_;
	replica &node_;
	std::string prefix_;
	fs::path local_;
	fs::path metrics_file_;
};

} // namespace rpmem::test
