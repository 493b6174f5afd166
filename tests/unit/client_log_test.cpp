// SPDX-License-Identifier: BSD-3-Clause
// The client's log (lib/client/log.cpp): an error reaches an operator whatever the log level.
// Each case runs in a child process of its own (the log reads its environment once), in a mount
// namespace whose /dev/log is a socket the test reads, as syslog(3) sends there.
#include "client/log.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sched.h>
#include <string>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

namespace
{

/** What one child saw: the datagrams syslog(3) sent, and what the log wrote to stderr. */
struct seen {
	std::string syslog, stderr_text;
};

std::string drain(int fd)
{
	std::string out;
	char buf[4096];
	ssize_t n;
	while ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			out.append(buf, static_cast<std::size_t>(n));
	return out;
}

/** In the child: /dev/log a socket of ours (a private /dev), stderr a pipe. Returns the
 *  socket, or -1 with the reason written to `report`. */
int listen_as_syslog(int report)
{
	auto fail = [&](const char *what) {
		auto m = fmt::format("{}: {}\n", what, std::strerror(errno));
		(void)!::write(report, m.data(), m.size());
		return -1;
	};
	if (::unshare(CLONE_NEWNS) != 0)
		return fail("unshare(CLONE_NEWNS) (the test needs root)");
	if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
		return fail("making / private");
	if (::mount("tmpfs", "/dev", "tmpfs", 0, "mode=0755") != 0)
		return fail("mounting a tmpfs on /dev");
	int s = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	sockaddr_un a{};
	a.sun_family = AF_UNIX;
	std::strcpy(a.sun_path, "/dev/log");
	if (s < 0 || ::bind(s, reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0)
		return fail("binding /dev/log");
	return s;
}

/** Logs `message` as an error in a child with `env` (NAME=VALUE, or NAME alone to unset) and
 *  stderr a pipe: neither a terminal nor the journal. */
seen log_error_in_child(std::initializer_list<const char *> env, const std::string &message,
                        void (*before)() = nullptr)
{
	int to_parent[2], err_pipe[2];
	REQUIRE(::pipe(to_parent) == 0);
	REQUIRE(::pipe(err_pipe) == 0);
	pid_t pid = ::fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		::close(to_parent[0]);
		::close(err_pipe[0]);
		int s = listen_as_syslog(to_parent[1]);
		if (s < 0)
			::_exit(2);
		::dup2(err_pipe[1], 2);
		::unsetenv("JOURNAL_STREAM");
		for (const char *e : env)
			std::strchr(e, '=') ? ::putenv(const_cast<char *>(e)) : ::unsetenv(e);
		if (before)
			before();
		rpmem::client::log(1, "{}", message);
		// syslog(3) sent its datagram before it returned: it is queued on the socket.
		std::string got;
		char buf[2048];
		ssize_t n;
		while ((n = ::recv(s, buf, sizeof buf, MSG_DONTWAIT)) > 0)
			got.append(buf, static_cast<std::size_t>(n)).append("\n");
		got = "OK\n" + got;
		(void)!::write(to_parent[1], got.data(), got.size());
		::_exit(0);
	}
	::close(to_parent[1]);
	::close(err_pipe[1]);
	seen out;
	out.syslog = drain(to_parent[0]);
	out.stderr_text = drain(err_pipe[0]);
	::close(to_parent[0]);
	::close(err_pipe[0]);
	int status = 0;
	REQUIRE(::waitpid(pid, &status, 0) == pid);
	INFO(out.syslog);
	REQUIRE(WIFEXITED(status));
	REQUIRE(WEXITSTATUS(status) == 0);
	REQUIRE(out.syslog.rfind("OK\n", 0) == 0);
	out.syslog.erase(0, 3);
	return out;
}

} // namespace

TEST_CASE("an error no log shows reaches syslog, whatever the log level", "[log]")
{
	const std::string lost = "rpmem_persist: the replica on node2 is lost (test)";
	SECTION("level unset: stderr a pipe, so the log is off")
	{
		auto s = log_error_in_child({"RPMEM_LOG_LEVEL", "RPMEM_LOG_FILE"}, lost);
		CHECK_THAT(s.syslog, Catch::Contains("<librpmem>: <1> [error] " + lost));
		CHECK(s.stderr_text.empty());
	}
	SECTION("level 0")
	{
		auto s = log_error_in_child({"RPMEM_LOG_LEVEL=0", "RPMEM_LOG_FILE"}, lost);
		CHECK_THAT(s.syslog, Catch::Contains(lost));
		CHECK(s.stderr_text.empty());
	}
	SECTION("level 1 on a stderr that is a pipe: both")
	{
		auto s = log_error_in_child({"RPMEM_LOG_LEVEL=1", "RPMEM_LOG_FILE"}, lost);
		CHECK_THAT(s.syslog, Catch::Contains(lost));
		CHECK_THAT(s.stderr_text, Catch::Contains(lost));
	}
}

TEST_CASE("an error the log file keeps is not sent to syslog", "[log]")
{
	char dir[] = "/tmp/rpmem-log-XXXXXX";
	REQUIRE(::mkdtemp(dir) != nullptr);
	const std::string file = std::string(dir) + "/client.log";
	const std::string env = "RPMEM_LOG_FILE=" + file;
	auto s = log_error_in_child({"RPMEM_LOG_LEVEL=1", env.c_str()}, "kept in the file");
	CHECK(s.syslog.empty());
	CHECK(s.stderr_text.empty());
	std::FILE *f = std::fopen(file.c_str(), "r");
	REQUIRE(f);
	char line[256] = {};
	CHECK(std::fgets(line, sizeof line, f) != nullptr);
	std::fclose(f);
	CHECK_THAT(std::string(line), Catch::Contains("kept in the file"));
	::unlink(file.c_str());
	::rmdir(dir);
}

TEST_CASE("a per-process log file is not written through a link planted at its name", "[log]")
{
	// RPMEM_LOG_FILE=.../client.log- names the file after the PID: anyone can predict it.
	static char dir[] = "/tmp/rpmem-log-XXXXXX";
	REQUIRE(::mkdtemp(dir) != nullptr);
	static const std::string victim = std::string(dir) + "/victim";
	std::FILE *v = std::fopen(victim.c_str(), "w");
	REQUIRE(v);
	std::fputs("precious\n", v);
	std::fclose(v);
	const std::string env = "RPMEM_LOG_FILE=" + std::string(dir) + "/client.log-";
	auto s = log_error_in_child({"RPMEM_LOG_LEVEL=1", env.c_str()}, "not in the victim", [] {
		auto planted = std::string(dir) + "/client.log-" + std::to_string(::getpid());
		if (::symlink(victim.c_str(), planted.c_str()) != 0)
			::_exit(3);
	});
	char line[64] = {};
	v = std::fopen(victim.c_str(), "r");
	REQUIRE(v);
	CHECK(std::fgets(line, sizeof line, v) != nullptr);
	CHECK(std::fgets(line + 9, sizeof line - 9, v) == nullptr); // one line only
	std::fclose(v);
	CHECK(std::string(line) == "precious\n");
	// The error still reached an operator: on stderr (the log fell back to it) and syslog.
	CHECK_THAT(s.stderr_text, Catch::Contains("not in the victim"));
	CHECK_THAT(s.syslog, Catch::Contains("not in the victim"));
	std::filesystem::remove_all(dir);
}
