// SPDX-License-Identifier: BSD-3-Clause
// A writer for tests that need a real application on a replicated pool: stock libpmemobj
// through our librpmem.so.1 (tests/support/pmemobj_log.c, threads committing transactions and
// publishing what they committed), a pool set with one remote replica on the test's sshd and
// rpmemd, a metrics file (RPMEM_STATS_FILE), and the checks of a replica once the writer closed.
#pragma once

#include "libpmemobj_crash.hpp"
#include "process.hpp"
#include "replica_fixture.hpp"
#include "replica_states.hpp"
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
		wait_said_after(0, text, bound);
	}
	/** wait_said, for `text` past the log's first `from` bytes. */
	void wait_said_after(std::size_t from, const std::string &text,
	                     std::chrono::seconds bound = std::chrono::seconds(120)) const
	{
		const auto give_up = std::chrono::steady_clock::now() + bound;
		while (errors().find(text, from) == std::string::npos &&
		       std::chrono::steady_clock::now() < give_up)
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
	}
	/** The replica's states as its log said them, then the whole log: what a failure's
	 *  messages start with. */
	std::string said() const
	{
		const auto log = errors();
		return "the replica's states: " + replica_states(log) + "\nthe writer's stderr:\n" +
		       log;
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
		INFO(said());
		REQUIRE(total() >= n);
	}

	/** Once a fault healed: waits until the writer's log says its replica is in sync again
	 *  (caught up), then for 2000 more transactions; checks that it said so. */
	void wait_caught_up(child &w)
	{
		wait_said("replica in_sync (caught up");
		wait_total(total() + 2000, w);
		INFO(said());
		CHECK(errors().find("replica in_sync (caught up") != std::string::npos);
	}

	/** Stops the writer: it closes the pool and must exit 0, never having seen an error. */
	void finish(child &w)
	{
		w.close_stdin();
		auto closed = w.read_line(std::chrono::seconds(120));
		auto status = w.wait(std::chrono::seconds(120));
		INFO(said());
		REQUIRE(status);
		CHECK(WIFEXITED(*status));
		CHECK(WEXITSTATUS(*status) == 0);
		CHECK(closed == std::string("closed"));
	}

	/** A shell command run as the writer is: in its namespace, with its environment. */
	std::string as_writer(const std::string &command) const
	{
		std::string out =
		    prefix_.empty() ? "env" : "/usr/bin/ip netns exec " + prefix_ + " env";
		for (const auto &v : environment({}))
			out += " '" + v + "'";
		return out + " " + command;
	}

	/** Once its rpmemd is gone: the replica promoted (without --force: a clean close leaves
	 *  it unmarked), opened by stock libpmemobj, every acknowledged record checked.
	 *
	 *  A replica the log says was not in sync at the close (dropped again after its
	 *  catch-up, and not back within RPMEM_RECONNECT_TIMEOUT: a sanitizer's load on two
	 *  cores once made one batch take longer than RPMEM_TIMEOUT) is held to librpmem(7)'s
	 *  promise for that case instead: the close leaves it marked, promote refuses it, and
	 *  rpmem sync brings it back with every record. */
	void check_replica()
	{
		for (int i = 0; i < 1000 && find_rpmemd(node_.dir().string()) > 0; ++i)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		const auto promoted = local_ / "promoted.set";
		const auto promote = [&] {
			return run(fmt::format("{}/bin/rpmem promote {} --output {}",
			                       RPMEM_BINARY_DIR, (node_.dir() / "log.set").string(),
			                       promoted.string()));
		};
		auto p = promote();
		const auto log = errors();
		if (const auto last = last_replica_state(log); !last.empty() && last != "in_sync") {
			WARN("the replica was not in sync at the close, checked as marked and "
			     "brought back by rpmem sync: "
			     << replica_states(log));
			INFO("rpmem promote printed:\n" << p.output << "\n" << said());
			CHECK(p.status != 0);
			CHECK(p.output.find("may be behind its master") != std::string::npos);
			CHECK(log.find("closed with the replica") != std::string::npos);
			auto synced =
			    run(as_writer(fmt::format("{}/bin/rpmem sync {}", RPMEM_BINARY_DIR,
			                              (local_ / "pool.set").string())));
			INFO("rpmem sync printed:\n" << synced.output);
			REQUIRE(synced.status == 0);
			p = promote();
		}
		// The writer's log to its end: a failed close (libpmemobj's pmemobj_close cannot
		// say so) leaves the replica marked, and only the log tells.
		INFO("rpmem promote printed:\n" << p.output << "\n" << said());
		REQUIRE(p.status == 0);
		check_records(promoted);
	}

	/** Once its rpmemd is gone and rpmem sync brought a marked replica back (a killed
	 *  writer's): promoted, every acknowledged record checked. */
	void check_synced_replica()
	{
		for (int i = 0; i < 1000 && find_rpmemd(node_.dir().string()) > 0; ++i)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		const auto promoted = local_ / "promoted.set";
		auto p = run(fmt::format("{}/bin/rpmem promote {} --output {}", RPMEM_BINARY_DIR,
		                         (node_.dir() / "log.set").string(), promoted.string()));
		INFO("rpmem promote printed:\n" << p.output);
		REQUIRE(p.status == 0);
		check_records(promoted);
	}

private:
	void check_records(const fs::path &promoted)
	{
		auto c = run(fmt::format("{}/bin/rpmem_pmemobj_log check {} {}", RPMEM_BINARY_DIR,
		                         promoted.string(), (local_ / "history").string()),
		             sanitizer_env("ASAN_OPTIONS", ":detect_leaks=0"));
		INFO("pmemobj_log check printed:\n" << c.output);
		CHECK(c.status == 0);
		CHECK(c.output.rfind("ok ", 0) == 0);
	}

	sshd &server_;
	replica &node_;
	std::string prefix_;
	fs::path local_;
	fs::path metrics_file_;
};

} // namespace rpmem::test
