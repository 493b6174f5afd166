// SPDX-License-Identifier: BSD-3-Clause
#include "port_guard.hpp"

#include "log.hpp"

#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace rpmemd
{

namespace
{

// TCP states as tcp_info reports them (include/net/tcp_states.h; glibc's netinet/tcp.h has
// them too, but its struct tcp_info lacks tcpi_bytes_received, and it clashes with linux/tcp.h).
constexpr std::uint8_t tcp_established = 1;
constexpr std::uint8_t tcp_close_wait = 8;

/** One entry of getdents64's buffer (the kernel's struct linux_dirent64). */
struct dirent64_head {
	std::uint64_t ino;
	std::int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[1];
};

std::uint16_t port_of(const sockaddr_storage &s)
{
	if (s.ss_family == AF_INET)
		return ntohs(reinterpret_cast<const sockaddr_in &>(s).sin_port);
	if (s.ss_family == AF_INET6)
		return ntohs(reinterpret_cast<const sockaddr_in6 &>(s).sin6_port);
	return 0;
}

// The guard inspects descriptors that other threads (the provider's) own and may close at any
// moment. The kernel makes each call atomic against that: a closed number fails, a reused one
// is caught by the inode check before shutdown. ThreadSanitizer, though, models a descriptor as
// a memory location and reports our fstat against the provider's accept or close as a data
// race. Calls on descriptors that are not the guard's own therefore go through syscall(2),
// which sanitizers do not intercept: what they do is unchanged.
namespace foreign
{

int getsockname(int fd, sockaddr *addr, socklen_t *len)
{
	return static_cast<int>(syscall(SYS_getsockname, fd, addr, len));
}

int getpeername(int fd, sockaddr *addr, socklen_t *len)
{
	return static_cast<int>(syscall(SYS_getpeername, fd, addr, len));
}

int getsockopt(int fd, int level, int name, void *value, socklen_t *len)
{
	return static_cast<int>(syscall(SYS_getsockopt, fd, level, name, value, len));
}

int dup3(int fd, int to, int flags)
{
	return static_cast<int>(syscall(SYS_dup3, fd, to, flags));
}

/** The descriptor's inode if it is a socket, else 0 (statx: a layout the kernel fixes). */
std::uint64_t socket_inode(int fd)
{
	struct statx st {
	};
	if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_INO, &st) != 0 ||
	    !S_ISSOCK(st.stx_mode))
		return 0;
	return st.stx_ino;
}

} // namespace foreign

bool local_port_is(int fd, std::uint16_t port)
{
	sockaddr_storage local{};
	socklen_t len = sizeof local;
	return foreign::getsockname(fd, reinterpret_cast<sockaddr *>(&local), &len) == 0 &&
	       port_of(local) == port;
}

int open_or_throw(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		throw rpmem::error(err, fmt::format("cannot open {} to guard the fabric port: {}",
		                                    path, std::strerror(err)));
	}
	return fd;
}

} // namespace

std::string describe_address(const void *sockaddr_ptr, std::size_t len)
{
	char host[INET6_ADDRSTRLEN] = "";
	sockaddr_storage s{};
	if (!sockaddr_ptr || len == 0)
		return "an unknown address";
	std::memcpy(&s, sockaddr_ptr, std::min(len, sizeof s));
	if (s.ss_family == AF_INET && len >= sizeof(sockaddr_in)) {
		const auto &in = reinterpret_cast<const sockaddr_in &>(s);
		inet_ntop(AF_INET, &in.sin_addr, host, sizeof host);
		return fmt::format("{}:{}", host, ntohs(in.sin_port));
	}
	if (s.ss_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
		const auto &in6 = reinterpret_cast<const sockaddr_in6 &>(s);
		inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof host);
		return fmt::format("[{}]:{}", host, ntohs(in6.sin6_port));
	}
	return "an unknown address";
}

std::vector<close_verdict> pending_tracker::judge(std::span<const port_socket> on_port,
                                                  time_point now)
{
	std::unordered_map<std::uint64_t, time_point> seen;
	std::vector<std::pair<time_point, std::uint64_t>> silent;
	for (const auto &s : on_port) {
		if (s.bytes_received >= policy_.request_bytes)
			continue; // it sent its request: rpmemd judged it by its secret
		auto it = first_seen_.find(s.inode);
		auto since = it == first_seen_.end() ? now : it->second;
		seen.emplace(s.inode, since);
		silent.emplace_back(since, s.inode);
	}
	first_seen_ = std::move(seen); // sockets gone since the last sweep are forgotten
	pending_ = silent.size();
	std::sort(silent.begin(), silent.end());
	const std::size_t over =
	    silent.size() > policy_.max_pending ? silent.size() - policy_.max_pending : 0;
	std::vector<close_verdict> out;
	for (std::size_t i = 0; i < silent.size(); ++i) {
		const auto &[since, inode] = silent[i];
		if (now - since >= policy_.bound)
			out.push_back({inode, close_reason::silent});
		else if (i < over)
			out.push_back({inode, close_reason::over_cap});
	}
	return out;
}

bool line_budget::take(time_point now)
{
	if (last_ == time_point{}) {
		last_ = now;
	} else if (refill_.count() > 0) {
		auto earned = static_cast<unsigned>((now - last_) / refill_);
		if (earned > 0) {
			tokens_ = std::min<unsigned>(burst_, tokens_ + earned);
			last_ += earned * refill_;
		}
	}
	if (tokens_ == 0) {
		++suppressed_;
		return false;
	}
	--tokens_;
	reported_ = suppressed_;
	suppressed_ = 0;
	return true;
}

port_guard::port_guard(std::uint16_t port, const guard_policy &p)
    : port_(port), tracker_(p), bound_(p.bound), max_pending_(p.max_pending)
{
	dir_fd_ = open_or_throw("/proc/self/fd", O_RDONLY | O_DIRECTORY);
	try {
		null_fd_ = open_or_throw("/dev/null", O_RDONLY);
		spare_fd_ = open_or_throw("/dev/null", O_RDONLY);
	} catch (...) {
		if (null_fd_ >= 0)
			close(null_fd_);
		close(dir_fd_);
		throw;
	}
}

port_guard::~port_guard()
{
	close(spare_fd_);
	close(null_fd_);
	close(dir_fd_);
}

std::vector<std::pair<port_socket, int>> port_guard::scan(std::size_t &open_fds)
{
	std::vector<std::pair<port_socket, int>> out;
	open_fds = 0;
	if (lseek(dir_fd_, 0, SEEK_SET) != 0)
		return out;
	alignas(8) std::array<char, 8192> buf;
	for (;;) {
		long n = syscall(SYS_getdents64, dir_fd_, buf.data(), buf.size());
		if (n <= 0)
			break;
		for (long pos = 0; pos < n;) {
			const auto *d = reinterpret_cast<const dirent64_head *>(buf.data() + pos);
			pos += d->reclen;
			int fd = -1;
			std::string_view name(d->name);
			if (std::from_chars(name.data(), name.data() + name.size(), fd).ec !=
			    std::errc())
				continue; // "." and ".."
			++open_fds;
			if (fd == dir_fd_ || fd == spare_fd_ || fd == null_fd_)
				continue;
			std::uint64_t inode = foreign::socket_inode(fd);
			if (!inode || !local_port_is(fd, port_))
				continue;
			tcp_info ti{};
			socklen_t len = sizeof ti;
			if (foreign::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
				continue;
			// Connections only: the listening socket has the port too.
			if (ti.tcpi_state != tcp_established && ti.tcpi_state != tcp_close_wait)
				continue;
			sockaddr_storage peer{};
			socklen_t plen = sizeof peer;
			std::string who = foreign::getpeername(
			                      fd, reinterpret_cast<sockaddr *>(&peer), &plen) == 0
			                      ? describe_address(&peer, plen)
			                      : "an unknown address";
			out.push_back(
			    {port_socket{inode, ti.tcpi_bytes_received, std::move(who)}, fd});
		}
	}
	return out;
}

/**
 * Shuts the connection down through a descriptor of the guard's own, after checking that it
 * is still the socket judged: the provider may have closed `fd`, and the number been reused,
 * since the scan. The provider reads the end and closes its descriptor itself.
 */
bool port_guard::shut(int fd, std::uint64_t inode)
{
	if (foreign::dup3(fd, spare_fd_, O_CLOEXEC) < 0)
		return false;
	bool same = foreign::socket_inode(spare_fd_) == inode && local_port_is(spare_fd_, port_);
	if (same)
		shutdown(spare_fd_, SHUT_RDWR);
	dup3(null_fd_, spare_fd_, O_CLOEXEC); // drop the guard's reference to the socket
	return same;
}

sweep_report port_guard::sweep()
{
	sweep_report r;
	auto found = scan(r.open_fds);
	std::vector<port_socket> sockets;
	sockets.reserve(found.size());
	for (const auto &f : found)
		sockets.push_back(f.first);
	auto verdicts = tracker_.judge(sockets, std::chrono::steady_clock::now());
	r.pending = tracker_.pending();
	for (const auto &v : verdicts) {
		auto it = std::find_if(found.begin(), found.end(),
		                       [&](const auto &f) { return f.first.inode == v.inode; });
		if (it == found.end() || !shut(it->second, v.inode))
			continue;
		(v.reason == close_reason::silent ? r.closed_silent : r.closed_over_cap)
		    .push_back(it->first.peer);
	}
	rlimit lim{};
	if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
		r.fd_limit = lim.rlim_cur;
	log(r);
	return r;
}

namespace
{

/** "a, b, c and 7 more" */
std::string some_of(const std::vector<std::string> &peers)
{
	std::string out;
	for (std::size_t i = 0; i < peers.size() && i < 3; ++i)
		out += (i ? ", " : "") + peers[i];
	if (peers.size() > 3)
		out += fmt::format(" and {} more", peers.size() - 3);
	return out;
}

std::string also(std::size_t suppressed, const char *what)
{
	return suppressed ? fmt::format(" ({} earlier {} not logged)", suppressed, what) : "";
}

} // namespace

void port_guard::log(const sweep_report &r)
{
	auto now = std::chrono::steady_clock::now();
	if (!r.closed_silent.empty() && closures_.take(now))
		log_warn("closed {} fabric connection(s) that sent no connection request within "
		         "{} ms, from {}{}",
		         r.closed_silent.size(), bound_.count(), some_of(r.closed_silent),
		         also(closures_.suppressed_before(), "such lines"));
	if (!r.closed_over_cap.empty() && closures_.take(now))
		log_warn("{} fabric connections were waiting for their connection request (at "
		         "most {} may): closed the {} oldest, from {}{}",
		         r.pending, max_pending_, r.closed_over_cap.size(),
		         some_of(r.closed_over_cap),
		         also(closures_.suppressed_before(), "such lines"));
	// A few descriptors short of the limit: the next accept (ours or the provider's), a
	// pool file or a log rotation fails with EMFILE.
	if (r.fd_limit && r.open_fds + 8 >= r.fd_limit && fd_pressure_.take(now))
		log_err(
		    "{} of this process's {} file descriptors are open ({} connection(s) to the "
		    "fabric port have sent no request yet): new connections fail with EMFILE "
		    "(Too many open files); raise the open file limit (ulimit -n) of the SSH "
		    "user",
		    r.open_fds, r.fd_limit, r.pending);
}

void port_guard::refused(const std::string &peer, const std::string &why)
{
	if (refusals_.take(std::chrono::steady_clock::now()))
		log_warn("refused a fabric connection request from {}: {}{}", peer, why,
		         also(refusals_.suppressed_before(), "refusals"));
}

} // namespace rpmemd
