// SPDX-License-Identifier: BSD-3-Clause
// A child process whose stdin, stdout and stderr are AF_UNIX stream sockets (PMDK's plumbing:
// sockets rather than pipes so writes can use MSG_NOSIGNAL). Internal to the ssh part.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace rpmem::ssh::detail
{

class child_process
{
public:
	/** posix_spawnp(argv[0]) with 0/1/2 connected to this object; throws rpmem::error with
	 *  the spawn errno (ENOENT: no such program) naming the program. */
	explicit child_process(const std::vector<std::string> &argv);
	/** Closes our ends, waits briefly, then SIGTERM, then SIGKILL: never hangs. */
	~child_process();
	child_process(const child_process &) = delete;
	child_process &operator=(const child_process &) = delete;

	int stdin_fd() const { return in_; }   ///< non-blocking; -1 once closed
	int stdout_fd() const { return out_; } ///< non-blocking
	int stderr_fd() const { return err_; } ///< non-blocking
	void close_stdin();

	/** Waits up to timeout (negative: forever) for the child to end: its exit status 0..255,
	 *  -1 if a signal killed it (or another waiter reaped it), nothing while it still runs. */
	std::optional<int> wait(std::chrono::milliseconds timeout);

private:
	pid_t pid_ = -1;
	int pidfd_ = -1; // readable when the child ends; -1 if the kernel lacks pidfd_open
	int in_ = -1, out_ = -1, err_ = -1;
	std::optional<int> status_;
};

} // namespace rpmem::ssh::detail
