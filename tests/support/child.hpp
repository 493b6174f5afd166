// SPDX-License-Identifier: BSD-3-Clause
// A child process with pipes on stdin and stdout (stderr to a file), for tests that drive
// rpmemd or a client program directly: line and byte reads with timeouts, kill, exit status.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <sys/types.h>
#include <vector>

namespace rpmem::test
{

class child
{
public:
	/** Starts argv[0] (a path) with the current environment plus `env` (VAR=value, replacing a
	 * variable set in both), stderr appended to `stderr_file` (/dev/null when empty). Throws
	 * std::runtime_error. */
	child(const std::vector<std::string> &argv, const std::vector<std::string> &env = {},
	      const std::string &stderr_file = {});
	/** SIGKILLs the child if it still runs and reaps it. */
	~child();
	child(const child &) = delete;
	child &operator=(const child &) = delete;

	pid_t pid() const { return pid_; }
	/** Writes everything; false when the child closed its stdin (EPIPE). */
	bool write(std::span<const std::uint8_t> data);
	void close_stdin();
	/** The next line of stdout without its newline; nullopt on EOF or timeout. */
	std::optional<std::string> read_line(std::chrono::milliseconds timeout);
	/** Exactly n bytes of stdout; fewer on EOF or timeout. */
	std::vector<std::uint8_t> read_bytes(std::size_t n, std::chrono::milliseconds timeout);
	/** True once stdout reached EOF within timeout (after discarding what came before). */
	bool wait_eof(std::chrono::milliseconds timeout);

	void kill(int sig);
	/** The raw wait status once the child ended within timeout; nullopt if it still runs. */
	std::optional<int> wait(std::chrono::milliseconds timeout);

private:
	bool fill(std::chrono::steady_clock::time_point deadline);

	pid_t pid_ = -1;
	int in_ = -1;
	int out_ = -1;
	std::string buffer_;
	bool eof_ = false;
	std::optional<int> status_;
};

} // namespace rpmem::test
