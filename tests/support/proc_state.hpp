// SPDX-License-Identifier: BSD-3-Clause
// The scheduler state of a process or thread, from /proc: what tests wait for before they
// act on a stopped or sleeping peer ('R' running, 'S' sleeping, 'T' stopped, 't' traced...).
#pragma once

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/types.h>
#include <thread>

namespace rpmem::test
{

/** The state letter of a /proc/.../stat file (the field after the command's closing
 * parenthesis, which may itself hold ')' and spaces); '?' when it cannot be read. */
inline char proc_state(const std::string &stat_path)
{
	std::ifstream f(stat_path);
	std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
	const auto paren = s.rfind(')');
	return paren != std::string::npos && paren + 2 < s.size() ? s[paren + 2] : '?';
}

/** The state of thread `tid` of process `pid`. */
inline char thread_state(pid_t pid, pid_t tid)
{
	return proc_state("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) +
	                  "/stat");
}

/** Waits (bounded: 10 s) until every thread of pid is stopped (state T), as a SIGSTOP leaves
 *  them. kill() returns when the signal is queued, not when the threads stopped: the group
 *  stop begins only when one thread of the process is scheduled to take the signal, and on a
 *  loaded machine the others run on meanwhile, milliseconds later. */
inline bool wait_stopped(pid_t pid)
{
	for (int i = 0; i < 1000; ++i) {
		bool all = true, any = false;
		std::error_code ec;
		for (const auto &e : std::filesystem::directory_iterator(
		         "/proc/" + std::to_string(pid) + "/task", ec)) {
			const char state = proc_state(e.path() / "stat");
			any = true;
			if (state != 'T' && state != 't')
				all = false;
		}
		if (any && all)
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	return false;
}

/** SIGSTOPs pid and returns once all its threads stopped (wait_stopped); false if either
 *  failed. What a test does after a freeze may then assume the process does nothing. */
inline bool freeze(pid_t pid)
{
	return ::kill(pid, SIGSTOP) == 0 && wait_stopped(pid);
}

} // namespace rpmem::test
