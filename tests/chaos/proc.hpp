// SPDX-License-Identifier: BSD-3-Clause
// Processes the chaos driver starts (writers, the operator's tools) and what it reads of
// processes it did not start (their descriptors, threads and mappings).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace rpmem::chaos
{

/** A child with stdout and stderr appended to files (read back whenever) and, optionally, a
 *  pipe on stdin (closing it is how a writer is told to stop). */
class process
{
public:
	/** Starts argv[0] (a path) with this process's environment plus `env` (VAR=value,
	 *  replacing a variable set in both). Throws std::runtime_error. */
	process(const std::vector<std::string> &argv, const std::vector<std::string> &env,
	        const std::filesystem::path &out, const std::filesystem::path &err,
	        bool stdin_pipe = false);
	/** SIGKILLs it if it still runs, and reaps it. */
	~process();
	process(const process &) = delete;
	process &operator=(const process &) = delete;

	pid_t pid() const { return pid_; }
	/** The raw wait status once it ended (without waiting); nullopt while it runs. */
	std::optional<int> poll();
	/** The same, waiting up to `bound`. */
	std::optional<int> wait_for(std::chrono::milliseconds bound);
	void signal(int sig);
	void close_stdin();
	bool running() { return !poll().has_value(); }

private:
	pid_t pid_ = -1;
	int in_ = -1;
	std::optional<int> status_;
};

struct run_result {
	int status = -1; // the raw wait status; -1: it did not end within the bound (killed)
	std::string output;
	double seconds = 0;
	bool exited(int code) const;
	std::string describe() const; // "exit 1", "killed by signal 11", "hung (killed)"
};

/** Runs argv to its end (SIGKILLed after `bound`, a hang detector): status and output. */
run_result run_bounded(const std::vector<std::string> &argv, const std::vector<std::string> &env,
                       const std::filesystem::path &log, std::chrono::seconds bound);

/** Whole lines appended to a file since `*offset` (advanced past them). */
std::vector<std::string> new_lines(const std::filesystem::path &file, std::size_t *offset);
/** The last `n` lines of a file. */
std::string tail(const std::filesystem::path &file, std::size_t n);

/** What a process holds: open descriptors, threads, memory mappings. */
struct holdings {
	long fds = -1, threads = -1, maps = -1;
	std::string describe() const;
	bool operator==(const holdings &) const = default;
};
holdings holdings_of(pid_t pid);

/** A shell-quoted word. */
std::string quote(const std::string &s);

} // namespace rpmem::chaos
