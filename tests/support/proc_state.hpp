// SPDX-License-Identifier: BSD-3-Clause
// The scheduler state of a process or thread, from /proc: what tests wait for before they
// act on a stopped or sleeping peer ('R' running, 'S' sleeping, 'T' stopped, 't' traced...).
#pragma once

#include <fstream>
#include <iterator>
#include <string>
#include <sys/types.h>

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

} // namespace rpmem::test
