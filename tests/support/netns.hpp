// SPDX-License-Identifier: BSD-3-Clause
// Two network namespaces joined by a veth pair, for fault tests that cut a link. Both ends live
// inside namespaces (client 10.211.N.1/24, server 10.211.N.2/24, N from the PID) and the root
// namespace gets a blackhole route for the subnet while the pair exists, so nothing addressed to
// it can leave the machine. Needs root and iproute2 (`ip netns`).
//
//   rpmem::test::netns_pair net;
//   auto server = net.in_server([&] { return std::make_unique<sshd>(net.server_address()); });
//   run(net.exec_client() + "program ...");     // a child inside the client namespace
//   net.set_link(false);                       // cut; set_link(true) restores it
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace rpmem::test
{

/** Runs fn on the calling thread inside network namespace `ns` (a name under /run/netns):
 *  sockets it creates and processes it forks stay there. The thread returns to its own
 *  namespace afterwards, also when fn throws. */
void in_netns(const std::string &ns, const std::function<void()> &fn);

class netns_pair
{
public:
	/** Creates both namespaces, the veth pair, addresses and the blackhole route. Throws
	 *  std::runtime_error naming the failed command and its output. */
	netns_pair();
	/** Deletes the namespaces (and with them the veth pair) and the route. */
	~netns_pair();
	netns_pair(const netns_pair &) = delete;
	netns_pair &operator=(const netns_pair &) = delete;

	/** True when this process may create network namespaces (root, `ip netns` works). */
	static bool available(std::string *why = nullptr);

	const std::string &client_ns() const { return client_ns_; }
	const std::string &server_ns() const { return server_ns_; }
	const std::string &client_address() const { return client_addr_; }
	const std::string &server_address() const { return server_addr_; }
	/** "ip netns exec <client ns> " — prefix a shell command with it. */
	std::string exec_client() const { return "ip netns exec " + client_ns_ + " "; }
	std::string exec_server() const { return "ip netns exec " + server_ns_ + " "; }

	/** Brings the client's veth end down (false) or up (true): the link is cut or restored. */
	void set_link(bool up);
	/** Throttles both ends of the link to `kbit` kbit/s (tc's token bucket filter), or
	 *  (0) lets it run at full speed again. With `spared_port`, TCP traffic to and from that
	 *  port of the server (its sshd: the control channel) is not throttled, only the rest
	 *  (the fabric). Needs tc (iproute2). */
	void set_rate(unsigned kbit, std::uint16_t spared_port = 0);

	/** Runs fn on the calling thread inside the server namespace (sockets it creates and
	 *  processes it forks stay there), then returns the thread to its namespace. */
	void in_server(const std::function<void()> &fn) const { in_netns(server_ns_, fn); }
	void in_client(const std::function<void()> &fn) const { in_netns(client_ns_, fn); }

private:
	void cleanup() noexcept;

	std::string client_ns_, server_ns_;
	std::string client_veth_, server_veth_;
	std::string subnet_, client_addr_, server_addr_;
	bool route_added_ = false;
};

/** Runs a shell command; throws std::runtime_error with its output unless it exits 0. */
std::string run_checked(const std::string &command);

} // namespace rpmem::test
