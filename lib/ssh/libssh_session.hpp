// SPDX-License-Identifier: BSD-3-Clause
// The libssh implementation of ssh::session (internal). Setup (connect, host key, auth) runs in
// libssh's blocking mode, each step bounded by SSH_OPTIONS_TIMEOUT; from opening the channel on,
// the session is non-blocking and every wait is an ssh_event_dopoll() with our own deadline, so
// no call can block forever on a dead link. Channel data arrives through callbacks into our own
// buffers (libssh then re-opens the flow-control window by itself).
#pragma once

#include "ssh/detail.hpp"

#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include <optional>

namespace rpmem::ssh::detail
{

/** Owns the libssh objects and frees them in the right order without blocking. */
struct libssh_handles {
	ssh_session ssh = nullptr;
	ssh_channel channel = nullptr;
	ssh_event event = nullptr;
	int fd = -1; ///< our TCP socket: libssh never closes a socket given as SSH_OPTIONS_FD

	libssh_handles() = default;
	libssh_handles(const libssh_handles &) = delete;
	libssh_handles &operator=(const libssh_handles &) = delete;
	~libssh_handles();
};

class libssh_session final : public session
{
public:
	libssh_session(const destination &where, const std::string &command, const options &opts);

	void write_all(std::span<const std::uint8_t> data) override;
	void read_exact(std::span<std::uint8_t> data, std::chrono::milliseconds timeout) override;
	std::string stderr_text() override;
	void close_stdin() override;
	int wait_exit(std::chrono::milliseconds timeout) override;
	std::string ending() const override;
	void terminate() override;
	std::string host() const override { return target_.host; }

private:
	// setup, in order (libssh_setup.cpp)
	void configure();
	void connect();
	void verify_host_key();
	void authenticate();
	void authenticate_with_files();
	void start_command();

	// I/O (libssh_session.cpp)
	void pump(int timeout_ms);
	int flush(const deadline &until);
	void settle();
	[[noreturn]] void throw_ended();
	std::string status_text() const;
	std::string ssh_error() const;

	static int on_data(ssh_session, ssh_channel, void *data, uint32_t len, int is_stderr,
	                   void *self);
	static void on_eof(ssh_session, ssh_channel, void *self);
	static void on_close(ssh_session, ssh_channel, void *self);
	static void on_exit_status(ssh_session, ssh_channel, int status, void *self);
	static void on_exit_signal(ssh_session, ssh_channel, const char *signal, int core,
	                           const char *errmsg, const char *lang, void *self);

	destination target_;
	std::string command_;
	options opts_;
	std::string where_; ///< user@host:port in effect, for messages

	byte_queue stdout_;
	stderr_capture stderr_;
	bool eof_ = false;                ///< the command's stdout ended
	bool closed_ = false;             ///< the server closed the channel
	bool stdin_closed_ = false;       ///< we sent EOF
	std::optional<std::string> lost_; ///< the connection broke: libssh's reason
	std::optional<int> exit_status_;  ///< -1: killed by a signal
	std::string exit_signal_;

	ssh_channel_callbacks_struct callbacks_{};
	libssh_handles h_; // last: freed first, while the buffers the callbacks fill still exist
};

} // namespace rpmem::ssh::detail
