// SPDX-License-Identifier: BSD-3-Clause
// ssh::session against a real sshd on loopback, through libssh and through an external ssh
// program (RPMEM_SSH): data, exit status, stderr, host keys, client keys, config, timeouts.
#include "ssh/session.hpp"
#include "support/sshd.hpp"

#include <rpmem/error.hpp>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <netinet/in.h>
#include <pthread.h>
#include <random>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace std::chrono_literals;
using rpmem::ssh::options;
using rpmem::ssh::parse_target;
using rpmem::ssh::session;
using clock_type = std::chrono::steady_clock;

namespace
{

/** One sshd per test process (ctest runs each test case in its own process). */
rpmem::test::sshd &server()
{
	static rpmem::test::sshd instance;
	return instance;
}

enum class kind { libssh, external };

options options_for(kind k)
{
	auto o = server().client_options();
	if (k == kind::external)
		o.external_program = server().ssh_wrapper(); // ssh -F <config>, PMDK's argv after
	return o;
}

const char *name(kind k)
{
	return k == kind::libssh ? "libssh" : "external ssh";
}

std::unique_ptr<session> start(const std::string &command, kind k = kind::libssh)
{
	return session::start(server().target(), command, options_for(k));
}

/** The rpmem::error a call throws; fails the test when it throws nothing. */
template <class F> rpmem::error error_of(F &&f)
{
	try {
		f();
	} catch (const rpmem::error &e) {
		return e;
	}
	FAIL("no rpmem::error thrown");
	throw std::logic_error("unreachable");
}

std::vector<std::uint8_t> random_bytes(std::size_t n)
{
	std::mt19937_64 rng(42);
	std::vector<std::uint8_t> v(n);
	for (auto &b : v)
		b = static_cast<std::uint8_t>(rng());
	return v;
}

/**
 * How long a test waits for a remote command's output or exit. It only detects hangs: the
 * command starts through root's login shell, whose rc files take seconds here when many tests
 * log in at once (root's ~/.bashrc runs pyenv rehash, which other logins wait for behind a lock
 * file: 8 concurrent `sleep 0.5; echo x` took 6 to 12 s, with OpenSSH's client too).
 */
constexpr auto remote_bound = 120s;

double seconds_since(clock_type::time_point t0)
{
	return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::size_t open_fds()
{
	auto it = std::filesystem::directory_iterator("/proc/self/fd");
	return static_cast<std::size_t>(std::distance(it, std::filesystem::directory_iterator()));
}

} // namespace

TEST_CASE("cat echoes 1 MiB of binary data unchanged", "[ssh][integration]")
{
	auto k = GENERATE(kind::libssh, kind::external);
	INFO(name(k));
	auto s = start("cat", k);
	auto data = random_bytes(1 << 20);
	std::vector<std::uint8_t> back(data.size());
	// Interleaved, so neither side's flow-control window has to hold the whole MiB.
	constexpr std::size_t chunk = 64 * 1024;
	for (std::size_t off = 0; off < data.size(); off += chunk) {
		s->write_all(std::span(data).subspan(off, chunk));
		s->read_exact(std::span(back).subspan(off, chunk), remote_bound);
	}
	bool same = back == data; // not CHECK(back == data): Catch would print a MiB on failure
	CHECK(same);
	s->close_stdin();
	CHECK(s->wait_exit(remote_bound) == 0);
	CHECK(s->host() == server().address());
}

TEST_CASE("exit status and stderr of the remote command", "[ssh][integration]")
{
	auto k = GENERATE(kind::libssh, kind::external);
	INFO(name(k));
	auto s = start("sh -c 'echo oops >&2; exit 3'", k);
	CHECK(s->wait_exit(remote_bound) == 3);
	CHECK_THAT(s->stderr_text(), Catch::Contains("oops"));
	std::uint8_t byte;
	auto e = error_of([&] { s->read_exact({&byte, 1}, remote_bound); });
	CHECK(e.errnum() == ECONNRESET);
	CHECK_THAT(e.message(), Catch::Contains("oops") && Catch::Contains("exit status 3"));
}

TEST_CASE("stdout data that precedes EOF is still read", "[ssh][integration]")
{
	auto k = GENERATE(kind::libssh, kind::external);
	INFO(name(k));
	auto s = start("printf abc", k);
	std::array<std::uint8_t, 3> got{};
	s->read_exact(got, remote_bound);
	CHECK(std::string(got.begin(), got.end()) == "abc");
	std::uint8_t more;
	CHECK(error_of([&] { s->read_exact({&more, 1}, remote_bound); }).errnum() == ECONNRESET);
	CHECK(s->wait_exit(remote_bound) == 0);
}

TEST_CASE("a missing remote command shows the shell's complaint", "[ssh][integration]")
{
	auto k = GENERATE(kind::libssh, kind::external);
	INFO(name(k));
	auto s = start("rpmem-no-such-command-x", k);
	std::uint8_t byte;
	auto e = error_of([&] { s->read_exact({&byte, 1}, remote_bound); });
	CHECK(e.errnum() == ECONNRESET);
	CHECK_THAT(e.message(),
	           Catch::Contains("rpmem-no-such-command-x") && Catch::Contains("not found"));
	CHECK_THAT(e.message(), Catch::Contains(server().address()));
	CHECK(s->wait_exit(remote_bound) == 127);
}

TEST_CASE("a remote command killed by a signal has exit status -1", "[ssh][integration]")
{
	auto s = start("exec sh -c 'kill -9 $$'");
	CHECK(s->wait_exit(remote_bound) == -1);
}

TEST_CASE("an unknown host key is refused", "[ssh][integration]")
{
	auto o = server().client_options();
	auto log_before = server().log_text().size();
	SECTION("not in known_hosts")
	{
		o.known_hosts_file = server().make_empty_known_hosts("empty_known_hosts");
		auto e = error_of([&] { session::start(server().target(), "true", o); });
		CHECK(e.errnum() == ENOKEY);
		CHECK_THAT(e.message(),
		           Catch::Contains("unknown") && Catch::Contains(o.known_hosts_file) &&
		               Catch::Contains("ssh-keyscan") && Catch::Contains("SHA256:"));
	}
	SECTION("known_hosts missing")
	{
		o.known_hosts_file = (server().dir() / "no_such_known_hosts").string();
		auto e = error_of([&] { session::start(server().target(), "true", o); });
		CHECK(e.errnum() == ENOKEY);
		CHECK_THAT(e.message(), Catch::Contains("does not exist"));
	}
	// Refused before authentication: the server never saw our key.
	CHECK_THAT(server().log_text().substr(log_before), !Catch::Contains("Accepted publickey"));
}

TEST_CASE("a changed host key is refused", "[ssh][integration]")
{
	auto type = GENERATE(as<std::string>{}, "ed25519", "ecdsa"); // same type, other type
	INFO(type);
	auto o = server().client_options();
	o.known_hosts_file = server().make_wrong_known_hosts("wrong_known_hosts", type);
	auto e = error_of([&] { session::start(server().target(), "true", o); });
	CHECK(e.errnum() == EKEYREJECTED);
	CHECK_THAT(e.message(), Catch::Contains("CHANGED") &&
	                            Catch::Contains("man-in-the-middle") &&
	                            Catch::Contains(o.known_hosts_file));
}

TEST_CASE("a client key the server does not know is refused", "[ssh][integration]")
{
	auto o = server().client_options();
	auto other = server().make_key("other_key");
	auto missing = (server().dir() / "no_such_key").string();
	o.identity_files = {missing, other};
	auto e = error_of([&] { session::start(server().target(), "true", o); });
	CHECK(e.errnum() == EACCES);
	CHECK_THAT(e.message(), Catch::Contains("root@" + server().address()) &&
	                            Catch::Contains(other + " (rejected)") &&
	                            Catch::Contains(missing + " (unreadable"));
}

TEST_CASE("a Host alias from the ssh config file works", "[ssh][integration]")
{
	// Only the config: HostName, Port, User, IdentityFile, UserKnownHostsFile all come from it.
	options o;
	o.config_file = server().config_file();
	auto s = session::start(parse_target(server().alias()), "echo $USER", o);
	std::array<std::uint8_t, 5> got{};
	s->read_exact(got, remote_bound);
	CHECK(std::string(got.begin(), got.end()) == "root\n");
	CHECK(s->host() == server().alias());
}

TEST_CASE("an explicit port in the target overrides the config", "[ssh][integration]")
{
	auto o = server().client_options();
	SECTION("root@address:port reaches the server")
	{
		auto t =
		    parse_target(fmt::format("root@{}:{}", server().address(), server().port()));
		auto s = session::start(t, "echo ok", o);
		std::array<std::uint8_t, 3> got{};
		s->read_exact(got, remote_bound);
		CHECK(std::string(got.begin(), got.end()) == "ok\n");
	}
	SECTION("alias:otherport goes to the other port")
	{
		auto closed = std::to_string(server().port() == 1 ? 2 : 1); // nothing listens there
		auto e = error_of([&] {
			session::start(parse_target(server().alias() + ":" + closed), "true", o);
		});
		CHECK(e.errnum() == ECONNREFUSED);
		CHECK_THAT(e.message(), Catch::Contains(":" + closed));
	}
}

TEST_CASE("the external program gets PMDK's argv", "[ssh][external]")
{
	// A fake ssh that records its arguments: no server needed.
	auto dir = server().dir();
	auto script = (dir / "fake-ssh").string();
	auto args = (dir / "fake-ssh.args").string();
	{
		std::ofstream f(script);
		f << "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done > '" << args
		  << "'\necho ready\n";
	}
	std::filesystem::permissions(script, std::filesystem::perms::owner_all);
	options o;
	o.external_program = script;
	auto expect = [&](const std::string &target, std::vector<std::string> argv) {
		auto s = session::start(parse_target(target), "rpmemd --log-level=4 'x y'", o);
		std::array<std::uint8_t, 6> got{};
		s->read_exact(got, remote_bound);
		CHECK(s->wait_exit(remote_bound) == 0);
		std::ifstream in(args);
		std::vector<std::string> lines;
		for (std::string line; std::getline(in, line);)
			lines.push_back(line);
		argv.push_back("rpmemd --log-level=4 'x y'"); // one argument, unsplit
		CHECK(lines == argv);
	};
	expect("alice@node:2222", {"-p", "2222", "-T", "-oBatchMode=yes", "alice@node"});
	expect("node", {"-T", "-oBatchMode=yes", "node"});
	expect("[::1]:22", {"-p", "22", "-T", "-oBatchMode=yes", "::1"});
}

TEST_CASE("an external program that does not exist fails at start", "[ssh][external]")
{
	options o;
	o.external_program = "/nonexistent/rpmem-ssh";
	auto e = error_of([&] { session::start(parse_target("node"), "rpmemd", o); });
	CHECK(e.errnum() == ENOENT);
	CHECK_THAT(e.message(), Catch::Contains("/nonexistent/rpmem-ssh"));
}

TEST_CASE("a read that gets no data times out without hanging", "[ssh][integration]")
{
	auto k = GENERATE(kind::libssh, kind::external);
	INFO(name(k));
	auto s = start("sleep 5", k);
	std::uint8_t byte;
	auto t0 = clock_type::now();
	auto e = error_of([&] { s->read_exact({&byte, 1}, 200ms); });
	CHECK(e.errnum() == ETIMEDOUT);
	CHECK(seconds_since(t0) >= 0.2);
	CHECK(seconds_since(t0) < 2.0);
	CHECK(error_of([&] { s->wait_exit(100ms); }).errnum() == ETIMEDOUT);
	t0 = clock_type::now();
	s.reset(); // the remote sleep still runs: teardown must not wait for it
	CHECK(seconds_since(t0) < 3.0);
}

TEST_CASE("a closed port fails quickly", "[ssh][integration]")
{
	// Port 1 on loopback: nothing listens, the kernel answers RST at once.
	auto t = parse_target(fmt::format("root@{}:1", server().address()));
	SECTION("libssh: ECONNREFUSED at start")
	{
		auto t0 = clock_type::now();
		auto e = error_of([&] { session::start(t, "true", server().client_options()); });
		CHECK(e.errnum() == ECONNREFUSED);
		CHECK_THAT(e.message(), Catch::Contains(server().address() + ":1"));
		CHECK(seconds_since(t0) < 2.0);
	}
	SECTION("external: ssh's complaint on the first read")
	{
		auto s = session::start(t, "true", options_for(kind::external));
		std::uint8_t byte;
		auto e = error_of([&] { s->read_exact({&byte, 1}, remote_bound); });
		CHECK(e.errnum() == ECONNRESET);
		CHECK_THAT(e.message(),
		           Catch::Contains("refused") && Catch::Contains("exit status 255"));
	}
}

TEST_CASE("a server that never speaks SSH times out at connect", "[ssh][integration]")
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_in addr{};
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(addr);
	REQUIRE(bind(fd, reinterpret_cast<sockaddr *>(&addr), len) == 0);
	REQUIRE(listen(fd, 4) == 0); // the kernel completes the handshake; nobody ever answers
	REQUIRE(getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) == 0);
	auto o = server().client_options();
	o.connect_timeout = 300ms;
	auto t0 = clock_type::now();
	auto e = error_of([&] {
		session::start(parse_target(fmt::format("root@127.0.0.1:{}", ntohs(addr.sin_port))),
		               "true", o);
	});
	CHECK(e.errnum() == ETIMEDOUT);
	CHECK(seconds_since(t0) < 3.0);
	close(fd);
}

TEST_CASE("sessions leave no file descriptors behind", "[ssh][integration]")
{
	auto k = GENERATE(kind::libssh, kind::external);
	INFO(name(k));
	server(); // started before counting
	auto before = open_fds();
	for (int i = 0; i < 3; i++) {
		auto s = start("echo hi", k);
		std::array<std::uint8_t, 3> got{};
		s->read_exact(got, remote_bound);
		CHECK(s->wait_exit(remote_bound) == 0);
	}
	{ // torn down while the command may still run; a write may or may not fail
		auto s = start("true", k);
		try {
			s->write_all(std::vector<std::uint8_t>(1));
		} catch (const rpmem::error &) {
		}
	}
	CHECK(open_fds() == before);
}

TEST_CASE("writes after close_stdin are refused", "[ssh][integration]")
{
	auto k = GENERATE(kind::libssh, kind::external);
	INFO(name(k));
	auto s = start("cat", k);
	s->close_stdin();
	std::array<std::uint8_t, 1> b{1};
	CHECK(error_of([&] { s->write_all(b); }).errnum() == EPIPE);
	CHECK(s->wait_exit(remote_bound) == 0); // cat saw EOF
}

TEST_CASE("a large write flows through the remote window", "[ssh][integration]")
{
	auto k = GENERATE(kind::libssh, kind::external);
	INFO(name(k));
	// 8 MiB at once: far more than the SSH window (2 MiB) and the socket buffers, so
	// write_all must wait for window adjustments while the remote side drains.
	auto s = start("wc -c", k);
	s->write_all(std::vector<std::uint8_t>(8 << 20, 0xa5));
	s->close_stdin();
	std::array<std::uint8_t, 8> got{};
	s->read_exact(got, remote_bound);
	CHECK(std::string(got.begin(), got.end()) == "8388608\n");
	CHECK(s->wait_exit(remote_bound) == 0);
}

TEST_CASE("a write the remote never consumes times out without hanging", "[ssh][integration]")
{
	auto k = GENERATE(kind::libssh, kind::external);
	INFO(name(k));
	auto o = options_for(k);
	o.write_timeout = 300ms;
	auto s = session::start(server().target(), "sleep 5", o);
	auto t0 = clock_type::now();
	auto e = error_of([&] { s->write_all(std::vector<std::uint8_t>(32 << 20)); });
	CHECK(e.errnum() == ETIMEDOUT);
	CHECK_THAT(e.message(), Catch::Contains("sleep 5"));
	CHECK(seconds_since(t0) < 5.0);
}

namespace
{
void ignore_signal(int) {}
} // namespace

TEST_CASE("signals during a wait do not break the session", "[ssh][integration]")
{
	auto k = GENERATE(kind::libssh, kind::external);
	INFO(name(k));
	struct sigaction sa {
	}, old{};
	sa.sa_handler = ignore_signal; // no SA_RESTART: poll() returns EINTR
	sigaction(SIGUSR1, &sa, &old);
	auto s = start("sleep 0.5; echo x", k);
	auto main_thread = pthread_self();
	std::thread poker([&] {
		for (int i = 0; i < 5; i++) {
			std::this_thread::sleep_for(50ms);
			pthread_kill(main_thread, SIGUSR1);
		}
	});
	std::array<std::uint8_t, 2> got{};
	CHECK_NOTHROW(s->read_exact(got, remote_bound));
	poker.join();
	sigaction(SIGUSR1, &old, nullptr);
	CHECK(got[0] == 'x');
}

TEST_CASE("an IPv6 target in brackets reaches a server on ::1", "[ssh][integration]")
{
	auto k = GENERATE(kind::libssh, kind::external);
	INFO(name(k));
	rpmem::test::sshd v6("::1");
	auto o = v6.client_options();
	if (k == kind::external)
		o.external_program = v6.ssh_wrapper();
	auto t = parse_target(fmt::format("root@[::1]:{}", v6.port()));
	auto s = session::start(t, "echo v6", o);
	std::array<std::uint8_t, 3> got{};
	s->read_exact(got, remote_bound);
	CHECK(std::string(got.begin(), got.end()) == "v6\n");
	CHECK(s->host() == "::1");
}
