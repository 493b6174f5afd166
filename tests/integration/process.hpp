// SPDX-License-Identifier: BSD-3-Clause
// Running a real program (pmempool, an example) from a test: its exit status and output, with
// a hang turned into a failure that says what hung.
#pragma once

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace rpmem::test
{

struct process_result {
	int status = -1;    // exit status, or -1 when it did not exit normally
	std::string output; // stdout and stderr together
};

/** Whether `text` (or a program's output) holds `part`. */
inline bool has(const std::string &text, const std::string &part)
{
	return text.find(part) != std::string::npos;
}
inline bool has(const process_result &r, const std::string &part)
{
	return has(r.output, part);
}
/** The first line of `text`, from `from` on, that holds `part` (from `part` to the line's
 *  end), or "" when none does: a log line to check what else it says. */
inline std::string line_with(const std::string &text, const std::string &part, std::size_t from = 0)
{
	const auto at = text.find(part, from);
	if (at == std::string::npos)
		return {};
	return text.substr(at, text.find('\n', at) - at);
}
/** How many times `text` holds `part` (overlapping ones too). */
inline std::size_t count(const std::string &text, const std::string &part)
{
	std::size_t n = 0;
	for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
		++n;
	return n;
}

namespace detail
{

inline std::string read_text(const std::string &path)
{
	std::ifstream in(path);
	std::stringstream s;
	s << in.rdbuf();
	return s.str();
}

/** What every process of group `pgid` is doing: command line, state and kernel wait
 *  channel, and each thread's user stack where gdb is installed. For the output of a run
 *  that did not end: the diagnosis a CI log keeps. */
inline std::string describe_group(pid_t pgid)
{
	std::string out;
	for (const auto &e : std::filesystem::directory_iterator("/proc")) {
		const auto name = e.path().filename().string();
		if (name.find_first_not_of("0123456789") != std::string::npos)
			continue;
		const auto stat = read_text(e.path() / "stat");
		const auto close = stat.rfind(')');
		if (close == std::string::npos)
			continue;
		std::istringstream rest(stat.substr(close + 2));
		std::string state, ppid, group;
		rest >> state >> ppid >> group;
		if (group != std::to_string(pgid))
			continue;
		auto cmdline = read_text(e.path() / "cmdline");
		std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
		out += "  pid " + name + " (" + state + ", waiting in " +
		       read_text(e.path() / "wchan") + "): " + cmdline + "\n";
		if (access("/usr/bin/gdb", X_OK) == 0) {
			const std::string gdb =
			    "/usr/bin/gdb -batch -nx -p " + name +
			    " -ex 'thread apply all bt 25' 2>/dev/null | grep -E "
			    "'^(Thread|#)' | head -200";
			if (FILE *g = popen(gdb.c_str(), "r")) {
				std::array<char, 4096> buf{};
				std::size_t n;
				while ((n = fread(buf.data(), 1, buf.size(), g)) > 0)
					out.append(buf.data(), n);
				pclose(g);
			}
		}
	}
	return out;
}

} // namespace detail

/**
 * Runs `command` with /bin/sh; `env` is a prefix of VAR=value words. A program that has not
 * ended within `bound` (a hang detector, far beyond any run's time, not a measurement; below
 * scripts/test.sh's 300 s ctest timeout so that it fires first) is
 * described (detail::describe_group), killed with its process group, and reported with
 * status -1 and "TIMED OUT" in its output, so a hang fails its test with a diagnosis
 * instead of stalling the suite until ctest's timeout.
 */
inline process_result run(const std::string &command, const std::string &env = {},
                          std::chrono::seconds bound = std::chrono::seconds(240))
{
	const std::string line = (env.empty() ? "" : "env " + env + " ") + command + " 2>&1";
	process_result r;
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return r;
	const pid_t pid = fork();
	if (pid < 0) {
		::close(fds[0]);
		::close(fds[1]);
		return r;
	}
	if (pid == 0) {
		setpgid(0, 0);
		dup2(fds[1], STDOUT_FILENO);
		execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char *>(nullptr));
		_exit(127);
	}
	setpgid(pid, pid); // both sides: whichever runs first
	::close(fds[1]);
	const auto deadline = std::chrono::steady_clock::now() + bound;
	bool timed_out = false;
	std::array<char, 4096> buf{};
	for (;;) {
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
		    deadline - std::chrono::steady_clock::now());
		if (left.count() <= 0) {
			timed_out = true;
			break;
		}
		pollfd p{fds[0], POLLIN, 0};
		const int ready =
		    poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
		if (ready < 0 && errno != EINTR)
			break;
		if (ready <= 0)
			continue;
		const auto n = ::read(fds[0], buf.data(), buf.size());
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; // EOF: every writer of the pipe is gone
		r.output.append(buf.data(), static_cast<std::size_t>(n));
	}
	// Its output ended; the program may still run (it closed its stdout and hangs).
	int st = 0;
	while (!timed_out) {
		const pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			break;
		if (std::chrono::steady_clock::now() >= deadline)
			timed_out = true;
		else
			std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	if (timed_out) {
		r.output += "\nTIMED OUT: still running after " + std::to_string(bound.count()) +
		            " s: " + command + "\nits processes:\n" + detail::describe_group(pid);
		killpg(pid, SIGKILL);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
		}
	}
	::close(fds[0]);
	r.status = !timed_out && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return r;
}

/** The samples of a metrics file (tests/support/metrics_samples.py: a parser from Debian). */
inline process_result metrics_samples(const std::string &file)
{
	return run("/usr/bin/python3 " RPMEM_SOURCE_DIR "/tests/support/metrics_samples.py " +
	           file);
}

/** The value of the first sample named `name` whose labels contain `labels`, or -1. */
inline double sample_value(const std::string &samples, const std::string &name,
                           const std::string &labels = {})
{
	std::size_t at = 0;
	while ((at = samples.find(name + "{", at)) != std::string::npos) {
		const auto end = samples.find('\n', at);
		const auto line = samples.substr(at, end - at);
		if ((at == 0 || samples[at - 1] == '\n') && line.find(labels) != std::string::npos)
			return std::stod(line.substr(line.rfind(' ') + 1));
		at = end;
	}
	return -1;
}

} // namespace rpmem::test
