// SPDX-License-Identifier: BSD-3-Clause
#include "ssh/tcp_connect.hpp"

#include "ssh/detail.hpp"

#include <rpmem/error.hpp>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <memory>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rpmem::ssh::detail
{

namespace
{

struct addrinfo_deleter {
	void operator()(addrinfo *ai) const { freeaddrinfo(ai); }
};
using addrinfo_ptr = std::unique_ptr<addrinfo, addrinfo_deleter>;

addrinfo_ptr resolve(const std::string &host, std::uint16_t port)
{
	addrinfo hints{};
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	addrinfo *list = nullptr;
	int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
	if (rc != 0)
		throw rpmem::error(
		    EHOSTUNREACH,
		    fmt::format("cannot resolve host '{}': {}: check the name in the "
		                "target or the ssh config",
		                host, rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc)));
	return addrinfo_ptr(list);
}

/** One address: 0 and the connected fd, or an errno. */
int try_address(const addrinfo &ai, const deadline &until, int &fd_out)
{
	int fd =
	    socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol);
	if (fd < 0)
		return errno;
	int err = 0;
	if (connect(fd, ai.ai_addr, ai.ai_addrlen) < 0) {
		err = errno;
		if (err == EINPROGRESS) {
			pollfd p{fd, POLLOUT, 0};
			int n;
			while ((n = poll(&p, 1, until.poll_ms())) < 0 && errno == EINTR) {
			}
			socklen_t len = sizeof(err);
			if (n == 0)
				err = ETIMEDOUT;
			else if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
				err = errno;
		}
	}
	if (err != 0) {
		close(fd);
		return err;
	}
	int one = 1; // SSH_OPTIONS_NODELAY's job: small control messages must not wait for Nagle
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fd_out = fd;
	return 0;
}

} // namespace

int tcp_connect(const std::string &host, std::uint16_t port, std::chrono::milliseconds timeout)
{
	deadline until(timeout);
	auto list = resolve(host, port);
	int err = EHOSTUNREACH;
	for (const addrinfo *ai = list.get(); ai != nullptr && !until.expired(); ai = ai->ai_next) {
		int fd = -1;
		err = try_address(*ai, until, fd);
		if (err == 0)
			return fd;
	}
	if (until.expired())
		err = ETIMEDOUT;
	if (err == ENETUNREACH)
		err = EHOSTUNREACH;

	std::string advice = err == ECONNREFUSED ? "is sshd running there, on this port?"
	                     : err == ETIMEDOUT
	                         ? fmt::format("no answer within {} ms: host down or "
	                                       "filtered? (RPMEM_SSH_TIMEOUT)",
	                                       timeout.count())
	                         : "check the host and the network";
	throw rpmem::error(err, fmt::format("cannot connect to {}: {}: {}", endpoint(host, port),
	                                    strerror(err), advice));
}

} // namespace rpmem::ssh::detail
