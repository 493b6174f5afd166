// SPDX-License-Identifier: BSD-3-Clause
#include "chaos/proc.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace rpmem::chaos
{

namespace fs = std::filesystem;

process::process(const std::vector<std::string> &argv, const std::vector<std::string> &env,
                 const fs::path &out, const fs::path &err, bool stdin_pipe)
{
	std::map<std::string, std::string> vars;
	for (char **e = environ; *e; ++e) {
		const std::string kv(*e);
		vars[kv.substr(0, kv.find('='))] = kv;
	}
	for (const auto &kv : env)
		vars[kv.substr(0, kv.find('='))] = kv;
	std::vector<char *> envp;
	for (auto &[k, kv] : vars)
		envp.push_back(kv.data());
	envp.push_back(nullptr);
	std::vector<char *> args;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);

	int fds[2] = {-1, -1};
	if (stdin_pipe && pipe2(fds, O_CLOEXEC) != 0)
		throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (stdin_pipe)
		posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
	else
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
	posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
	const int rc = posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), envp.data());
	posix_spawn_file_actions_destroy(&fa);
	if (stdin_pipe)
		::close(fds[0]);
	if (rc != 0) {
		if (stdin_pipe)
			::close(fds[1]);
		throw std::runtime_error(
		    fmt::format("cannot run {}: {}", argv[0], std::strerror(rc)));
	}
	in_ = stdin_pipe ? fds[1] : -1;
}

process::~process()
{
	close_stdin();
	if (!poll()) {
		::kill(pid_, SIGKILL);
		wait_for(std::chrono::milliseconds(-1));
	}
}

std::optional<int> process::poll()
{
	if (status_ || pid_ <= 0)
		return status_;
	int st = 0;
	const pid_t r = waitpid(pid_, &st, WNOHANG);
	if (r == pid_)
		status_ = st;
	return status_;
}

std::optional<int> process::wait_for(std::chrono::milliseconds bound)
{
	if (bound.count() < 0) {
		int st = 0;
		while (!status_ && waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
		}
		if (!status_)
			status_ = st;
		return status_;
	}
	const auto until = std::chrono::steady_clock::now() + bound;
	while (!poll() && std::chrono::steady_clock::now() < until)
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	return status_;
}

void process::signal(int sig)
{
	if (!poll())
		::kill(pid_, sig);
}

void process::close_stdin()
{
	if (in_ >= 0)
		::close(in_);
	in_ = -1;
}

bool run_result::exited(int code) const
{
	return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

std::string run_result::describe() const
{
	if (status < 0)
		return "hung (killed)";
	if (WIFEXITED(status))
		return fmt::format("exit {}", WEXITSTATUS(status));
	if (WIFSIGNALED(status))
		return fmt::format("killed by signal {}", WTERMSIG(status));
	return fmt::format("status {:#x}", status);
}

run_result run_bounded(const std::vector<std::string> &argv, const std::vector<std::string> &env,
                       const fs::path &log, std::chrono::seconds bound)
{
	std::error_code ec;
	fs::remove(log, ec);
	run_result r;
	const auto start = std::chrono::steady_clock::now();
	{
		process p(argv, env, log, log);
		if (auto st = p.wait_for(bound))
			r.status = *st;
		else
			p.signal(SIGKILL);
	}
	r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	std::ifstream in(log);
	std::stringstream ss;
	ss << in.rdbuf();
	r.output = ss.str();
	return r;
}

std::vector<std::string> new_lines(const fs::path &file, std::size_t *offset)
{
	std::vector<std::string> out;
	std::ifstream in(file, std::ios::binary);
	if (!in)
		return out;
	in.seekg(static_cast<std::streamoff>(*offset));
	std::string line;
	while (std::getline(in, line)) {
		if (in.eof())
			break; // not whole yet
		*offset += line.size() + 1;
		out.push_back(line);
	}
	return out;
}

std::string tail(const fs::path &file, std::size_t n)
{
	std::ifstream in(file, std::ios::binary);
	std::vector<std::string> lines;
	for (std::string line; std::getline(in, line);)
		lines.push_back(line);
	std::string out;
	for (std::size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i)
		out += "    " + lines[i] + "\n";
	return out;
}

std::string holdings::describe() const
{
	return fmt::format("{} descriptors, {} threads, {} mappings", fds, threads, maps);
}

holdings holdings_of(pid_t pid)
{
	holdings h;
	const fs::path proc = fmt::format("/proc/{}", pid);
	auto count = [](const fs::path &dir) {
		std::error_code ec;
		long n = 0;
		for (auto it = fs::directory_iterator(dir, ec);
		     !ec && it != fs::directory_iterator(); it.increment(ec))
			++n;
		return ec ? -1L : n;
	};
	h.fds = count(proc / "fd");
	h.threads = count(proc / "task");
	std::ifstream maps(proc / "maps");
	if (maps) {
		h.maps = 0;
		for (std::string line; std::getline(maps, line);)
			++h.maps;
	}
	return h;
}

std::string quote(const std::string &s)
{
	std::string out = "'";
	for (char c : s)
		out += c == '\'' ? std::string("'\\''") : std::string(1, c);
	return out + "'";
}

} // namespace rpmem::chaos
