// SPDX-License-Identifier: BSD-3-Clause
#include "control/fd_stream.hpp"

#include <rpmem/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rpmem::control
{

namespace
{

using clock = std::chrono::steady_clock;

/** An absolute point to give up at; a negative timeout never expires. */
class deadline
{
public:
	explicit deadline(std::chrono::milliseconds timeout)
	    : forever_(timeout.count() < 0), at_(clock::now() + std::max(timeout, {}))
	{
	}

	/** Milliseconds left for poll(): -1 forever, rounded up so poll never gives up early. */
	int poll_ms() const
	{
		if (forever_)
			return -1;
		auto left = at_ - clock::now();
		if (left <= clock::duration::zero())
			return 0;
		auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
		return static_cast<int>(std::min<decltype(ms)>(ms, INT_MAX));
	}

private:
	bool forever_;
	clock::time_point at_;
};

bool is_socket(int fd, const std::string &name)
{
	struct stat st {
	};
	if (fstat(fd, &st) != 0)
		throw rpmem::error(errno, fmt::format("{}: file descriptor {} is not usable: {}",
		                                      name, fd, std::strerror(errno)));
	return S_ISSOCK(st.st_mode);
}

/** What one transfer is doing, for messages: "reading 12 bytes from fd 0". */
struct transfer {
	const std::string &name;
	const char *verb; // "read" / "write"
	int fd;
	std::size_t done;
	std::size_t total;
	std::chrono::milliseconds timeout;

	rpmem::error closed() const
	{
		return rpmem::error(
		    ECONNRESET, fmt::format("{}: peer closed the connection during a {} on fd {} "
		                            "({} of {} bytes done): the other side exited or the "
		                            "link dropped; see its log or stderr",
		                            name, verb, fd, done, total));
	}

	rpmem::error timed_out() const
	{
		return rpmem::error(
		    ETIMEDOUT, fmt::format("{}: a {} on fd {} did not complete within {} ms ({} of "
		                           "{} bytes done): the peer is hung or the link is down",
		                           name, verb, fd, timeout.count(), done, total));
	}

	rpmem::error failed(int errnum) const
	{
		if (errnum == EPIPE || errnum == ECONNRESET)
			return closed();
		return rpmem::error(errnum, fmt::format("{}: {} on fd {} failed ({} of {} bytes "
		                                        "done): {}",
		                                        name, verb, fd, done, total,
		                                        std::strerror(errnum)));
	}
};

/**
 * Waits until fd is ready for events, or hung up / in error (the next read or write then reports
 * what happened).
 */
void wait_ready(const transfer &t, short events, const deadline &dl)
{
	for (;;) {
		pollfd p{t.fd, events, 0};
		int rc = ::poll(&p, 1, dl.poll_ms());
		if (rc > 0) {
			if (p.revents & POLLNVAL)
				throw t.failed(EBADF);
			return;
		}
		if (rc == 0)
			throw t.timed_out();
		if (errno != EINTR)
			throw t.failed(errno);
	}
}

} // namespace

fd_stream::fd_stream(int in_fd, int out_fd, std::string name,
                     std::chrono::milliseconds write_timeout)
    : in_(in_fd), out_(out_fd), in_socket_(is_socket(in_fd, name)),
      out_socket_(is_socket(out_fd, name)), name_(std::move(name)), write_timeout_(write_timeout)
{
}

void fd_stream::read_exact(std::span<std::uint8_t> data, std::chrono::milliseconds timeout)
{
	deadline dl(timeout);
	transfer t{name_, "read", in_, 0, data.size(), timeout};
	while (t.done < t.total) {
		wait_ready(t, POLLIN, dl);
		std::uint8_t *p = data.data() + t.done;
		std::size_t n = t.total - t.done;
		// poll() said readable: read() returns what is there without blocking. MSG_DONTWAIT
		// makes that explicit for sockets.
		ssize_t rc = in_socket_ ? ::recv(in_, p, n, MSG_DONTWAIT) : ::read(in_, p, n);
		if (rc > 0)
			t.done += static_cast<std::size_t>(rc);
		else if (rc == 0)
			throw t.closed();
		else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
			throw t.failed(errno);
	}
}

void fd_stream::write_all(std::span<const std::uint8_t> data)
{
	deadline dl(write_timeout_);
	transfer t{name_, "write", out_, 0, data.size(), write_timeout_};
	while (t.done < t.total) {
		wait_ready(t, POLLOUT, dl);
		const std::uint8_t *p = data.data() + t.done;
		std::size_t n = t.total - t.done;
		ssize_t rc;
		if (out_socket_)
			rc = ::send(out_, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		else // at most PIPE_BUF after POLLOUT: cannot block (see fd_stream.hpp)
			rc = ::write(out_, p, std::min<std::size_t>(n, PIPE_BUF));
		if (rc >= 0)
			t.done += static_cast<std::size_t>(rc);
		else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
			throw t.failed(errno);
	}
}

} // namespace rpmem::control
