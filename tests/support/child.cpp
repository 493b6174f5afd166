// SPDX-License-Identifier: BSD-3-Clause
#include "support/child.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace rpmem::test
{

using namespace std::chrono_literals;

child::child(const std::vector<std::string> &argv, const std::vector<std::string> &env,
             const std::string &stderr_file)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
		throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2,
	                                 stderr_file.empty() ? "/dev/null" : stderr_file.c_str(),
	                                 O_WRONLY | O_CREAT | O_APPEND, 0600);
	// `env` overrides: a variable set twice would be read as its first value by getenv.
	auto name_of = [](const std::string &kv) { return kv.substr(0, kv.find('=') + 1); };
	std::vector<std::string> envs;
	for (char **e = environ; *e; ++e) {
		std::string kv = *e;
		bool overridden = false;
		for (const auto &x : env)
			overridden = overridden || name_of(x) == name_of(kv);
		if (!overridden)
			envs.push_back(std::move(kv));
	}
	envs.insert(envs.end(), env.begin(), env.end());
	std::vector<char *> args, envp;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	for (const auto &e : envs)
		envp.push_back(const_cast<char *>(e.c_str()));
	envp.push_back(nullptr);
	int rc = posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), envp.data());
	posix_spawn_file_actions_destroy(&fa);
	::close(in[0]);
	::close(out[1]);
	in_ = in[1];
	out_ = out[0];
	if (rc != 0) {
		::close(in_);
		::close(out_);
		throw std::runtime_error(
		    fmt::format("cannot start {}: {}", argv.at(0), std::strerror(rc)));
	}
}

child::~child()
{
	if (!status_) {
		::kill(pid_, SIGKILL);
		int st = 0;
		waitpid(pid_, &st, 0);
	}
	if (in_ >= 0)
		::close(in_);
	::close(out_);
}

bool child::write(std::span<const std::uint8_t> data)
{
	auto old = std::signal(SIGPIPE, SIG_IGN);
	std::size_t done = 0;
	while (done < data.size()) {
		ssize_t n = ::write(in_, data.data() + done, data.size() - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += static_cast<std::size_t>(n);
	}
	std::signal(SIGPIPE, old);
	return done == data.size();
}

void child::close_stdin()
{
	if (in_ >= 0)
		::close(in_);
	in_ = -1;
}

bool child::fill(std::chrono::steady_clock::time_point deadline)
{
	if (eof_)
		return false;
	auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
	    deadline - std::chrono::steady_clock::now());
	pollfd p{out_, POLLIN, 0};
	if (poll(&p, 1, static_cast<int>(std::max<long long>(left.count(), 0))) <= 0)
		return false;
	char buf[4096];
	ssize_t n = ::read(out_, buf, sizeof(buf));
	if (n <= 0) {
		eof_ = n == 0 || errno != EINTR;
		return false;
	}
	buffer_.append(buf, static_cast<std::size_t>(n));
	return true;
}

std::optional<std::string> child::read_line(std::chrono::milliseconds timeout)
{
	auto deadline = std::chrono::steady_clock::now() + timeout;
	for (;;) {
		auto nl = buffer_.find('\n');
		if (nl != std::string::npos) {
			std::string line = buffer_.substr(0, nl);
			buffer_.erase(0, nl + 1);
			return line;
		}
		if (!fill(deadline) && (eof_ || std::chrono::steady_clock::now() >= deadline))
			return std::nullopt;
	}
}

std::vector<std::uint8_t> child::read_bytes(std::size_t n, std::chrono::milliseconds timeout)
{
	auto deadline = std::chrono::steady_clock::now() + timeout;
	while (buffer_.size() < n) {
		if (!fill(deadline) && (eof_ || std::chrono::steady_clock::now() >= deadline))
			break;
	}
	std::size_t k = std::min(n, buffer_.size());
	std::vector<std::uint8_t> out(buffer_.begin(), buffer_.begin() + static_cast<long>(k));
	buffer_.erase(0, k);
	return out;
}

bool child::wait_eof(std::chrono::milliseconds timeout)
{
	auto deadline = std::chrono::steady_clock::now() + timeout;
	while (!eof_) {
		if (!fill(deadline) && !eof_ && std::chrono::steady_clock::now() >= deadline)
			return false;
		buffer_.clear();
	}
	return true;
}

void child::kill(int sig)
{
	if (!status_)
		::kill(pid_, sig);
}

std::optional<int> child::wait(std::chrono::milliseconds timeout)
{
	auto deadline = std::chrono::steady_clock::now() + timeout;
	while (!status_) {
		int st = 0;
		if (waitpid(pid_, &st, WNOHANG) == pid_) {
			status_ = st;
			break;
		}
		if (std::chrono::steady_clock::now() >= deadline)
			break;
		std::this_thread::sleep_for(10ms);
	}
	return status_;
}

} // namespace rpmem::test
