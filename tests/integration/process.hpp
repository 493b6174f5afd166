// SPDX-License-Identifier: BSD-3-Clause
// Running a real program (pmempool, an example) from a test: its exit status and output.
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace rpmem::test
{

struct process_result {
	int status = -1;    // exit status, or -1 when it did not exit normally
	std::string output; // stdout and stderr together
};

/** Runs `command` with /bin/sh; `env` is a prefix of VAR=value words. */
inline process_result run(const std::string &command, const std::string &env = {})
{
	std::string line = (env.empty() ? "" : "env " + env + " ") + command + " 2>&1";
	process_result r;
	FILE *p = popen(line.c_str(), "r");
	if (!p)
		return r;
	std::array<char, 4096> buf{};
	std::size_t n;
	while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
		r.output.append(buf.data(), n);
	int st = pclose(p);
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
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
