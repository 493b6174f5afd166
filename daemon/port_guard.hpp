// SPDX-License-Identifier: BSD-3-Clause
// Connections to the fabric target's port that never present a connection request.
//
// rpmemd authenticates a fabric connection by the session secret in its connection request,
// but the TCP-based providers (tcp, sockets) accept the TCP connection first and hold it, and
// a file descriptor, until that request arrives: for ever when it never does. Silent
// connections would so use up rpmemd's descriptors, and the honest client's connect would
// fail. The provider hides them, so the guard finds them where the kernel shows them: sockets
// of this process whose local port is the target's and that have received fewer bytes than a
// connection request carries. It shuts down those older than a bound, and the oldest when more
// than a cap wait at once, with shutdown(2), never close(2): the provider owns the descriptor
// and closes it itself when it reads the end. RDMA providers (verbs) leave no such sockets.
//
// A connection that did send a request was judged by rpmemd (refused when the secret is
// wrong); the provider closes refused ones (tcp at once, sockets when the peer goes).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace rpmemd
{

struct guard_policy {
	std::chrono::milliseconds bound{1000}; // a silent connection is closed after this
	std::size_t max_pending = 64;          // the oldest beyond this many are closed at once
	std::uint64_t request_bytes = 0;       // a connection request is at least this long
};

/** One socket on the target's port, as the kernel reports it. */
struct port_socket {
	std::uint64_t inode = 0;
	std::uint64_t bytes_received = 0;
	std::string peer; // "address:port"
};

enum class close_reason : std::uint8_t { silent, over_cap };

struct close_verdict {
	std::uint64_t inode = 0;
	close_reason reason = close_reason::silent;
};

/**
 * Which silent connections to close, from the sockets seen on the port at each sweep. Pure:
 * unit-tested in tests/unit/port_guard_test.cpp. A socket's age counts from the first sweep
 * that saw it.
 */
class pending_tracker
{
public:
	using time_point = std::chrono::steady_clock::time_point;
	explicit pending_tracker(const guard_policy &p) : policy_(p) {}

	/** The sockets on the port now; returns the ones to close, oldest first. */
	std::vector<close_verdict> judge(std::span<const port_socket> on_port, time_point now);
	/** Silent connections found by the last judge(), closed ones included. */
	std::size_t pending() const { return pending_; }

private:
	guard_policy policy_;
	std::unordered_map<std::uint64_t, time_point> first_seen_;
	std::size_t pending_ = 0;
};

/** What a sweep found and did (for the target's log lines and tests). */
struct sweep_report {
	std::vector<std::string> closed_silent;   // peers
	std::vector<std::string> closed_over_cap; // peers
	std::size_t pending = 0;                  // silent connections seen
	std::size_t open_fds = 0;
	std::size_t fd_limit = 0; // RLIMIT_NOFILE (soft); 0: unknown
};

/** A budget of log lines: `burst` at once, one more per `refill`; what is over the budget is
 * counted for the next line that fits. */
class line_budget
{
public:
	using time_point = std::chrono::steady_clock::time_point;
	line_budget(unsigned burst, std::chrono::milliseconds refill)
	    : burst_(burst), tokens_(burst), refill_(refill)
	{
	}
	/** Whether a line may be written now; false counts it as suppressed. */
	bool take(time_point now);
	/** After take() returned true: the lines suppressed before this one. */
	std::size_t suppressed_before() const { return reported_; }

private:
	unsigned burst_;
	unsigned tokens_;
	std::chrono::milliseconds refill_;
	time_point last_{};
	std::size_t suppressed_ = 0, reported_ = 0;
};

class port_guard
{
public:
	/** Guards TCP port `port` of this process. Keeps three descriptors of its own (the
	 * /proc/self/fd directory and two spares), so that it still works when the process has
	 * no descriptor left to open. Throws rpmem::error when it cannot. */
	port_guard(std::uint16_t port, const guard_policy &p);
	~port_guard();
	port_guard(const port_guard &) = delete;
	port_guard &operator=(const port_guard &) = delete;

	/** Looks at the port's sockets, shuts down the silent ones the policy condemns and logs
	 * what it did, and when the process is close to its descriptor limit. Not thread-safe:
	 * one thread sweeps. */
	sweep_report sweep();
	/** Logs a connection request rpmemd refused (rate-limited, with the suppressed count). */
	void refused(const std::string &peer, const std::string &why);

private:
	void log(const sweep_report &r);

	std::vector<std::pair<port_socket, int>> scan(std::size_t &open_fds);
	bool shut(int fd, std::uint64_t inode);

	std::uint16_t port_;
	pending_tracker tracker_;
	int dir_fd_ = -1;   // /proc/self/fd, read again at each sweep
	int spare_fd_ = -1; // a descriptor number the guard may point at a socket
	int null_fd_ = -1;  // /dev/null: what the spare points at otherwise
	std::chrono::milliseconds bound_;
	std::size_t max_pending_;
	line_budget closures_{20, std::chrono::seconds(1)};
	line_budget refusals_{20, std::chrono::seconds(1)};
	line_budget fd_pressure_{1, std::chrono::seconds(5)};
};

/** "address:port" of a sockaddr_in/sockaddr_in6; "an unknown address" otherwise. */
std::string describe_address(const void *sockaddr, std::size_t len);

} // namespace rpmemd
