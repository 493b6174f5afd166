// SPDX-License-Identifier: BSD-3-Clause
// rpmem::byte_stream over a pair of file descriptors: rpmemd's stdin/stdout (pipes or a socket
// from sshd), or a socketpair in tests. Every wait is a poll() bounded by a timeout, so a silent
// peer ends in ETIMEDOUT, never a hang.
//
// Errors (rpmem::error): ECONNRESET when the peer is gone (EOF, EPIPE, ECONNRESET), ETIMEDOUT when
// the timeout expires, the system errno for anything else. Messages name the stream.
//
// SIGPIPE: sockets are written with send(MSG_NOSIGNAL), so a closed peer only yields EPIPE. Pipes
// have no such flag: a process writing to a pipe must ignore SIGPIPE (rpmemd does
// `signal(SIGPIPE, SIG_IGN)` at start-up), otherwise the first write after the peer closed kills
// it instead of raising ECONNRESET here.
//
// The descriptors stay blocking and are not owned: the caller closes them. Pipe writes go in
// PIPE_BUF chunks after poll() reported POLLOUT, which Linux guarantees not to block (one writer).
#pragma once

#include "wire/stream.hpp"

#include <chrono>
#include <cstdint>
#include <span>
#include <string>

namespace rpmem::control
{

class fd_stream final : public rpmem::byte_stream
{
public:
	/**
	 * in_fd is read, out_fd written (they may be the same socket). name says in error messages
	 * which channel failed ("ssh channel to node2", "rpmemd stdin/stdout"). write_timeout
	 * bounds each write_all (negative: wait forever). Throws rpmem::error(EBADF) for a closed
	 * fd.
	 */
	fd_stream(int in_fd, int out_fd, std::string name = "control channel",
	          std::chrono::milliseconds write_timeout = std::chrono::milliseconds(-1));

	void write_all(std::span<const std::uint8_t> data) override;
	void read_exact(std::span<std::uint8_t> data, std::chrono::milliseconds timeout) override;

	int in_fd() const noexcept { return in_; }
	int out_fd() const noexcept { return out_; }

private:
	int in_;
	int out_;
	bool in_socket_;
	bool out_socket_;
	std::string name_;
	std::chrono::milliseconds write_timeout_;
};

} // namespace rpmem::control
