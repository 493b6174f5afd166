// SPDX-License-Identifier: BSD-3-Clause
#include "chaos/cluster.hpp"

#include "support/netns.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/statvfs.h>
#include <unistd.h>

namespace rpmem::chaos
{

namespace
{

std::string slurp(const fs::path &p)
{
	std::ifstream in(p, std::ios::binary);
	std::stringstream ss;
	ss << in.rdbuf();
	return ss.str();
}

/** A shell command's exit status, its output discarded (cleanup: failures are expected). */
int quiet(const std::string &command)
{
	return std::system((command + " >/dev/null 2>&1").c_str());
}

std::string in_ns(const std::string &ns, const std::string &command)
{
	return "ip netns exec " + ns + " " + command;
}

/** The start time of a process (clock ticks since boot), 0 if it is gone. */
unsigned long long start_time(pid_t pid)
{
	const auto stat = slurp(fmt::format("/proc/{}/stat", pid));
	const auto close = stat.rfind(')');
	if (close == std::string::npos)
		return 0;
	std::istringstream rest(stat.substr(close + 2));
	std::string field;
	for (int i = 3; i <= 22 && rest >> field; ++i)
		if (i == 22)
			return std::stoull(field);
	return 0;
}

} // namespace

std::string host::target() const
{
	return fmt::format("root@{}:{}", addr, sshd ? sshd->port() : 0);
}

std::vector<pid_t> find_rpmemds(const std::string &needle)
{
	std::vector<std::pair<unsigned long long, pid_t>> found;
	std::error_code ec;
	for (const auto &e : fs::directory_iterator("/proc", ec)) {
		const auto name = e.path().filename().string();
		if (name.find_first_not_of("0123456789") != std::string::npos)
			continue;
		std::error_code lec;
		const auto exe = fs::read_symlink(e.path() / "exe", lec).filename().string();
		if (exe.rfind("rpmemd", 0) != 0)
			continue;
		auto cmdline = slurp(e.path() / "cmdline");
		std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
		if (cmdline.find(needle) == std::string::npos)
			continue;
		const auto pid = static_cast<pid_t>(std::stol(name));
		found.emplace_back(start_time(pid), pid);
	}
	std::sort(found.begin(), found.end());
	std::vector<pid_t> out;
	for (const auto &[t, pid] : found)
		out.push_back(pid);
	return out;
}

cluster::cluster(const fs::path &run_dir, int hosts, std::size_t fs_mb)
{
	const auto pid = static_cast<unsigned>(getpid());
	client_ns_ = fmt::format("rpmemch{}c", pid);
	try {
		test::run_checked("ip netns add " + client_ns_);
		test::run_checked(in_ns(client_ns_, "ip link set lo up"));
		for (int i = 0; i < hosts; ++i)
			add_host(i, run_dir, fs_mb);
		write_client_files(run_dir);
	} catch (...) {
		teardown();
		throw;
	}
}

cluster::~cluster()
{
	teardown();
}

void cluster::add_host(int i, const fs::path &run_dir, std::size_t fs_mb)
{
	const auto pid = static_cast<unsigned>(getpid());
	hosts_.emplace_back();
	host &h = hosts_.back();
	h.index = i;
	// The route first: from here on the subnet cannot leave the machine. One that exists
	// already is another run's: take the next block.
	for (unsigned attempt = 0; attempt < 60 && h.subnet.empty(); ++attempt) {
		const unsigned n = ((pid + attempt) % 60) * 4 + 1 + static_cast<unsigned>(i);
		const auto subnet = fmt::format("10.212.{}.0/24", n);
		if (quiet("ip route add blackhole " + subnet) == 0) {
			routes_.push_back(subnet);
			h.subnet = subnet;
			h.client_addr = fmt::format("10.212.{}.1", n);
			h.addr = fmt::format("10.212.{}.2", n);
		}
	}
	if (h.subnet.empty())
		throw std::runtime_error("no free 10.212.N.0/24 subnet for a blackhole route");
	h.ns = fmt::format("rpmemch{}h{}", pid, i);
	h.veth_client = fmt::format("rcc{}x{}", pid, i);
	h.veth_host = fmt::format("rch{}x{}", pid, i);
	test::run_checked("ip netns add " + h.ns);
	test::run_checked(in_ns(h.ns, "ip link set lo up"));
	test::run_checked(
	    fmt::format("ip link add {} type veth peer name {}", h.veth_client, h.veth_host));
	test::run_checked(fmt::format("ip link set {} netns {}", h.veth_client, client_ns_));
	test::run_checked(fmt::format("ip link set {} netns {}", h.veth_host, h.ns));
	for (auto [ns, dev, addr] : {std::tuple{client_ns_, h.veth_client, h.client_addr},
	                             std::tuple{h.ns, h.veth_host, h.addr}}) {
		test::run_checked(in_ns(ns, fmt::format("ip addr add {}/24 dev {}", addr, dev)));
		test::run_checked(in_ns(ns, fmt::format("ip link set {} up", dev)));
	}
	h.fs = run_dir / fmt::format("host{}", i);
	fs::create_directories(h.fs);
	test::run_checked(fmt::format("mount -t tmpfs -o size={}m,mode=0755 rpmem-chaos {}", fs_mb,
	                              h.fs.string()));
	h.mounted = true;
	fs::create_directories(h.fs / "sessions");
	// As troubleshooting.md advises replica nodes: a session whose client is gone with the
	// network (its FIN lost while a link was down) ends after 3 unanswered keepalives 5 s
	// apart, not after TCP's retransmissions give up (~15 min). Live clients answer them:
	// libssh replies to keepalive@openssh.com whenever it reads, and librpmem pings rpmemd
	// every RPMEM_KEEPALIVE (1.5 s).
	test::in_netns(h.ns, [&] {
		h.sshd = std::make_unique<test::sshd>(
		    h.addr, "ClientAliveInterval 5\nClientAliveCountMax 3\n");
	});
	// "$HOME/rpmemd": this host's rpmemd, on this host's tmpfs.
	const auto script = h.sshd->dir() / "home" / "rpmemd";
	std::ofstream(script) << "#!/bin/sh\nexec " << rpmemd_command(i) << " \"$@\"\n";
	fs::permissions(script, fs::perms::owner_all | fs::perms::group_read |
	                            fs::perms::group_exec | fs::perms::others_read |
	                            fs::perms::others_exec);
	if (i > 0) // one client key for every host
		std::ofstream(h.sshd->dir() / "authorized_keys", std::ios::app)
		    << slurp(hosts_[0].sshd->client_key() + ".pub");
}

std::string cluster::rpmemd_command(int i) const
{
	const auto &fsdir = at(i).fs.string();
	std::string env;
	if (const char *extra = std::getenv("RPMEM_TEST_DAEMON_ENV"))
		env = std::string("env ") + extra + " ";
	return fmt::format("{}{} --poolset-dir={} --log-file={}/rpmemd.log --log-level=info "
	                   "--status-dir={}/sessions",
	                   env, RPMEM_TEST_RPMEMD, fsdir, fsdir, fsdir);
}

void cluster::write_client_files(const fs::path &run_dir)
{
	known_hosts_ = run_dir / "known_hosts";
	ssh_config_ = run_dir / "ssh_config";
	identity_ = hosts_[0].sshd->client_key();
	{
		std::ofstream kh(known_hosts_);
		for (const auto &h : hosts_)
			kh << slurp(h.sshd->known_hosts());
	}
	std::ofstream(ssh_config_) << fmt::format(R"(Host *
  User root
  UserKnownHostsFile {}
  GlobalKnownHostsFile /dev/null
  IdentityFile {}
  IdentitiesOnly yes
  StrictHostKeyChecking yes
  BatchMode yes
  LogLevel ERROR
)",
	                                          known_hosts_.string(), identity_.string());
}

std::vector<std::string> cluster::in_client(std::vector<std::string> argv) const
{
	argv.insert(argv.begin(), {"/usr/sbin/ip", "netns", "exec", client_ns_});
	return argv;
}

std::vector<std::string> cluster::client_env() const
{
	return {"RPMEM_CMD=$HOME/rpmemd", "RPMEM_SSH_CONFIG=" + ssh_config_.string(),
	        "RPMEM_SSH_KNOWN_HOSTS=" + known_hosts_.string(),
	        "RPMEM_SSH_IDENTITY=" + identity_.string()};
}

void cluster::set_link(int i, bool up)
{
	auto &h = at(i);
	test::run_checked(
	    in_ns(client_ns_, fmt::format("ip link set {} {}", h.veth_client, up ? "up" : "down")));
	h.link_down = !up;
}

void cluster::set_slow(int i, std::uint64_t kbit)
{
	auto &h = at(i);
	for (auto [ns, dev] :
	     {std::pair{client_ns_, h.veth_client}, std::pair{h.ns, h.veth_host}}) {
		if (kbit == 0)
			quiet(in_ns(ns, fmt::format("tc qdisc del dev {} root", dev)));
		else
			test::run_checked(in_ns(
			    ns,
			    fmt::format("tc qdisc replace dev {} root tbf rate {}kbit burst 16kb "
			                "latency 400ms",
			                dev, kbit)));
	}
	h.slow = kbit != 0;
}

void cluster::stop_sshd(int i)
{
	auto &h = at(i);
	h.sshd->stop_listening();
	h.sshd_stopped = true;
}

void cluster::start_sshd(int i)
{
	auto &h = at(i);
	test::in_netns(h.ns, [&] { h.sshd->start_again(); });
	h.sshd_stopped = false;
}

std::uint64_t cluster::fill(int i)
{
	auto &h = at(i);
	const auto path = h.fs / "filler";
	const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		throw std::runtime_error(
		    fmt::format("{}: {}", path.string(), std::strerror(errno)));
	struct statvfs st {
	};
	std::uint64_t size = 0;
	if (fstatvfs(fd, &st) == 0) {
		size = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
		if (size > 0 && posix_fallocate(fd, 0, static_cast<off_t>(size)) != 0)
			size = 0;
	}
	// Whatever is left, a page at a time, until the file system says it is full.
	while (posix_fallocate(fd, static_cast<off_t>(size), 4096) == 0)
		size += 4096;
	::close(fd);
	h.full = true;
	return size;
}

void cluster::unfill(int i)
{
	auto &h = at(i);
	std::error_code ec;
	fs::remove(h.fs / "filler", ec);
	h.full = false;
}

void cluster::heal(int i)
{
	auto &h = at(i);
	for (pid_t pid : h.stopped)
		::kill(pid, SIGCONT);
	h.stopped.clear();
	h.rpmemd_stopped = false;
	if (h.link_down)
		set_link(i, true);
	if (h.slow)
		set_slow(i, 0);
	if (h.sshd_stopped)
		start_sshd(i);
	if (h.full)
		unfill(i);
}

std::vector<pid_t> cluster::rpmemds(int i) const
{
	return find_rpmemds("--poolset-dir=" + at(i).fs.string() + " ");
}

namespace
{

/** A command's standard output. */
std::string output_of(const std::string &command)
{
	std::string out;
	if (FILE *p = popen(command.c_str(), "r")) {
		char buf[4096];
		std::size_t n;
		while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
			out.append(buf, n);
		pclose(p);
	}
	return out;
}

/** ss's lines (state, local, peer, process) of the TCP sockets in namespace `ns`. */
std::vector<std::string> tcp_sockets(const std::string &ns)
{
	std::vector<std::string> lines;
	std::istringstream in(output_of(in_ns(ns, "ss -tanpH 2>/dev/null")));
	for (std::string line; std::getline(in, line);)
		lines.push_back(line);
	return lines;
}

/** The whitespace-separated fields of an ss line. */
std::vector<std::string> fields(const std::string &line)
{
	std::istringstream in(line);
	std::vector<std::string> f;
	for (std::string w; in >> w;)
		f.push_back(w);
	return f;
}

/** How long ago process `pid` started, in seconds. */
double age_s(const std::string &pid)
{
	const auto started = start_time(static_cast<pid_t>(std::stol(pid)));
	double uptime = 0;
	std::istringstream(slurp("/proc/uptime")) >> uptime;
	return uptime - static_cast<double>(started) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

} // namespace

std::string cluster::processes_in_namespaces() const
{
	std::string out;
	std::vector<std::string> names{client_ns_};
	for (const auto &h : hosts_)
		names.push_back(h.ns);
	// Who holds the other end of a leftover's connections: a process of the client's
	// namespace (a client that never closed its session), or nobody (a connection whose
	// close was lost while a link was down: sshd still waits on it).
	const auto client_sockets = tcp_sockets(client_ns_);
	for (const auto &ns : names) {
		FILE *p = popen(("ip netns pids " + ns + " 2>/dev/null").c_str(), "r");
		if (!p)
			continue;
		std::vector<std::string> pids;
		char line[64];
		while (std::fgets(line, sizeof line, p))
			pids.emplace_back(line, std::strcspn(line, "\n"));
		pclose(p);
		const auto sockets = tcp_sockets(ns);
		for (const auto &pid : pids) {
			auto cmd = slurp("/proc/" + pid + "/cmdline");
			std::replace(cmd.begin(), cmd.end(), '\0', ' ');
			out += fmt::format("  {}: pid {} {}(started {:.0f} s ago)\n", ns, pid, cmd,
			                   age_s(pid));
			for (const auto &sock : sockets) {
				if (sock.find(fmt::format("pid={},", pid)) == std::string::npos)
					continue;
				const auto f =
				    fields(sock); // state recv-q send-q local peer process
				if (f.size() < 5)
					continue;
				std::string holder = "no socket in the client's namespace has it";
				for (const auto &c : client_sockets) {
					const auto cf = fields(c);
					if (cf.size() >= 5 && cf[3] == f[4] && cf[4] == f[3])
						holder = "held there by " +
						         (cf.size() > 5 ? cf[5] : cf[0]);
				}
				out += fmt::format(
				    "      tcp {} {} -> {} (send queue {}): the other end: "
				    "{}\n",
				    f[0], f[3], f[4], f[2], holder);
			}
		}
	}
	return out;
}

std::string cluster::teardown() noexcept
{
	if (torn_down_)
		return {};
	torn_down_ = true;
	std::string left;
	try {
		for (auto &h : hosts_) {
			for (pid_t pid : h.stopped)
				::kill(pid, SIGCONT);
			h.sshd.reset(); // stops sshd, removes its directory
		}
		std::vector<std::string> names{client_ns_};
		for (const auto &h : hosts_)
			names.push_back(h.ns);
		for (const auto &ns : names) {
			if (ns.empty())
				continue;
			quiet("ip netns pids " + ns + " | xargs -r kill -9");
			if (quiet("ip netns del " + ns) != 0 && fs::exists("/run/netns/" + ns))
				left += "namespace " + ns + " not deleted\n";
		}
		for (const auto &h : hosts_) {
			if (!h.veth_client.empty())
				quiet("ip link del " + h.veth_client); // only if moving it failed
			if (h.mounted && quiet("umount " + h.fs.string()) != 0 &&
			    quiet("umount -l " + h.fs.string()) != 0)
				left += "tmpfs " + h.fs.string() + " not unmounted\n";
		}
		for (const auto &r : routes_)
			if (quiet("ip route del blackhole " + r) != 0)
				left += "blackhole route " + r + " not deleted\n";
	} catch (const std::exception &e) {
		left += std::string("teardown: ") + e.what() + "\n";
	}
	return left;
}

} // namespace rpmem::chaos
