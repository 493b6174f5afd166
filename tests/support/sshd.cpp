// SPDX-License-Identifier: BSD-3-Clause
#include "support/sshd.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace rpmem::test
{

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace
{

std::string read_file(const fs::path &p)
{
	std::ifstream in(p);
	std::stringstream ss;
	ss << in.rdbuf();
	return ss.str();
}

void write_file(const fs::path &p, const std::string &text)
{
	std::ofstream out(p, std::ios::trunc);
	out << text;
	if (!out.flush())
		throw std::runtime_error("sshd fixture: cannot write " + p.string());
}

/** posix_spawn with stdin from /dev/null and stdout+stderr appended to log. */
pid_t spawn(const std::vector<std::string> &argv, const fs::path &log)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	std::vector<char *> args;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	pid_t pid = -1;
	int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		throw std::runtime_error(
		    fmt::format("sshd fixture: cannot run {}: {}", argv[0], strerror(rc)));
	return pid;
}

/** Runs a tool to completion; throws with its output when it fails. */
void run(const std::vector<std::string> &argv, const fs::path &dir)
{
	auto log = dir / "tool.log";
	fs::remove(log);
	int status = 0;
	waitpid(spawn(argv, log), &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		throw std::runtime_error(
		    fmt::format("sshd fixture: {} failed: {}", argv[0], read_file(log)));
}

void keygen(const fs::path &key, const std::string &type, const fs::path &dir)
{
	fs::remove(key);
	fs::remove(key.string() + ".pub");
	run({"ssh-keygen", "-q", "-t", type, "-N", "", "-C", "rpmem-test", "-f", key.string()},
	    dir);
}

/** "type base64" of a .pub file, without the comment. */
std::string public_key(const fs::path &key)
{
	std::istringstream in(read_file(key.string() + ".pub"));
	std::string type, blob;
	in >> type >> blob;
	return type + " " + blob;
}

sockaddr_storage make_addr(const std::string &address, std::uint16_t port, socklen_t &len)
{
	sockaddr_storage ss{};
	auto *v4 = reinterpret_cast<sockaddr_in *>(&ss);
	auto *v6 = reinterpret_cast<sockaddr_in6 *>(&ss);
	if (inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		len = sizeof(*v4);
	} else if (inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		len = sizeof(*v6);
	} else {
		throw std::runtime_error("sshd fixture: not a numeric address: " + address);
	}
	return ss;
}

/** True once something on address:port sends an SSH banner. */
bool banner_seen(const std::string &address, std::uint16_t port)
{
	socklen_t len = 0;
	auto ss = make_addr(address, port, len);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok = false;
	if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr *>(&ss), len) == 0) {
		pollfd p{fd, POLLIN, 0};
		char buf[4] = {};
		ok = poll(&p, 1, 2000) == 1 && recv(fd, buf, sizeof(buf), 0) == 4 &&
		     std::memcmp(buf, "SSH-", 4) == 0;
	}
	if (fd >= 0)
		close(fd);
	return ok;
}

std::string known_host_name(const std::string &address, std::uint16_t port)
{
	return fmt::format("[{}]:{}", address, port);
}

/** Starts sshd -D; it gets SIGTERM when this thread ends, so a test killed by a timeout
 *  does not leave a daemon behind. */
pid_t spawn_sshd(const std::string &config, const std::string &log, const fs::path &out)
{
	int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		throw std::runtime_error(
		    fmt::format("sshd fixture: {}: {}", out.string(), strerror(errno)));
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) { // only async-signal-safe calls until exec
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		int in = open("/dev/null", O_RDONLY);
		dup2(in, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execl("/usr/sbin/sshd", "/usr/sbin/sshd", "-D", "-f", config.c_str(), "-E",
		      log.c_str(), static_cast<char *>(nullptr));
		_exit(127);
	}
	int err = errno;
	close(fd);
	if (pid < 0)
		throw std::runtime_error(fmt::format("sshd fixture: fork: {}", strerror(err)));
	return pid;
}

} // namespace

std::uint16_t free_port(const std::string &address)
{
	socklen_t len = 0;
	auto ss = make_addr(address, 0, len);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&ss), len) < 0 ||
	    getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len) < 0)
		throw std::runtime_error(
		    fmt::format("sshd fixture: no free port on {}: {}", address, strerror(errno)));
	close(fd);
	auto port = ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in *>(&ss)->sin_port
	                                    : reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port;
	return ntohs(port);
}

sshd::sshd(std::string address) : sshd(std::move(address), std::string()) {}

sshd::sshd(std::string address, std::string extra_config)
    : address_(std::move(address)), extra_config_(std::move(extra_config))
{
	std::string tmpl = (fs::temp_directory_path() / "rpmem-sshd-XXXXXX").string();
	if (mkdtemp(tmpl.data()) == nullptr)
		throw std::runtime_error(fmt::format("sshd fixture: mkdtemp: {}", strerror(errno)));
	dir_ = tmpl;
	try {
		fs::create_directories("/run/sshd"); // privilege separation dir, else sshd refuses
		// Sessions get HOME={dir}/home: the login shell then skips the machine's own
		// ~/.bashrc (root's here runs pyenv init, ~0.6 s per login and a lock every
		// concurrent login queues on), and rpmemd reads no ~/.rpmemd.conf of the machine.
		fs::create_directories(dir_ / "home");
		keygen(dir_ / "host_key", "ed25519", dir_);
		keygen(dir_ / "client_key", "ed25519", dir_);
		write_file(dir_ / "authorized_keys", public_key(dir_ / "client_key") + "\n");
		for (int attempt = 0; attempt < 5; attempt++) {
			port_ = free_port(address_);
			write_files();
			if (try_start())
				return;
		}
		throw std::runtime_error("sshd fixture: sshd did not start:\n" + log_text());
	} catch (...) {
		stop();
		fs::remove_all(dir_);
		throw;
	}
}

sshd::~sshd()
{
	stop();
	std::error_code ec;
	fs::remove_all(dir_, ec);
}

void sshd::stop()
{
	if (pid_ <= 0)
		return;
	kill(pid_, SIGTERM);
	int status = 0;
	pid_t rc = 0;
	for (int i = 0; i < 200 && (rc = waitpid(pid_, &status, WNOHANG)) == 0; i++)
		std::this_thread::sleep_for(10ms);
	if (rc == 0) { // still running after 2 s
		kill(pid_, SIGKILL);
		waitpid(pid_, &status, 0);
	}
	pid_ = -1;
}

void sshd::start_again()
{
	if (pid_ > 0)
		return;
	if (!try_start())
		throw std::runtime_error(
		    fmt::format("sshd fixture: sshd did not start again on {} port {}:\n{}",
		                address_, port_, log_text()));
}

void sshd::write_files()
{
	write_file(dir_ / "sshd_config",
	           fmt::format(R"(ListenAddress {addr}
Port {port}
HostKey {dir}/host_key
PidFile {dir}/sshd.pid
AuthorizedKeysFile {dir}/authorized_keys
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
PrintMotd no
MaxStartups 100
MaxSessions 100
LogLevel VERBOSE
SetEnv HOME={dir}/home
)",
	                       fmt::arg("addr", address_), fmt::arg("port", port_),
	                       fmt::arg("dir", dir_.string())) +
	               extra_config_);
	write_file(dir_ / "known_hosts",
	           known_host_name(address_, port_) + " " + public_key(dir_ / "host_key") + "\n");
	write_file(dir_ / "ssh_config",
	           fmt::format(R"(Host {alias}
  HostName {addr}
  Port {port}
  User root
  IdentityFile {dir}/client_key
Host *
  UserKnownHostsFile {dir}/known_hosts
  GlobalKnownHostsFile /dev/null
  IdentityFile {dir}/client_key
  IdentitiesOnly yes
  StrictHostKeyChecking yes
  BatchMode yes
  LogLevel ERROR
)",
	                       fmt::arg("alias", alias()), fmt::arg("addr", address_),
	                       fmt::arg("port", port_), fmt::arg("dir", dir_.string())));
	write_file(dir_ / "ssh",
	           fmt::format("#!/bin/sh\nexec /usr/bin/ssh -F '{}' \"$@\"\n", config_file()));
	fs::permissions(dir_ / "ssh",
	                fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
}

bool sshd::try_start()
{
	pid_ = spawn_sshd(path("sshd_config"), path("sshd.log"), dir_ / "sshd.stderr");
	auto until = std::chrono::steady_clock::now() + 10s;
	while (std::chrono::steady_clock::now() < until) {
		int status = 0;
		if (waitpid(pid_, &status, WNOHANG) == pid_) { // died: port taken or bad config
			pid_ = -1;
			return false;
		}
		if (banner_seen(address_, port_))
			return true;
		std::this_thread::sleep_for(10ms);
	}
	throw std::runtime_error("sshd fixture: sshd does not answer within 10 s:\n" + log_text());
}

ssh::destination sshd::target() const
{
	return ssh::destination{"root", address_, port_};
}

ssh::options sshd::client_options() const
{
	ssh::options o;
	o.config_file = config_file();
	o.known_hosts_file = known_hosts();
	o.identity_files = {client_key()};
	o.connect_timeout = 10s;
	return o;
}

std::string sshd::log_text() const
{
	return read_file(dir_ / "sshd.log") + read_file(dir_ / "sshd.stderr");
}

std::string sshd::make_key(const std::string &name, const std::string &type) const
{
	keygen(dir_ / name, type, dir_);
	return path(name);
}

std::string sshd::make_wrong_known_hosts(const std::string &name, const std::string &type) const
{
	auto key = make_key(name + ".key", type);
	write_file(dir_ / name, known_host_name(address_, port_) + " " + public_key(key) + "\n");
	return path(name);
}

std::string sshd::make_empty_known_hosts(const std::string &name) const
{
	write_file(dir_ / name, "");
	return path(name);
}

} // namespace rpmem::test
