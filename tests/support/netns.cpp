// SPDX-License-Identifier: BSD-3-Clause
#include "support/netns.hpp"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <stdexcept>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>
#include <utility>

namespace rpmem::test
{

namespace
{

struct result {
	int status = -1;
	std::string output;
};

result run_shell(const std::string &command)
{
	result r;
	FILE *p = popen((command + " 2>&1").c_str(), "r");
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

class fd_guard
{
public:
	explicit fd_guard(int fd) : fd_(fd) {}
	~fd_guard()
	{
		if (fd_ >= 0)
			::close(fd_);
	}
	fd_guard(const fd_guard &) = delete;
	fd_guard &operator=(const fd_guard &) = delete;
	int get() const { return fd_; }

private:
	int fd_;
};

} // namespace

std::string run_checked(const std::string &command)
{
	auto r = run_shell(command);
	if (r.status != 0)
		throw std::runtime_error(
		    fmt::format("'{}' failed (exit status {}): {}", command, r.status, r.output));
	return r.output;
}

bool netns_pair::available(std::string *why)
{
	std::string name = fmt::format("rpmemprobe{}", getpid());
	auto r = run_shell("ip netns add " + name);
	if (r.status == 0) {
		run_shell("ip netns del " + name);
		return true;
	}
	if (why)
		*why =
		    fmt::format("'ip netns add' failed (exit status {}): {}", r.status, r.output);
	return false;
}

netns_pair::netns_pair()
{
	auto pid = static_cast<unsigned>(getpid());
	unsigned n = pid % 250 + 1;
	client_ns_ = fmt::format("rpmemc{}", pid);
	server_ns_ = fmt::format("rpmems{}", pid);
	client_veth_ = fmt::format("rvc{}", pid);
	server_veth_ = fmt::format("rvs{}", pid);
	subnet_ = fmt::format("10.211.{}.0/24", n);
	client_addr_ = fmt::format("10.211.{}.1", n);
	server_addr_ = fmt::format("10.211.{}.2", n);
	try {
		// The route first: from here on the subnet cannot leave the machine.
		run_checked("ip route replace blackhole " + subnet_);
		route_added_ = true;
		run_checked("ip netns add " + client_ns_);
		run_checked("ip netns add " + server_ns_);
		run_checked(fmt::format("ip link add {} type veth peer name {}", client_veth_,
		                        server_veth_));
		run_checked(fmt::format("ip link set {} netns {}", client_veth_, client_ns_));
		run_checked(fmt::format("ip link set {} netns {}", server_veth_, server_ns_));
		for (auto [ns, dev, addr] : {std::tuple{client_ns_, client_veth_, client_addr_},
		                             std::tuple{server_ns_, server_veth_, server_addr_}}) {
			auto x = "ip netns exec " + ns + " ";
			run_checked(x + "ip link set lo up");
			run_checked(fmt::format("{}ip addr add {}/24 dev {}", x, addr, dev));
			run_checked(fmt::format("{}ip link set {} up", x, dev));
		}
	} catch (...) {
		cleanup();
		throw;
	}
}

netns_pair::~netns_pair()
{
	cleanup();
}

void netns_pair::cleanup() noexcept
{
	run_shell("ip netns del " + client_ns_);
	run_shell("ip netns del " + server_ns_);
	run_shell("ip link del " + client_veth_); // only if moving it failed
	if (route_added_)
		run_shell("ip route del blackhole " + subnet_);
}

void netns_pair::set_link(bool up)
{
	run_checked(
	    fmt::format("{}ip link set {} {}", exec_client(), client_veth_, up ? "up" : "down"));
}

void netns_pair::set_rate(unsigned kbit, std::uint16_t spared_port)
{
	// The client's end sends to the port, the server's end from it.
	for (const auto &[exec, dev, match] : {std::tuple{exec_client(), client_veth_, "dport"},
	                                       std::tuple{exec_server(), server_veth_, "sport"}}) {
		run_checked(
		    fmt::format("{}tc qdisc del dev {} root 2>/dev/null || true", exec, dev));
		if (kbit == 0)
			continue;
		if (spared_port == 0) {
			run_checked(
			    fmt::format("{}tc qdisc add dev {} root tbf rate {}kbit burst 16kb "
			                "latency 400ms",
			                exec, dev, kbit));
			continue;
		}
		// htb (this kernel has no prio): the spared port's packets go to a class of their
		// own, unshaped; every other packet to the default class, shaped.
		run_checked(
		    fmt::format("{}tc qdisc add dev {} root handle 1: htb default 30", exec, dev));
		run_checked(fmt::format(
		    "{}tc class add dev {} parent 1: classid 1:10 htb rate 10gbit", exec, dev));
		run_checked(
		    fmt::format("{}tc class add dev {} parent 1: classid 1:30 htb rate {}kbit "
		                "ceil {}kbit",
		                exec, dev, kbit, kbit));
		// A short queue, as tbf's latency bound gives: htb's default leaf queues a thousand
		// packets, seconds at these rates, which a new connection would wait behind.
		run_checked(fmt::format(
		    "{}tc qdisc add dev {} parent 1:30 handle 30: pfifo limit 16", exec, dev));
		run_checked(fmt::format("{}tc filter add dev {} parent 1: protocol ip prio 1 u32 "
		                        "match ip {} {} 0xffff flowid 1:10",
		                        exec, dev, match, spared_port));
	}
}

void in_netns(const std::string &ns, const std::function<void()> &fn)
{
	fd_guard self(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
	fd_guard target(::open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC));
	if (self.get() < 0 || target.get() < 0)
		throw std::runtime_error(fmt::format("netns {}: cannot open namespace files: {}",
		                                     ns, std::strerror(errno)));
	if (setns(target.get(), CLONE_NEWNET) != 0)
		throw std::runtime_error(
		    fmt::format("setns into {} failed: {}", ns, std::strerror(errno)));
	try {
		fn();
	} catch (...) {
		setns(self.get(), CLONE_NEWNET);
		throw;
	}
	if (setns(self.get(), CLONE_NEWNET) != 0)
		throw std::runtime_error(
		    fmt::format("setns back from {} failed: {}", ns, std::strerror(errno)));
}

} // namespace rpmem::test
