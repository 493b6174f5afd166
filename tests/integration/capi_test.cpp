// SPDX-License-Identifier: BSD-3-Clause
// The C ABI's errno and messages for each failure PMDK's reference lists, through the real
// librpmem.so.1, sshd and rpmemd. Settings come from the environment, as for any C program.
#include "capi_fixture.hpp"
#include "process.hpp"
#include "replica_fixture.hpp"
#include "support/child.hpp"
#include "support/proc_state.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

using namespace rpmem::test;

namespace
{

constexpr std::size_t pool_size = 8 << 20;

capi_environment &env()
{
	static capi_environment e;
	return e;
}

/** Expects a failure with `err` and a message containing `text`. */
void expect_failure(int ret_or_null, int err, const std::string &text)
{
	int saved = errno;
	INFO("rpmem_errormsg: " << rpmem_errormsg());
	CHECK(ret_or_null != 0);
	CHECK(saved == err);
	CHECK(std::string(rpmem_errormsg()).find(text) != std::string::npos);
}

/** What a C program of the tests printed (its stdout lines, and the text with its stderr for
 * INFO) and how it ended (nullopt: still running after 60 s). */
struct program_run {
	std::vector<std::string> said;
	std::string report;
	std::optional<int> status;
};

/** Runs argv to its end with `env` added to the environment, its stderr in a file under
 * `dir`. */
program_run run_program(const std::vector<std::string> &argv, const fs::path &dir,
                        const std::vector<std::string> &env = {})
{
	child app(argv, env, (dir / "stderr").string());
	program_run r;
	while (auto line = app.read_line(std::chrono::seconds(60)))
		r.said.push_back(*line);
	r.status = app.wait(std::chrono::seconds(60));
	std::string out;
	for (const auto &l : r.said)
		out += l + "\n";
	r.report = "the program printed:\n" + out + "\nits stderr:\n" + slurp(dir / "stderr");
	return r;
}

/** What rpmem_exit_open's hold mode (or hold-close) did when its rpmemd was killed while it
 *  held pool `descriptor` (an 8 MiB NOHDRS pool set on env's node): the persist line it
 *  printed after the kill (empty for hold-close), its close line, its stderr, and its metrics
 *  file (RPMEM_STATS_FILE) parsed. */
struct held_through_kill {
	std::string persisted, closed, errors, metrics, samples;
	// hold-fail: the metrics file parsed as each thread's failed persist left it
	std::string at_failure[2];
	std::string after_loss; // hold-go-on: the file parsed after 2 s of persists
};

held_through_kill hold_through_rpmemd_kill(capi_environment &env, const std::string &descriptor,
                                           const std::vector<std::string> &vars,
                                           const std::string &mode = "hold")
{
	env.node.write_poolset(descriptor, {"8M"}, "NOHDRS");
	const auto dir = make_temp_dir("/tmp", "rpmem-metrics-");
	const std::string file = (dir / "metrics.prom").string();
	const std::string errors = (dir / "stderr").string();
	auto all = vars;
	all.push_back("RPMEM_STATS_FILE=" + file);
	child app({std::string(RPMEM_BINARY_DIR) + "/bin/rpmem_exit_open", env.target(), descriptor,
	           mode},
	          all, errors);
	auto ready = app.read_line(std::chrono::seconds(60));
	INFO("the program's stderr:\n" << slurp(errors));
	REQUIRE(ready == "ready");
	// The pool set goes with its rpmemd: no new session opens the pool, so the replica
	// stays away whatever the reconnect policy.
	const auto set = env.node.dir() / descriptor;
	fs::rename(set, fs::path(set) += ".away");
	REQUIRE(run_kill_rpmemd(env.node.dir().string()));
	require_rpmemd_gone(env.node);
	app.close_stdin();
	std::optional<std::string> persisted;
	const bool persists = mode == "hold" || mode == "hold-fail" || mode == "hold-go-on";
	if (persists)
		persisted = app.read_line(std::chrono::seconds(90));
	auto closed = app.read_line(std::chrono::seconds(60));
	REQUIRE(app.wait(std::chrono::seconds(60)));
	if (persists)
		REQUIRE(persisted);
	REQUIRE(closed);
	// The file written when the pool closed.
	auto samples = metrics_samples(file);
	held_through_kill r{
	    persisted.value_or(""), *closed, slurp(errors), slurp(file), samples.output, {}, {}};
	if (mode == "hold-go-on") {
		auto at = metrics_samples(file + ".after-loss");
		INFO("the metrics file after the loss:\n" << slurp(file + ".after-loss"));
		REQUIRE(at.status == 0);
		r.after_loss = at.output;
	}
	for (int lane = 0; mode == "hold-fail" && lane < 2; ++lane) {
		const auto copy = fmt::format("{}.at-failure.{}", file, lane);
		auto at = metrics_samples(copy);
		INFO("the metrics file when the persist on lane " << lane << " failed:\n"
		                                                  << slurp(copy));
		REQUIRE(at.status == 0);
		r.at_failure[lane] = at.output;
	}
	INFO("the metrics file:\n" << r.metrics << "\nparsed:\n" << r.samples);
	REQUIRE(samples.status == 0);
	std::error_code ec;
	fs::remove_all(dir, ec);
	return r;
}

} // namespace

TEST_CASE("capi: bad arguments are EINVAL", "[capi]")
{
	auto &e = env();
	e.node.write_poolset("args.set", {"8M"});
	local_pool local(pool_size);
	auto attr = c_attr();
	unsigned nlanes = 1;
	errno = 0;
	CHECK(rpmem_create(e.target().c_str(), "args.set", local.data(), pool_size, nullptr,
	                   &attr) == nullptr);
	CHECK(errno == EINVAL); // NULL nlanes: PMDK crashed here
	unsigned zero = 0;
	CHECK(rpmem_create(e.target().c_str(), "args.set", local.data(), pool_size, &zero, &attr) ==
	      nullptr);
	CHECK(errno == EINVAL);
	CHECK(rpmem_create(e.target().c_str(), "args.set", local.data() + 8, pool_size, &nlanes,
	                   &attr) == nullptr);
	CHECK(errno == EINVAL);
	CHECK(rpmem_create(e.target().c_str(), "args.set", local.data(), 100, &nlanes, &attr) ==
	      nullptr);
	CHECK(errno == EINVAL);
	CHECK(rpmem_create(nullptr, "args.set", local.data(), pool_size, &nlanes, &attr) ==
	      nullptr);
	CHECK(errno == EINVAL);
	CHECK(rpmem_remove(e.target().c_str(), "args.set", 0x10) != 0);
	CHECK(errno == EINVAL);
	CHECK(rpmem_close(nullptr) != 0);
	CHECK(errno == EINVAL);

	RPMEMpool *rpp =
	    rpmem_create(e.target().c_str(), "args.set", local.data(), pool_size, &nlanes, &attr);
	REQUIRE(rpp);
	expect_failure(rpmem_persist(rpp, 0, 64, 0, 0), EINVAL, "header");
	expect_failure(rpmem_persist(rpp, 4096, 64, nlanes, 0), EINVAL, "lane");
	expect_failure(rpmem_flush(rpp, 4096, 64, 0, 0x4), EINVAL, "flags");
	expect_failure(rpmem_drain(rpp, 0, 1), EINVAL, "flags");
	expect_failure(rpmem_read(rpp, local.data(), pool_size - 10, 64, 0), EINVAL, "outside");
	// One bad argument does not poison the handle.
	std::memset(local.data() + 4096, 0x42, 64);
	CHECK(rpmem_persist(rpp, 4096, 64, 0, 0) == 0);
	CHECK(rpmem_flush(rpp, 4096, 64, 0, RPMEM_FLUSH_RELAXED) == 0);
	CHECK(rpmem_drain(rpp, 0, 0) == 0);
	CHECK(rpmem_deep_persist(rpp, 4096, 64, 0) == 0);
	char back[64];
	CHECK(rpmem_read(rpp, back, 4096, 64, 0) == 0);
	CHECK(back[10] == 0x42);
	CHECK(rpmem_close(rpp) == 0);
	CHECK(rpmem_remove(e.target().c_str(), "args.set", RPMEM_REMOVE_FORCE) == 0);
}

TEST_CASE("capi: unknown, existing and busy pools, bad descriptor, unreachable host", "[capi]")
{
	auto &e = env();
	e.node.write_poolset("p.set", {"8M"});
	local_pool local(pool_size);
	auto attr = c_attr();
	unsigned nlanes = 2;

	expect_failure(rpmem_open(e.target().c_str(), "nothere.set", local.data(), pool_size,
	                          &nlanes, nullptr) != nullptr
	                   ? 0
	                   : 1,
	               ENOENT, "nothere.set");
	expect_failure(rpmem_create(e.target().c_str(), "../escape.set", local.data(), pool_size,
	                            &nlanes, &attr) != nullptr
	                   ? 0
	                   : 1,
	               EINVAL, "escape.set");

	RPMEMpool *rpp =
	    rpmem_create(e.target().c_str(), "p.set", local.data(), pool_size, &nlanes, &attr);
	REQUIRE(rpp);
	local_pool other(pool_size);
	unsigned n2 = 1;
	expect_failure(rpmem_open(e.target().c_str(), "p.set", other.data(), pool_size, &n2,
	                          nullptr) != nullptr
	                   ? 0
	                   : 1,
	               EBUSY, "in use");
	CHECK(rpmem_close(rpp) == 0);
	expect_failure(rpmem_create(e.target().c_str(), "p.set", local.data(), pool_size, &nlanes,
	                            &attr) != nullptr
	                   ? 0
	                   : 1,
	               EEXIST, "p.set");

	rpmem_pool_attr got{};
	rpp = rpmem_open(e.target().c_str(), "p.set", local.data(), pool_size, &nlanes, &got);
	REQUIRE(rpp);
	CHECK(std::memcmp(got.signature, "PMEMOBJ", 7) == 0);
	CHECK(got.uuid[0] == 1);
	auto changed = got;
	changed.major = 7;
	CHECK(rpmem_set_attr(rpp, &changed) == 0);
	CHECK(rpmem_close(rpp) == 0);
	rpp = rpmem_open(e.target().c_str(), "p.set", local.data(), pool_size, &nlanes, &got);
	REQUIRE(rpp);
	CHECK(got.major == 7);
	CHECK(rpmem_close(rpp) == 0);

	// Nothing listens on port 1 of 127.0.0.1: refused at once, not a hang.
	expect_failure(rpmem_create("root@127.0.0.1:1", "p.set", local.data(), pool_size, &nlanes,
	                            &attr) != nullptr
	                   ? 0
	                   : 1,
	               ECONNREFUSED, "127.0.0.1");
	CHECK(rpmem_remove(e.target().c_str(), "p.set", RPMEM_REMOVE_POOL_SET) == 0);
}

TEST_CASE("capi: under RPMEM_ON_OUTAGE=fail and no reconnect time, a dead rpmemd is ECONNRESET "
          "on the next call, not a hang",
          "[capi][fault]")
{
	// PMDK's behaviour, asked for (settings are read once, at the first pool: ctest runs
	// each test case in a process of its own).
	::setenv("RPMEM_ON_OUTAGE", "fail", 1);
	::setenv("RPMEM_RECONNECT_TIMEOUT", "0", 1);
	auto &e = env();
	e.node.write_poolset("dead.set", {"8M"});
	local_pool local(pool_size);
	auto attr = c_attr();
	unsigned nlanes = 2;
	RPMEMpool *rpp =
	    rpmem_create(e.target().c_str(), "dead.set", local.data(), pool_size, &nlanes, &attr);
	REQUIRE(rpp);
	CHECK(rpmem_persist(rpp, 4096, 4096, 0, 0) == 0);
	auto killed = run_kill_rpmemd(e.node.dir().string());
	REQUIRE(killed);
	auto start = std::chrono::steady_clock::now();
	int ret = rpmem_persist(rpp, 4096, 4096, 0, 0);
	int err = errno;
	auto took = std::chrono::steady_clock::now() - start;
	INFO(rpmem_errormsg());
	CHECK(ret != 0);
	CHECK((err == ECONNRESET || err == ETIMEDOUT));
	CHECK(took < std::chrono::seconds(5));
	// And every later call too; close still frees the handle.
	CHECK(rpmem_persist(rpp, 4096, 64, 1, 0) != 0);
	rpmem_close(rpp);
}

TEST_CASE("capi: a dead rpmemd is replaced by the next call, which succeeds, and a clean close "
          "leaves the replica unmarked",
          "[capi][fault][outage]")
{
	auto &e = env();
	e.node.write_poolset("back.set", {"8M"});
	local_pool local(pool_size);
	auto attr = c_attr();
	unsigned nlanes = 2;
	RPMEMpool *rpp =
	    rpmem_create(e.target().c_str(), "back.set", local.data(), pool_size, &nlanes, &attr);
	REQUIRE(rpp);
	std::memset(local.data() + 4096, 0x5a, 8192);
	CHECK(rpmem_persist(rpp, 4096, 4096, 0, 0) == 0);
	REQUIRE(run_kill_rpmemd(e.node.dir().string()));
	require_rpmemd_gone(e.node);
	// The new session takes every persist from here on, and the next lane's too.
	INFO(rpmem_errormsg());
	CHECK(rpmem_persist(rpp, 8192, 4096, 0, 0) == 0);
	CHECK(rpmem_persist(rpp, 4096, 64, 1, 0) == 0);
	std::vector<char> back(8192);
	CHECK(rpmem_read(rpp, back.data(), 4096, back.size(), 0) == 0);
	CHECK(std::memcmp(back.data(), local.data() + 4096, back.size()) == 0);
	CHECK(rpmem_close(rpp) == 0);
	// A clean close: the replica is not left marked possibly behind.
	rpmem_pool_attr got{};
	rpp = rpmem_open(e.target().c_str(), "back.set", local.data(), pool_size, &nlanes, &got);
	REQUIRE(rpp);
	CHECK((got.compat_features & 0x40000000u) == 0);
	CHECK(rpmem_close(rpp) == 0);
	CHECK(rpmem_remove(e.target().c_str(), "back.set", RPMEM_REMOVE_FORCE) == 0);
}

TEST_CASE(
    "capi: RPMEM_STATS_FILE reports a pool whose rpmemd died as failed (RPMEM_ON_OUTAGE=fail), "
    "with its errors and the calls of every session",
    "[capi][metrics]")
{
	capi_environment env; // announces the replica through this process's environment
	auto r = hold_through_rpmemd_kill(env, "failing.set",
	                                  {"RPMEM_ON_OUTAGE=fail", "RPMEM_RECONNECT_TIMEOUT=0"});
	INFO("the program's stderr:\n"
	     << r.errors << "\nthe metrics file:\n"
	     << r.metrics << "\nparsed:\n"
	     << r.samples);
	CHECK(r.persisted != "persist 0"); // rpmemd is gone: the persist fails
	// The file written when the pool closed: failed, not connected or closed, with the error
	// counted and the persist before the kill as the last one that succeeded.
	const auto &out = r.samples;
	CHECK(sample_value(out, "rpmem_pool_info", "state=\"failed\"") == 1);
	CHECK(sample_value(out, "rpmem_pool_up", "failing.set") == 0);
	CHECK(sample_value(out, "rpmem_errors_total", "failing.set") >= 1);
	CHECK(sample_value(out, "rpmem_operations_total", "op=\"persist\"") >= 1);
	CHECK(sample_value(out, "rpmem_last_persist_timestamp_seconds", "failing.set") > 1.7e9);
}

TEST_CASE("capi: under RPMEM_REPLICATION=async and RPMEM_ASYNC_ON_FAILURE=continue, a lost "
          "replica's failed close shows in the log and the metrics file",
          "[capi][metrics][async]")
{
	// librpmem(7): an application that cannot see close fail (libpmemobj's pmemobj_close
	// returns nothing) finds it in the log's error line and the metrics file's state,
	// whether a persist after the loss met it first (hold) or only close did (hold-close).
	const std::string mode = GENERATE(as<std::string>{}, "hold", "hold-close");
	INFO("mode " << mode);
	capi_environment env;
	auto r =
	    hold_through_rpmemd_kill(env, "lost.set",
	                             {"RPMEM_REPLICATION=async", "RPMEM_ASYNC_ON_FAILURE=continue",
	                              "RPMEM_LOG_LEVEL=1", "RPMEM_RECONNECT_TIMEOUT=0"},
	                             mode);
	INFO("the program's stderr:\n"
	     << r.errors << "\nthe metrics file:\n"
	     << r.metrics << "\nparsed:\n"
	     << r.samples);
	if (mode == "hold")
		CHECK(r.persisted == "persist 0"); // the application goes on without its replica
	CHECK(r.closed != "close 0");              // seen by this program, not by libpmemobj
	// librpmem logs every failed call at level 1 (RPMEM_LOG_LEVEL=1: stderr), the close too.
	// The close found the replica lost (a persist, or the keep-alive, met the loss first) or
	// met it itself.
	CHECK((r.errors.find("[error] " + env.target() +
	                     ":lost.set: closed with the replica lost") != std::string::npos ||
	       r.errors.find("[error] 127.0.0.1: closing the pool failed") != std::string::npos));
	CHECK(sample_value(r.samples, "rpmem_pool_info", "state=\"failed\"") == 1);
	CHECK(sample_value(r.samples, "rpmem_pool_up", "lost.set") == 0);
	CHECK(sample_value(r.samples, "rpmem_errors_total", "lost.set") >= 1);
}

TEST_CASE("capi: a persist that fails for the lost replica returns with the metrics file "
          "saying so, on every thread that meets the failure",
          "[capi][metrics]")
{
	// The application may end as soon as a call fails (libpmemobj does), and the first
	// thread to meet the failure writes the file: one that meets it meanwhile must not
	// return before the file says so (CI: a writer of four threads died with the file
	// half-written and the state "connected"). Rewritten once a minute otherwise here.
	const std::string mode = GENERATE(as<std::string>{}, "sync", "async");
	INFO("replication " << mode);
	capi_environment env;
	std::vector<std::string> vars{"RPMEM_LOG_LEVEL=1", "RPMEM_STATS_INTERVAL=60000",
	                              "RPMEM_ON_OUTAGE=fail", "RPMEM_RECONNECT_TIMEOUT=0"};
	if (mode == "async")
		vars.insert(vars.end(), {"RPMEM_REPLICATION=async", "RPMEM_ASYNC_ON_FAILURE=fail"});
	auto r = hold_through_rpmemd_kill(env, "failing-" + mode + ".set", vars, "hold-fail");
	INFO("the program's stderr:\n" << r.errors);
	REQUIRE(r.persisted.rfind("persist ", 0) == 0);
	CHECK(r.persisted.find(" 0") == std::string::npos); // both threads met the failure
	for (int lane = 0; lane < 2; ++lane) {
		INFO("the metrics file when the persist on lane " << lane << " failed:\n"
		                                                  << r.at_failure[lane]);
		CHECK(sample_value(r.at_failure[lane], "rpmem_pool_info", "state=\"failed\"") == 1);
		CHECK(sample_value(r.at_failure[lane], "rpmem_pool_up",
		                   "failing-" + mode + ".set") == 0);
	}
}

TEST_CASE("capi: under RPMEM_REPLICATION=async and RPMEM_ASYNC_ON_FAILURE=continue, the metrics "
          "file says the replica is lost while the application goes on",
          "[capi][metrics][async]")
{
	// No call fails, and the file is rewritten once a minute otherwise here: the first call
	// that sees the loss writes it, with the state "lost" (it said "connected" until close).
	capi_environment env;
	auto r = hold_through_rpmemd_kill(
	    env, "going-on.set",
	    {"RPMEM_REPLICATION=async", "RPMEM_ASYNC_ON_FAILURE=continue", "RPMEM_LOG_LEVEL=1",
	     "RPMEM_STATS_INTERVAL=60000", "RPMEM_RECONNECT_TIMEOUT=0"},
	    "hold-go-on");
	INFO("the program's stderr:\n"
	     << r.errors << "\nthe metrics file after the loss:\n"
	     << r.after_loss);
	CHECK(r.persisted == "persist 0"); // it goes on without its replica
	CHECK(r.errors.find("replica lost (no session for") != std::string::npos);
	CHECK(r.errors.find("going on without it (RPMEM_ASYNC_ON_FAILURE=continue)") !=
	      std::string::npos);
	CHECK(sample_value(r.after_loss, "rpmem_pool_info", "state=\"lost\"") == 1);
	CHECK(sample_value(r.after_loss, "rpmem_pool_up", "going-on.set") == 0);
	// Closed with the replica behind: failed, as before.
	CHECK(r.closed != "close 0");
	CHECK(sample_value(r.samples, "rpmem_pool_info", "state=\"failed\"") == 1);
}

TEST_CASE("capi: a close during a catch-up waits for it, and leaves the replica equal and "
          "unmarked",
          "[capi][fault][outage]")
{
	// Read at this process's first pool (ctest runs each test case in a process of its own):
	// a short reconnect timeout, so that the replica is lost and caught up later, and the
	// metrics file, which says when the catch-up begins.
	const auto dir = make_temp_dir("/tmp", "rpmem-closing-");
	const auto metrics = dir / "metrics.json";
	capi_environment env(
	    {{"RPMEM_RECONNECT_TIMEOUT", "1000"}, {"RPMEM_STATS_FILE", metrics.string()}});
	constexpr std::size_t big = 256 << 20;
	env.node.write_poolset("closing.set", {"256M"});
	local_pool local(big);
	auto attr = c_attr();
	unsigned nlanes = 1;
	RPMEMpool *rpp =
	    rpmem_create(env.target().c_str(), "closing.set", local.data(), big, &nlanes, &attr);
	INFO(rpmem_errormsg());
	REQUIRE(rpp);
	// Away past the reconnect timeout: rpmemd killed, logins refused. The first persist
	// waits for the timeout, then the replica is lost and every block of the pool changes
	// while it is: a catch-up of 256 MiB when it is back.
	const auto keys = env.server.dir() / "authorized_keys";
	const auto off_keys = env.server.dir() / "authorized_keys.off";
	fs::rename(keys, off_keys);
	REQUIRE(run_kill_rpmemd(env.node.dir().string()));
	require_rpmemd_gone(env.node);
	std::mt19937 rng(std::random_device{}());
	for (std::size_t off = 4096; off < big; off += 1 << 20) {
		const std::size_t n = std::min<std::size_t>(1 << 20, big - off);
		std::memset(local.data() + off, static_cast<int>(rng() | 1), n);
		REQUIRE(rpmem_persist(rpp, off, n, 0, 0) == 0);
	}
	fs::rename(off_keys, keys);
	// The metrics file is rewritten at each change of state: the close comes once it says
	// the catch-up began.
	const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
	while (slurp(metrics).find("\"state\":\"catching_up\"") == std::string::npos &&
	       std::chrono::steady_clock::now() < give_up)
		std::this_thread::yield();
	INFO("the metrics file:\n" << slurp(metrics));
	REQUIRE(slurp(metrics).find("\"state\":\"catching_up\"") != std::string::npos);
	// The close waits for it (up to RPMEM_RECONNECT_TIMEOUT) instead of abandoning it.
	REQUIRE(rpmem_close(rpp) == 0);
	const auto part = env.node.part("closing.set");
	std::ifstream f(part, std::ios::binary);
	std::vector<char> got(big);
	f.read(got.data(), static_cast<std::streamsize>(big));
	REQUIRE(f);
	std::uint32_t compat = 0;
	std::memcpy(&compat, got.data() + 12, sizeof compat);
	CHECK((compat & 0x40000000u) == 0); // not "possibly behind"
	CHECK(std::memcmp(got.data() + 4096, local.data() + 4096, big - 4096) == 0);
	CHECK(rpmem_remove(env.target().c_str(), "closing.set", RPMEM_REMOVE_FORCE) == 0);
	std::error_code ec;
	fs::remove_all(dir, ec);
}

TEST_CASE("an application that exits with its pool open while rpmemd is frozen still exits",
          "[capi][exit][fault]")
{
	// rpmemd stopped (SIGSTOP): it answers nothing and closes nothing. A keep-alive ping is
	// then stuck waiting for its answer when the program returns from main; the exit guard
	// waits for it at most a few seconds, so the program ends instead of hanging.
	capi_environment env;
	env.node.write_poolset("frozen.set", {"8M"}, "NOHDRS");
	const auto dir = make_temp_dir("/tmp", "rpmem-frozen-");
	// The program leaves its pool open on purpose: what it holds is not freed (no leak
	// check), and the keep-alive thread, ended by its failed ping, is never joined (no
	// thread-leak report).
	std::vector<std::string> vars{"RPMEM_KEEPALIVE=1"};
	if (const char *a = std::getenv("ASAN_OPTIONS"))
		vars.push_back(fmt::format("ASAN_OPTIONS={}:detect_leaks=0", a));
	if (const char *t = std::getenv("TSAN_OPTIONS"))
		vars.push_back(fmt::format("TSAN_OPTIONS={}:report_thread_leaks=0", t));
	child app({std::string(RPMEM_BINARY_DIR) + "/bin/rpmem_exit_open", env.target(),
	           "frozen.set", "hold-exit"},
	          vars, (dir / "stderr").string());
	REQUIRE(app.read_line(std::chrono::seconds(60)) == "ready");
	const pid_t daemon = find_rpmemd(env.node.dir().string());
	REQUIRE(daemon > 0);
	REQUIRE(freeze(daemon));
	std::this_thread::sleep_for(std::chrono::milliseconds(20)); // a ping is now stuck
	app.close_stdin();
	auto said = app.read_line(std::chrono::seconds(60));
	auto status = app.wait(std::chrono::seconds(60)); // a bound on a hang, not a timing
	::kill(daemon, SIGKILL);
	::kill(daemon, SIGCONT);
	INFO("the program's stderr:\n" << slurp(dir / "stderr"));
	REQUIRE(status);
	CHECK(said == "exiting with the pool open");
	CHECK(WIFEXITED(*status));
	CHECK(WEXITSTATUS(*status) == 0);
	require_rpmemd_gone(env.node);
	std::error_code ec;
	fs::remove_all(dir, ec);
}

TEST_CASE("loading libfabric leaves the application's signal handlers as they were: its SIGTERM "
          "handler runs, abort() kills by SIGABRT",
          "[capi][signals]")
{
	// Debian's libfabric1 pulls in libinfinipath, whose constructor makes SIGSEGV, SIGBUS,
	// SIGILL, SIGABRT, SIGINT and SIGTERM call exit(1) (lib/fabric/library.cpp). The program
	// sets its handlers before its first pool, as an application opening a REPLICA pool set
	// through libpmemobj does before libpmemobj loads librpmem.
	capi_environment env;
	env.node.write_poolset("signals.set", {"8M"}, "NOHDRS");
	const auto dir = make_temp_dir("/tmp", "rpmem-signals-");
	auto [said, report, status] =
	    run_program({std::string(RPMEM_BINARY_DIR) + "/bin/rpmem_exit_open", env.target(),
	                 "signals.set", "signals"},
	                dir);
	INFO(report);
	REQUIRE(status);
	for (const char *sig :
	     {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGINT", "SIGTERM"})
		CHECK(std::count(said.begin(), said.end(), fmt::format("{} kept", sig)) == 1);
	CHECK(std::count(said.begin(), said.end(), "SIGTERM handled") == 1);
	CHECK(WIFSIGNALED(*status));
	CHECK((WIFSIGNALED(*status) && WTERMSIG(*status) == SIGABRT));
	// Where libfabric brings libinfinipath (Debian's libfabric1 does), the test met it.
	if (fs::exists("/usr/lib/x86_64-linux-gnu/libinfinipath.so.4") ||
	    fs::exists("/lib/x86_64-linux-gnu/libinfinipath.so.4"))
		CHECK(std::count(said.begin(), said.end(), "libinfinipath loaded") == 1);
	require_rpmemd_gone(env.node);
	std::error_code ec;
	fs::remove_all(dir, ec);
}

TEST_CASE("loading libfabric undoes only the handlers the load installed, not those the "
          "application installed meanwhile",
          "[capi][signals]")
{
	// A stand-in libfabric.so.1 (tests/support/fake_libfabric.c) installs, in its constructor,
	// a SIGSEGV handler of its own (as libinfinipath), and what another thread of the
	// application could install during rpmem's ~200 ms load: a SIGTERM handler of the
	// program's, and SIGINT ignored.
	const auto dir = make_temp_dir("/tmp", "rpmem-handlers-");
	auto [said, report, status] =
	    run_program({std::string(RPMEM_BINARY_DIR) + "/bin/rpmem_handlers_kept", "127.0.0.1:1"},
	                dir, {"LD_LIBRARY_PATH=" RPMEM_BINARY_DIR "/fake-libfabric"});
	INFO(report);
	REQUIRE(status);
	CHECK(said == std::vector<std::string>{"SIGSEGV default", "SIGTERM app", "SIGINT ignored"});
	CHECK((WIFEXITED(*status) && WEXITSTATUS(*status) == 0));
	fs::remove_all(dir);
}

TEST_CASE("librpmem dlclosed right after a failed create stays loaded while its thread runs",
          "[capi][dlclose]")
{
	// libpmemobj dlcloses librpmem after every pool set (PMDK's util_remote_unload), also
	// right after a create that failed at once. That create started loading libfabric on a
	// thread of librpmem's, which, with its exit and fork handlers, must not be unmapped
	// under it: librpmem is linked -z nodelete.
	const auto dir = make_temp_dir("/tmp", "rpmem-dlclose-");
	auto [said, report, status] =
	    run_program({std::string(RPMEM_BINARY_DIR) + "/bin/rpmem_dlclose",
	                 std::string(RPMEM_BINARY_DIR) + "/lib/librpmem.so.1", "127.0.0.1:1"},
	                dir);
	INFO(report);
	REQUIRE(status);
	// A thread_local destructor registered in librpmem also keeps it (glibc), but only once
	// some call made one: the flag is what holds whatever the calls were.
	CHECK(said == std::vector<std::string>{"nodelete", "create failed", "still loaded"});
	CHECK(WIFEXITED(*status));
	CHECK((WIFEXITED(*status) && WEXITSTATUS(*status) == 0));
	fs::remove_all(dir);
}

TEST_CASE("capi: failed open, create and remove begin with PMDK's text", "[capi][pmdk]")
{
	auto &e = env();
	e.node.write_poolset("text.set", {"8M"});
	local_pool local(pool_size), other(pool_size);
	auto attr = c_attr();
	unsigned nlanes = 1;
	auto starts = [](const std::string &pmdk_text) {
		std::string msg = rpmem_errormsg();
		INFO(msg);
		CHECK(msg.rfind(pmdk_text + ": ", 0) == 0);
		CHECK(msg.find(env().server.address()) != std::string::npos);
	};
	CHECK(rpmem_open(e.target().c_str(), "nothere.set", local.data(), pool_size, &nlanes,
	                 nullptr) == nullptr);
	starts("Pool set or its part doesn't exist or it is unavailable");
	RPMEMpool *rpp =
	    rpmem_create(e.target().c_str(), "text.set", local.data(), pool_size, &nlanes, &attr);
	REQUIRE(rpp);
	CHECK(rpmem_open(e.target().c_str(), "text.set", other.data(), pool_size, &nlanes,
	                 nullptr) == nullptr);
	starts("Pool already in use");
	CHECK(rpmem_close(rpp) == 0);
	CHECK(rpmem_create(e.target().c_str(), "text.set", local.data(), pool_size, &nlanes,
	                   &attr) == nullptr);
	starts("Pool already exists");
	CHECK(rpmem_remove(e.target().c_str(), "text.set", RPMEM_REMOVE_POOL_SET) == 0);
	CHECK(rpmem_remove(e.target().c_str(), "text.set", 0) != 0);
	starts("remote command failed");
}

TEST_CASE("capi: rpmem_errormsg names the failure once, without the function's name",
          "[capi][messages]")
{
	auto &e = env();
	e.node.write_poolset("once.set", {"8M"});
	local_pool local(pool_size);
	auto attr = c_attr();
	unsigned nlanes = 1;
	RPMEMpool *rpp =
	    rpmem_create(e.target().c_str(), "once.set", local.data(), pool_size, &nlanes, &attr);
	REQUIRE(rpp);
	auto check = [](int ret, const char *function) {
		std::string msg = rpmem_errormsg();
		INFO(msg);
		CHECK(ret != 0);
		CHECK(msg.find(function) == std::string::npos);
	};
	check(rpmem_persist(rpp, 4096, 64, nlanes, 0), "rpmem_persist");
	check(rpmem_flush(rpp, 4096, 64, 0, 0x4), "rpmem_flush");
	check(rpmem_read(rpp, local.data(), pool_size - 10, 64, 0), "rpmem_read");
	check(rpmem_close(nullptr), "rpmem_close");
	CHECK(rpmem_close(rpp) == 0);
	CHECK(rpmem_open(e.target().c_str(), "nothere.set", local.data(), pool_size, &nlanes,
	                 nullptr) == nullptr);
	check(-1, "rpmem_open");
	CHECK(rpmem_remove(e.target().c_str(), "once.set", RPMEM_REMOVE_POOL_SET) == 0);
}

TEST_CASE("an application that exits with its pool open, keep-alive pinging, exits cleanly",
          "[capi][exit]")
{
	// exit() runs OpenSSL's cleanup; a keep-alive ping after it crashed in libssh. With a
	// ping every millisecond, many exits land on one; each must exit 0, and in sanitizer
	// builds leave no report.
	capi_environment env;
	// The program does not free what it leaves open, on purpose: no leak check for it.
	std::string vars = "RPMEM_KEEPALIVE=1";
	if (const char *a = std::getenv("ASAN_OPTIONS"))
		vars += fmt::format(" ASAN_OPTIONS='{}:detect_leaks=0'", a);
	for (int i = 0; i < 20; ++i) {
		const auto set = fmt::format("exit{}.set", i);
		env.node.write_poolset(set, {"8M"}, "NOHDRS");
		// In its own directory, checked to stay empty: a crash at exit shows in the exit
		// status, and in a crash report a foreign handler may write there (libinfinipath's
		// wrote <program>.<host>-<pid>,vm.btr before lib/fabric/library.cpp kept it out).
		const auto dir = make_temp_dir("/tmp", "rpmem-exit-");
		auto r = run(fmt::format("sh -c 'cd {} && exec {}/bin/rpmem_exit_open {} {} {}'",
		                         dir.string(), RPMEM_BINARY_DIR, env.target(), set,
		                         20000 + 5000 * i),
		             vars);
		std::size_t left = 0;
		for ([[maybe_unused]] const auto &f : fs::directory_iterator(dir))
			++left;
		fs::remove_all(dir);
		INFO("run " << i << " printed:\n" << r.output);
		REQUIRE(r.status == 0);
		CHECK(r.output.find("exiting with the pool open") != std::string::npos);
		CHECK(left == 0); // no crash report
	}
}
