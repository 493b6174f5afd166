// SPDX-License-Identifier: BSD-3-Clause
// The libssh session's stream: every wait is a bounded ssh_event_dopoll(); channel callbacks
// fill our stdout/stderr buffers and record EOF, close and the exit status.
#include "ssh/libssh_session.hpp"

#include <rpmem/error.hpp>

#include <algorithm>
#include <cerrno>
#include <fmt/format.h>
#include <unistd.h>

namespace rpmem::ssh::detail
{

std::unique_ptr<session> start_libssh(const destination &where, const std::string &command,
                                      const options &opts)
{
	return std::make_unique<libssh_session>(where, command, opts);
}

libssh_handles::~libssh_handles()
{
	// Non-blocking so that closing never waits for a peer that may be gone.
	if (ssh)
		ssh_set_blocking(ssh, 0);
	if (event) {
		if (ssh)
			ssh_event_remove_session(event, ssh);
		ssh_event_free(event);
	}
	if (channel) {
		if (ssh_channel_is_open(channel))
			ssh_channel_close(channel);
		ssh_channel_free(channel);
	}
	if (ssh) {
		ssh_disconnect(ssh);
		ssh_free(ssh);
	}
	if (fd >= 0)
		close(fd);
}

int libssh_session::on_data(ssh_session, ssh_channel, void *data, uint32_t len, int is_stderr,
                            void *self)
{
	auto &me = *static_cast<libssh_session *>(self);
	if (is_stderr)
		me.stderr_.append(data, len);
	else
		me.stdout_.append(data, len);
	return static_cast<int>(len); // all consumed: libssh may re-open the window
}

void libssh_session::on_eof(ssh_session, ssh_channel, void *self)
{
	static_cast<libssh_session *>(self)->eof_ = true;
}

void libssh_session::on_close(ssh_session, ssh_channel, void *self)
{
	auto &me = *static_cast<libssh_session *>(self);
	me.closed_ = me.eof_ = true;
}

void libssh_session::on_exit_status(ssh_session, ssh_channel, int status, void *self)
{
	static_cast<libssh_session *>(self)->exit_status_ = status;
}

void libssh_session::on_exit_signal(ssh_session, ssh_channel, const char *signal, int, const char *,
                                    const char *, void *self)
{
	auto &me = *static_cast<libssh_session *>(self);
	me.exit_status_ = -1;
	me.exit_signal_ = signal ? signal : "?";
}

std::string libssh_session::ssh_error() const
{
	return ssh_get_error(h_.ssh);
}

/** Processes what the connection has for us, waiting up to timeout_ms; notes a broken link. */
void libssh_session::pump(int timeout_ms)
{
	if (lost_)
		return;
	errno = 0;
	int rc = ssh_event_dopoll(h_.event, timeout_ms);
	bool broken = (ssh_get_status(h_.ssh) & (SSH_CLOSED | SSH_CLOSED_ERROR)) != 0 ||
	              !ssh_is_connected(h_.ssh);
	// poll() fails with EINTR whenever a signal (SIGCHLD...) arrives: that is no broken link.
	if (broken || (rc == SSH_ERROR && errno != EINTR && !closed_)) {
		lost_ = ssh_error();
		eof_ = true;
	}
}

/** ssh_blocking_flush until `until`, again after a wait a signal or a stop and continue of the
 *  process interrupted (EINTR): that is no broken link either. */
int libssh_session::flush(const deadline &until)
{
	for (;;) {
		errno = 0;
		const int rc = ssh_blocking_flush(h_.ssh, until.poll_ms());
		if (rc != SSH_ERROR || errno != EINTR || until.expired() ||
		    !ssh_is_connected(h_.ssh))
			return rc;
	}
}

/** After stdout ended: give the exit status and the last stderr a moment to arrive. */
void libssh_session::settle()
{
	deadline until(std::chrono::milliseconds(200));
	while (!exit_status_ && !closed_ && !lost_ && !until.expired())
		pump(until.poll_ms());
}

std::string libssh_session::ending() const
{
	if (!exit_signal_.empty())
		return "killed by signal SIG" + exit_signal_;
	if (exit_status_)
		return fmt::format("exit status {}", *exit_status_);
	return {};
}

std::string libssh_session::status_text() const
{
	if (auto how = ending(); !how.empty())
		return how;
	if (lost_)
		return "SSH connection lost: " + *lost_;
	return {};
}

void libssh_session::throw_ended()
{
	settle();
	throw rpmem::error(ECONNRESET, ended_message(command_, where_, stderr_.text(),
	                                             status_text(), stdout_.ever_received()));
}

void libssh_session::write_all(std::span<const std::uint8_t> data)
{
	if (stdin_closed_)
		throw rpmem::error(EPIPE, fmt::format("write to '{}' on {} after its input was "
		                                      "closed",
		                                      command_, where_));
	deadline until(opts_.write_timeout);
	while (!data.empty()) {
		if (closed_ || lost_)
			throw_ended();
		// Write what the remote window allows; never let libssh wait for it.
		auto room = std::min<std::size_t>(
		    {ssh_channel_window_size(h_.channel), data.size(), 256 * 1024});
		int n = room > 0 ? ssh_channel_write(h_.channel, data.data(),
		                                     static_cast<uint32_t>(room))
		                 : 0;
		if (n == SSH_ERROR) {
			lost_ = ssh_error();
			throw_ended();
		}
		if (n > 0) {
			data = data.subspan(static_cast<std::size_t>(n));
			continue;
		}
		if (until.expired())
			throw rpmem::error(
			    ETIMEDOUT, fmt::format("'{}' on {} has not accepted input for {} ms",
			                           command_, where_, opts_.write_timeout.count()));
		pump(until.poll_ms(100));
	}
	// Hand the bytes to the kernel now: the caller may only wait for a reply next.
	if (flush(until) == SSH_ERROR) {
		lost_ = ssh_error();
		throw_ended();
	}
}

void libssh_session::read_exact(std::span<std::uint8_t> data, std::chrono::milliseconds timeout)
{
	detail::read_exact(
	    stdout_, data, timeout, command_, where_, [&] { return eof_; }, [&] { throw_ended(); },
	    [&](const deadline &until, bool) { pump(until.poll_ms()); });
}

std::string libssh_session::stderr_text()
{
	pump(0);
	return stderr_.text();
}

void libssh_session::close_stdin()
{
	if (stdin_closed_ || closed_ || lost_)
		return;
	stdin_closed_ = true;
	if (ssh_channel_send_eof(h_.channel) == SSH_ERROR)
		lost_ = ssh_error();
	else
		pump(0); // start sending it
}

int libssh_session::wait_exit(std::chrono::milliseconds timeout)
{
	deadline until(timeout);
	for (bool polled = false;; polled = true) {
		if (exit_status_) {
			// sshd may send the exit status before the last of the command's stderr it
			// has not read yet; the channel's EOF comes after all of it.
			deadline drain(std::chrono::milliseconds(500));
			while (!eof_ && !closed_ && !lost_ && !drain.expired())
				pump(drain.poll_ms());
			return *exit_status_;
		}
		if (closed_ || lost_)
			return -1;
		if (polled && until.expired())
			throw rpmem::error(ETIMEDOUT,
			                   fmt::format("'{}' on {} still runs after {} ms",
			                               command_, where_, timeout.count()));
		pump(until.poll_ms());
	}
}

void libssh_session::terminate()
{
	if (closed_ || lost_ || exit_status_)
		return;
	// Closing the channel alone leaves a command that never reads its input running on the
	// node (sshd signals nothing for sessions without a terminal).
	deadline until(std::chrono::milliseconds(1000));
	if (ssh_channel_request_send_signal(h_.channel, "TERM") == SSH_ERROR ||
	    flush(until) == SSH_ERROR)
		lost_ = ssh_error();
	if (!lost_ && ssh_channel_close(h_.channel) != SSH_ERROR)
		flush(until);
}

} // namespace rpmem::ssh::detail
