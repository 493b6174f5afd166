// SPDX-License-Identifier: BSD-3-Clause
#include "ssh/child_process.hpp"

#include "ssh/detail.hpp"

#include <rpmem/error.hpp>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace rpmem::ssh::detail
{

namespace
{

void close_fd(int &fd)
{
	if (fd >= 0)
		close(fd);
	fd = -1;
}

/** socketpair()s for the child's fds 0, 1, 2: [i][0] ours, [i][1] the child's. */
struct socket_pairs {
	std::array<std::array<int, 2>, 3> fds{{{-1, -1}, {-1, -1}, {-1, -1}}};

	socket_pairs()
	{
		for (auto &pair : fds) {
			if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair.data()) < 0) {
				int err = errno;
				close_all();
				throw rpmem::error(err,
				                   fmt::format("socketpair: {}", strerror(err)));
			}
			// A child end numbered 0..2 would be clobbered by another dup2: move it up.
			if (pair[1] <= 2) {
				int moved = fcntl(pair[1], F_DUPFD_CLOEXEC, 3);
				close(pair[1]);
				pair[1] = moved;
			}
		}
	}
	~socket_pairs() { close_all(); }
	void close_all()
	{
		for (auto &pair : fds)
			for (auto &fd : pair)
				close_fd(fd);
	}
	int take_ours(std::size_t i)
	{
		int fd = fds[i][0];
		fds[i][0] = -1;
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		return fd;
	}
};

pid_t spawn(const std::vector<std::string> &argv, const socket_pairs &sp)
{
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	for (int i = 0; i < 3; i++)
		posix_spawn_file_actions_adddup2(&actions, sp.fds[static_cast<std::size_t>(i)][1],
		                                 i);
	// Default SIGPIPE and an empty mask: the parent's choices must not leak into ssh.
	posix_spawnattr_t attr;
	posix_spawnattr_init(&attr);
	sigset_t none, pipe_only;
	sigemptyset(&none);
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &pipe_only);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

	std::vector<char *> args;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);

	pid_t pid = -1;
	int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attr);
	if (rc != 0)
		throw rpmem::error(rc, fmt::format("cannot start '{}' (RPMEM_SSH): {}: check the "
		                                   "program name and PATH",
		                                   argv[0], strerror(rc)));
	return pid;
}

} // namespace

child_process::child_process(const std::vector<std::string> &argv)
{
	socket_pairs sp;
	pid_ = spawn(argv, sp);
	in_ = sp.take_ours(0);
	out_ = sp.take_ours(1);
	err_ = sp.take_ours(2);
	// Safe against PID reuse: the child is ours and not reaped yet.
	pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
}

child_process::~child_process()
{
	close_fd(in_);
	close_fd(out_);
	close_fd(err_);
	using std::chrono::milliseconds;
	if (!wait(milliseconds(500))) {
		kill(pid_, SIGTERM);
		if (!wait(milliseconds(500))) {
			kill(pid_, SIGKILL);
			wait(milliseconds(-1));
		}
	}
	close_fd(pidfd_);
}

void child_process::close_stdin()
{
	close_fd(in_);
}

std::optional<int> child_process::wait(std::chrono::milliseconds timeout)
{
	deadline until(timeout);
	while (!status_) {
		int status = 0;
		pid_t rc = waitpid(pid_, &status, WNOHANG);
		if (rc == pid_ || (rc < 0 && errno == ECHILD)) {
			// ECHILD: someone else (a SIGCHLD handler) reaped it; the status is lost.
			status_ = rc == pid_ && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
			break;
		}
		if (until.expired())
			break;
		if (pidfd_ >= 0) {
			pollfd p{pidfd_, POLLIN, 0};
			poll(&p, 1, until.poll_ms());
		} else {
			std::this_thread::sleep_for(
			    std::chrono::milliseconds(std::min(5, std::max(until.poll_ms(5), 1))));
		}
	}
	return status_;
}

} // namespace rpmem::ssh::detail
