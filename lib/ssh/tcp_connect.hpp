// SPDX-License-Identifier: BSD-3-Clause
// A TCP connection with a deadline and errno-precise failures, handed to libssh as its socket:
// libssh reports connect failures only as text, and callers need ECONNREFUSED vs EHOSTUNREACH
// vs ETIMEDOUT to tell "daemon host down" from "no sshd" from "slow network".
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rpmem::ssh::detail
{

/**
 * Connects to host:port (names resolved, every address tried in order) within timeout and
 * returns a non-blocking, close-on-exec socket with TCP_NODELAY set. Throws rpmem::error:
 * EHOSTUNREACH (name not resolved, host or network unreachable), ECONNREFUSED, ETIMEDOUT,
 * or the socket errno, with a message naming host:port.
 */
int tcp_connect(const std::string &host, std::uint16_t port, std::chrono::milliseconds timeout);

} // namespace rpmem::ssh::detail
