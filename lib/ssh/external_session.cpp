// SPDX-License-Identifier: BSD-3-Clause
// ssh::session through an external ssh-compatible program (RPMEM_SSH), exactly as PMDK ran it:
// argv = [program, -p port, -T, -oBatchMode=yes, [user@]host, command]. Host keys, keys and
// config are the program's business; we see its stdout, stderr and exit status.
#include "ssh/child_process.hpp"
#include "ssh/detail.hpp"

#include <rpmem/error.hpp>

#include <array>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

namespace rpmem::ssh::detail
{

namespace
{

std::vector<std::string> ssh_argv(const destination &where, const std::string &command,
                                  const options &opts)
{
	std::vector<std::string> argv{opts.external_program};
	if (where.port) {
		argv.emplace_back("-p");
		argv.push_back(std::to_string(*where.port));
	}
	argv.emplace_back("-T");
	argv.emplace_back("-oBatchMode=yes");
	argv.push_back(where.user.empty() ? where.host : where.user + "@" + where.host);
	argv.push_back(command);
	return argv;
}

class external_session final : public session
{
public:
	external_session(const destination &where, const std::string &command, const options &opts)
	    : target_(where), command_(command), opts_(opts),
	      where_(fmt::format("{} (via {})", where.str(), opts.external_program)),
	      child_(ssh_argv(where, command, opts))
	{
	}

	void write_all(std::span<const std::uint8_t> data) override;
	void read_exact(std::span<std::uint8_t> data, std::chrono::milliseconds timeout) override;
	std::string stderr_text() override
	{
		drain_stderr();
		return stderr_.text();
	}
	void close_stdin() override { child_.close_stdin(); }
	int wait_exit(std::chrono::milliseconds timeout) override;
	void terminate() override { child_.close_stdin(); }
	std::string host() const override { return target_.host; }

private:
	void poll_once(int timeout_ms, bool want_write);
	void drain_stdout();
	void drain_stderr();
	[[noreturn]] void throw_ended();

	destination target_;
	std::string command_;
	options opts_;
	std::string where_;
	child_process child_;
	byte_queue stdout_;
	stderr_capture stderr_;
	bool out_eof_ = false, err_eof_ = false;
};

/** Reads what fd has without blocking; false at EOF or on a dead peer. */
template <class Sink> bool drain(int fd, Sink &sink)
{
	std::array<char, 64 * 1024> buf;
	for (;;) {
		ssize_t n = recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
		if (n > 0) {
			sink.append(buf.data(), static_cast<std::size_t>(n));
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
	}
}

void external_session::drain_stdout()
{
	if (!out_eof_)
		out_eof_ = !drain(child_.stdout_fd(), stdout_);
}

void external_session::drain_stderr()
{
	if (!err_eof_)
		err_eof_ = !drain(child_.stderr_fd(), stderr_);
}

/** Waits up to timeout_ms for output (or room for input), then takes all output there is. */
void external_session::poll_once(int timeout_ms, bool want_write)
{
	// Ended streams are left out (fd -1): they would report POLLHUP forever.
	std::array<pollfd, 3> p{{{out_eof_ ? -1 : child_.stdout_fd(), POLLIN, 0},
	                         {err_eof_ ? -1 : child_.stderr_fd(), POLLIN, 0},
	                         {want_write ? child_.stdin_fd() : -1, POLLOUT, 0}}};
	if (poll(p.data(), p.size(), timeout_ms) < 0 && errno != EINTR) {
		int err = errno;
		throw rpmem::error(
		    err, fmt::format("poll on the ssh child for {}: {}", where_, strerror(err)));
	}
	drain_stdout();
	drain_stderr();
}

void external_session::throw_ended()
{
	// The shell's complaint and ssh's exit status come a moment after stdout closes.
	deadline until(std::chrono::milliseconds(200));
	while (!err_eof_ && !until.expired())
		poll_once(until.poll_ms(), false);
	auto code = child_.wait(std::chrono::milliseconds(until.poll_ms()));
	std::string status = !code       ? ""
	                     : *code < 0 ? "ssh killed by a signal"
	                                 : fmt::format("exit status {}", *code);
	throw rpmem::error(ECONNRESET, ended_message(command_, where_, stderr_.text(), status,
	                                             stdout_.ever_received()));
}

void external_session::write_all(std::span<const std::uint8_t> data)
{
	if (child_.stdin_fd() < 0)
		throw rpmem::error(EPIPE, fmt::format("write to '{}' on {} after its input was "
		                                      "closed",
		                                      command_, where_));
	deadline until(opts_.write_timeout);
	while (!data.empty()) {
		ssize_t n =
		    send(child_.stdin_fd(), data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			data = data.subspan(static_cast<std::size_t>(n));
			continue;
		}
		int err = errno;
		if (err == EPIPE || err == ECONNRESET)
			throw_ended();
		if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR)
			throw rpmem::error(err, fmt::format("write to the ssh child for {}: {}",
			                                    where_, strerror(err)));
		if (until.expired())
			throw rpmem::error(
			    ETIMEDOUT, fmt::format("'{}' on {} has not accepted input for {} ms",
			                           command_, where_, opts_.write_timeout.count()));
		poll_once(until.poll_ms(), true); // also keeps reading, so the child never stalls
	}
}

void external_session::read_exact(std::span<std::uint8_t> data, std::chrono::milliseconds timeout)
{
	detail::read_exact(
	    stdout_, data, timeout, command_, where_, [&] { return out_eof_; },
	    [&] { throw_ended(); },
	    [&](const deadline &until, bool polled) {
		    poll_once(polled ? until.poll_ms() : 0, false);
	    });
}

int external_session::wait_exit(std::chrono::milliseconds timeout)
{
	deadline until(timeout);
	for (;;) {
		// Keep draining: a child blocked on a full stdout/stderr would never exit.
		poll_once(0, false);
		if (auto code = child_.wait(std::chrono::milliseconds(until.poll_ms(20)))) {
			// What ssh wrote last may still sit in the pipe (or in a grandchild's).
			deadline drain(std::chrono::milliseconds(500));
			while (!err_eof_ && !drain.expired())
				poll_once(drain.poll_ms(), false);
			return *code;
		}
		if (until.expired())
			throw rpmem::error(ETIMEDOUT,
			                   fmt::format("'{}' on {} still runs after {} ms",
			                               command_, where_, timeout.count()));
	}
}

} // namespace

std::unique_ptr<session> start_external(const destination &where, const std::string &command,
                                        const options &opts)
{
	return std::make_unique<external_session>(where, command, opts);
}

} // namespace rpmem::ssh::detail
