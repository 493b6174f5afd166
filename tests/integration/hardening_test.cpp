// SPDX-License-Identifier: BSD-3-Clause
// Hardening and PMDK parity through the real sshd and rpmemd: what the client is told when
// rpmemd cannot log, cannot reach its storage, never answers, or removes half a pool set.
#include "process.hpp"
#include "replica_fixture.hpp"
#include "support/syslog_probe.hpp"

#include "rpmem/error.hpp"

#include <algorithm>
#include <cerrno>
#include <regex>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>

using rpmem::client::remote_pool;
using namespace rpmem::test;
namespace fs = std::filesystem;

namespace
{

constexpr std::size_t pool_size = 8 << 20;

/** The rpmem::error f throws; fails the test when it throws nothing. */
rpmem::error error_of(const std::function<void()> &f)
{
	try {
		f();
	} catch (const rpmem::error &e) {
		return e;
	}
	FAIL("no rpmem::error thrown");
	throw std::logic_error("unreachable");
}

/** Whether a process whose command line contains `text` runs, after waiting up to `limit`
 *  for it to go (a generous bound: only a process that never ends fails it). */
bool still_runs(const std::string &text, std::chrono::milliseconds limit)
{
	auto until = std::chrono::steady_clock::now() + limit;
	for (;;) {
		bool found = false;
		for (const auto &e : fs::directory_iterator("/proc")) {
			auto name = e.path().filename().string();
			if (name.find_first_not_of("0123456789") != std::string::npos)
				continue;
			std::string cmdline = slurp(e.path() / "cmdline");
			std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
			found = found || cmdline.find(text) != std::string::npos;
		}
		if (!found || std::chrono::steady_clock::now() > until)
			return found;
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
}

} // namespace

TEST_CASE("a remote command that never answers: the documented timeout, and it is ended",
          "[hardening][hello]")
{
	sshd server;
	replica node(server);
	local_pool local(pool_size);
	// sleep outlives the wait but ends by itself: sshd refuses to signal commands of root
	// logins (this suite's), so it could stay behind; the unique cat reads its input.
	auto command = GENERATE(std::string("sleep 3.5"), std::string("cat - /dev/null"));
	INFO(command);
	auto o = node.options();
	o.command = command;
	o.tuning->control_timeout = std::chrono::milliseconds(1500);
	unsigned nlanes = 1;
	auto e = error_of([&] {
		remote_pool::open(node.target(), "pool.set", local.data(), local.size(), &nlanes,
		                  nullptr, o);
	});
	INFO(e.message());
	CHECK(e.errnum() == ETIMEDOUT);
	CHECK_THAT(e.message(), Catch::Contains(fmt::format("rpmemd ('{}') did not answer within "
	                                                    "1500 ms",
	                                                    command)));
	if (command.starts_with("cat"))
		CHECK_FALSE(still_runs(command, std::chrono::seconds(10)));
}

TEST_CASE("an unwritable --log-file stops rpmemd with a message the client shows",
          "[hardening][log]")
{
	remote_setup fx(pool_size);
	auto o = fx.node.options();
	const std::string log = (fx.node.dir() / "no-such-dir" / "rpmemd.log").string();
	o.command = fmt::format("{} --poolset-dir={} --log-file={}", RPMEM_TEST_RPMEMD,
	                        fx.node.dir().string(), log);
	unsigned nlanes = 1;
	auto e = error_of([&] { fx.create(nlanes, o); });
	INFO(e.message());
	CHECK(e.errnum() == ENOENT);
	CHECK_THAT(e.message(), Catch::Contains(fx.server.address()) &&
	                            Catch::Contains("cannot open log file '" + log + "'") &&
	                            Catch::Contains("No such file or directory"));
	CHECK(!fs::exists(fx.node.part("pool.set")));

	auto removal = error_of([&] { remote_pool::remove(fx.node.target(), "pool.set", 0, o); });
	INFO(removal.message());
	CHECK_THAT(removal.message(), Catch::Contains("cannot open log file"));
}

using rpmem::test::syslog_listens;

TEST_CASE("rpmemd's default log level records each session with its version and how it persists",
          "[hardening][log]")
{
	remote_setup fx(pool_size);
	auto o = fx.node.options();
	// No --log-level: the default.
	o.command = fmt::format("{} --poolset-dir={} --log-file={}", RPMEM_TEST_RPMEMD,
	                        fx.node.dir().string(), fx.node.log_file().string());
	unsigned nlanes = 1;
	auto pool = fx.create(nlanes, o);
	for (std::size_t i = 0; i < 10; ++i)
		pool->persist(4096 + i * 64, 64, 0, 0);
	pool->close();
	const auto log = fx.node.log_text();
	INFO("rpmemd's log:\n" << log);
	CHECK_THAT(log, Catch::Contains("session start: created pool pool.set") &&
	                    Catch::Contains("made durable by pmem_msync") &&
	                    Catch::Contains("; rpmemd version ") &&
	                    Catch::Contains("session end: pool pool.set"));
	// The session-end line counts what was served and how long executing it took (the 10
	// persists, each one lane request at least; none refused).
	std::smatch m;
	REQUIRE(std::regex_search(log, m,
	                          std::regex(R"(session end: pool pool\.set, (\d+) requests \(0 )"
	                                     R"(refused\), (\d+) bytes persisted, execution p50 )"
	                                     R"(\d+(\.\d+)? (ns|us|ms) p99 [^ ]+ [^ ]+ max )")));
	CHECK(std::stoull(m[1]) >= 10);
	CHECK(std::stoull(m[2]) >= 640);
	// Nothing below notice by default: the fabric target's info line is absent.
	CHECK_THAT(log, !Catch::Contains(": info: "));
}

TEST_CASE("rpmemd told to use syslog where none listens says so on stderr and logs there",
          "[hardening][log]")
{
	// Run directly, not over SSH: it refuses to start (no SSH_CONNECTION) and logs why.
	auto r =
	    run(fmt::format("{} --use-syslog --poolset-dir=/tmp </dev/null", RPMEM_TEST_RPMEMD),
	        "-u SSH_CONNECTION");
	INFO("rpmemd printed:\n" << r.output);
	CHECK(r.status == 1);
	CHECK_THAT(r.output, Catch::Contains("SSH_CONNECTION is not set"));
	if (syslog_listens()) {
		// Where a syslog daemon listens, the line went there and nothing warns.
		CHECK_THAT(r.output, !Catch::Contains("syslog is not reachable"));
	} else {
		CHECK_THAT(r.output, Catch::Contains("warning: syslog is not reachable (connecting "
		                                     "to /dev/log: ") &&
		                         Catch::Contains("logging to standard error instead"));
		CHECK_THAT(r.output, Catch::Contains(": err: start-up failed"));
	}
}

TEST_CASE("storage errors reach the client with the system's reason", "[hardening][storage]")
{
	sshd server;
	replica node(server);
	local_pool local(pool_size);
	auto attr = sample_attr();
	auto create = [&](const std::string &desc, const rpmem::client::pool_options &o) {
		unsigned nlanes = 1;
		return error_of([&] {
			remote_pool::create(node.target(), desc, local.data(), local.size(),
			                    &nlanes, &attr, o);
		});
	};

	auto missing_dir = node.options();
	missing_dir.command = fmt::format("{} --poolset-dir=/nonexistent-rpmem-dir --log-file={}",
	                                  RPMEM_TEST_RPMEMD, node.log_file().string());
	auto e = create("pool.set", missing_dir);
	INFO(e.message());
	CHECK_THAT(e.message(), Catch::Contains("/nonexistent-rpmem-dir") &&
	                            Catch::Contains("No such file or directory"));

	e = create("nothere.set", node.options());
	INFO(e.message());
	CHECK(e.errnum() == ENOENT);
	CHECK_THAT(e.message(),
	           Catch::Contains("nothere.set") && Catch::Contains("No such file or directory"));

	fs::create_directories(node.dir() / "adir");
	std::ofstream(node.dir() / "dirpart.set")
	    << "PMEMPOOLSET\n8M " << (node.dir() / "adir").string() << "\n";
	e = create("dirpart.set", node.options());
	INFO(e.message());
	CHECK_THAT(e.message(),
	           Catch::Contains((node.dir() / "adir").string()) && Catch::Contains("directory"));

	auto ro = node.dir() / "ro";
	fs::create_directories(ro);
	REQUIRE(::mount("tmpfs", ro.c_str(), "tmpfs", 0, "size=1M,mode=0700") == 0);
	struct unmount {
		fs::path p;
		~unmount() { ::umount2(p.c_str(), MNT_DETACH); }
	} guard{ro};
	std::ofstream(ro / "old.part0") << "a part left from an earlier pool";
	REQUIRE(::mount(nullptr, ro.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) == 0);
	std::ofstream(node.dir() / "ro.set")
	    << "PMEMPOOLSET\n8M " << (ro / "ro.part0").string() << "\n";
	e = create("ro.set", node.options());
	INFO(e.message());
	CHECK(e.errnum() == EACCES);
	CHECK_THAT(e.message(),
	           Catch::Contains("ro.part0") && Catch::Contains("Read-only file system"));

	std::ofstream(node.dir() / "old.set")
	    << "PMEMPOOLSET\n8M " << (ro / "old.part0").string() << "\n";
	auto removal =
	    error_of([&] { remote_pool::remove(node.target(), "old.set", 0, node.options()); });
	INFO(removal.message());
	CHECK_THAT(removal.message(), Catch::Contains("cannot remove part") &&
	                                  Catch::Contains("Read-only file system"));
}

TEST_CASE("rpmemd ending mid-session: close says why, in the user's words", "[hardening][messages]")
{
	remote_setup fx(pool_size);
	auto opts = fx.node.options();
	std::string hint;
	SECTION("killed")
	{
		opts.tuning->keepalive =
		    GENERATE(std::chrono::milliseconds(0), std::chrono::milliseconds(200));
		hint = "killed by signal SIGKILL";
	}
	SECTION("dropped by its heartbeat timeout")
	{
		opts.command += " --heartbeat-timeout=1000";
		opts.tuning->keepalive = std::chrono::milliseconds(0);
		hint = "heartbeat-timeout";
	}
	INFO("keep-alive " << opts.tuning->keepalive.count() << " ms");
	unsigned nlanes = 1;
	auto pool = fx.create(nlanes, opts);
	if (hint.starts_with("killed"))
		REQUIRE(run_kill_rpmemd(fx.node.dir().string()));
	std::this_thread::sleep_for(std::chrono::milliseconds(2500));
	auto e = error_of([&] { pool->close(); });
	INFO(e.message());
	CHECK_THAT(e.message(), Catch::Contains(hint));
	CHECK_THAT(e.message(), !Catch::Contains("installed there") && !Catch::Contains("_resp") &&
	                            !Catch::Contains("pong"));
}

TEST_CASE("a pool set name too long for the protocol is refused before SSH, naming the host",
          "[hardening][messages]")
{
	local_pool local(pool_size);
	std::string name(5000, 'd');
	unsigned nlanes = 1;
	rpmem::client::pool_options o;
	o.command = "rpmemd";
	// Nothing listens on port 1: reaching SSH would fail with ECONNREFUSED instead.
	auto e = error_of([&] {
		remote_pool::open("root@127.0.0.1:1", name, local.data(), local.size(), &nlanes,
		                  nullptr, o);
	});
	INFO(e.message());
	CHECK(e.errnum() == EINVAL);
	CHECK_THAT(e.message(), Catch::StartsWith("127.0.0.1: ") && Catch::Contains("5000 bytes"));
	auto r = error_of([&] { remote_pool::remove("root@127.0.0.1:1", name, 0, o); });
	CHECK(r.errnum() == EINVAL);
}

TEST_CASE("a part truncated under a live session: rpmemd's log says what killed it",
          "[hardening][sigbus]")
{
	remote_setup fx(pool_size);
	unsigned nlanes = 1;
	auto pool = fx.create(nlanes);
	pool->persist(4096, 64, 0, 0);
	fs::resize_file(fx.node.part("pool.set"), 4096);
	std::memset(fx.local.data() + (1 << 20), 0x5a, 64);
	CHECK(error_of([&] { pool->persist(1 << 20, 64, 0, 0); }).errnum() != 0);
	CHECK_FALSE(still_runs(fx.node.dir().string(), std::chrono::seconds(30)));
	auto log = fx.node.log_text();
	INFO(log);
	CHECK_THAT(log, Catch::Contains("SIGBUS") &&
	                    Catch::Contains(fx.node.part("pool.set").string()) &&
	                    Catch::Contains("truncated"));
}

TEST_CASE("a client out of file descriptors is told which host and what to raise",
          "[hardening][messages]")
{
	remote_setup fx(pool_size);
	std::size_t open_fds = 0;
	for ([[maybe_unused]] const auto &e : fs::directory_iterator("/proc/self/fd"))
		++open_fds;
	rlimit saved{};
	REQUIRE(getrlimit(RLIMIT_NOFILE, &saved) == 0);
	// Room for the SSH session, not for 4 fabric connections (each takes several).
	rlimit low = saved;
	low.rlim_cur = open_fds + 12;
	REQUIRE(setrlimit(RLIMIT_NOFILE, &low) == 0);
	auto e = error_of([&] {
		unsigned nlanes = 8;
		fx.create(nlanes);
	});
	REQUIRE(setrlimit(RLIMIT_NOFILE, &saved) == 0);
	INFO(e.message());
	CHECK(e.errnum() == EMFILE);
	CHECK_THAT(e.message(), Catch::StartsWith(fx.server.address() + ": ") &&
	                            Catch::Contains("Too many open files") &&
	                            Catch::Contains("ulimit -n"));
}

TEST_CASE("rpmemd --check-config reads the config as a session would: every key's value on "
          "stdout and 0, or what is wrong on stderr and 255",
          "[hardening][config]")
{
	char tmpl[] = "/tmp/rpmemd-check-XXXXXX";
	REQUIRE(::mkdtemp(tmpl));
	const fs::path dir = tmpl;
	const auto conf = dir / "rpmemd.conf", err = dir / "stderr";
	// stdout is what run() returns, stderr goes to a file of its own.
	auto check = [&](const std::string &text) {
		std::ofstream(conf) << text;
		return run(fmt::format("{{ {} --config {} --check-config 2>{}; }}",
		                       RPMEM_TEST_RPMEMD, conf.string(), err.string()));
	};
	auto r = check(fmt::format("poolset-dir = {}\nport-range = 7000-7009\nlog-level = info\n",
	                           dir.string()));
	INFO("stdout:\n" << r.output << "stderr:\n" << slurp(err));
	CHECK(r.status == 0);
	CHECK_THAT(r.output, Catch::StartsWith("# rpmemd: the configuration is valid; read " +
	                                       conf.string()));
	CHECK_THAT(r.output, Catch::Contains("\nport-range = 7000-7009\n") &&
	                         Catch::Contains("\nlog-level = info\n") &&
	                         Catch::Contains("\npoolset-dir = " + dir.string() + "\n"));
	CHECK(slurp(err).empty());
	// --version, which troubleshooting.md once suggested, returns before reading the file.
	std::ofstream(conf) << "nthreads = 4\n";
	CHECK(
	    run(fmt::format("{} --config {} --version", RPMEM_TEST_RPMEMD, conf.string())).status ==
	    0);
	// A key that is not one (nthreads is for the command line only), a poolset-dir that is
	// not a directory: 255, the reason on stderr, nothing on stdout.
	for (auto [text, why] : std::vector<std::pair<std::string, std::string>>{
	         {"nthreads = 4\n", "nthreads"},
	         {"poolset-dir = " + (dir / "missing").string() + "\n", "is not a directory"}}) {
		r = check(text);
		INFO(text << "stdout:\n" << r.output << "stderr:\n" << slurp(err));
		CHECK(r.status == 255);
		CHECK(r.output.empty());
		CHECK_THAT(slurp(err), Catch::Contains(why));
	}
	fs::remove_all(dir);
}
