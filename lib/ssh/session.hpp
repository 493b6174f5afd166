// SPDX-License-Identifier: BSD-3-Clause
// One command running on a remote host over SSH: its stdin and stdout form a binary-clean byte
// stream (the control channel to rpmemd), its stderr is collected for error messages, and its
// exit status can be awaited. Two implementations behind one interface: libssh (default) and an
// external ssh-compatible program (RPMEM_SSH), as PMDK's librpmem ran ssh.
//
// Errors (rpmem::error errno values), the same for both implementations where they apply:
//   EINVAL       bad arguments (empty command, bad options)
//   EHOSTUNREACH name resolution failed, host or network unreachable
//   ECONNREFUSED nothing listens on the SSH port
//   ETIMEDOUT    connect/setup exceeded options::connect_timeout, a read exceeded its timeout,
//                a write stalled for options::write_timeout, wait_exit() ran out of time
//   ENOKEY       the host key is not in known_hosts (never accepted silently)
//   EKEYREJECTED the host key differs from the one in known_hosts (possible man-in-the-middle)
//   EACCES       no key was accepted for user@host
//   EPROTO       SSH protocol failure, or the server refused the session channel or the exec
//   ECONNRESET   the command's stdout ended (it exited, or the connection dropped): the message
//                carries what the command wrote on stderr ("bash: rpmemd: command not found")
//   ENOENT etc.  the external program could not be started (errno of posix_spawn)
//
// Thread safety: a session is used by one thread at a time (libssh sessions are not
// thread-safe); distinct sessions may be used concurrently from different threads.
#pragma once

#include "ssh/options.hpp"
#include "ssh/target.hpp"
#include "wire/stream.hpp"

#include <chrono>
#include <memory>
#include <string>

namespace rpmem::ssh
{

class session : public rpmem::byte_stream
{
public:
	/**
	 * Connects to the target, authenticates and starts command (a shell command line, run by
	 * the remote user's login shell, e.g. "rpmemd" or PMDK's RPMEM_CMD entries). Returns once
	 * the command was started; whether it actually runs shows on the first read (ECONNRESET
	 * with the shell's "not found" if it does not exist). Uses opts.external_program when
	 * non-empty.
	 */
	static std::unique_ptr<session> start(const destination &where, const std::string &command,
	                                      const options &opts);

	/** Stops the command's input and output, and the connection or the ssh process, without
	 *  waiting longer than about a second even when the remote side does not react. */
	~session() override = default;

	/** Writes to the command's stdin. ECONNRESET if the command or the link is gone. */
	void write_all(std::span<const std::uint8_t> data) override = 0;
	/** Reads exactly data.size() bytes of the command's stdout. ECONNRESET on EOF (message with
	 *  the stderr text), ETIMEDOUT after timeout (negative: no limit). A read that fails
	 *  consumes nothing: bytes that arrived stay buffered for the next read. */
	void read_exact(std::span<std::uint8_t> data,
	                std::chrono::milliseconds timeout) override = 0;

	/** Everything the command wrote on stderr so far (capped at 64 KiB), without blocking. */
	virtual std::string stderr_text() = 0;
	/** Signals EOF on the command's stdin; further writes fail. */
	virtual void close_stdin() = 0;
	/** Waits for the command to end: its exit status 0..255, or -1 when it died by a signal or
	 *  the status is unknown (the connection closed without one). ETIMEDOUT if still running.
	 *  Once it returns a status, stderr_text() holds everything the command wrote there.
	 */
	virtual int wait_exit(std::chrono::milliseconds timeout) = 0;
	/** How the command ended as far as known ("exit status 1", "killed by signal SIGKILL"),
	 *  or "" (still running, or not told: an external ssh reports a status only). */
	virtual std::string ending() const { return {}; }
	/** Ends a command the caller gives up on, without waiting for it. libssh: a "signal"
	 *  request makes sshd send SIGTERM to the command's process group, then the channel
	 *  closes. An external ssh cannot signal: its input is closed and the destructor ends it,
	 *  so the remote command only sees its input end. */
	virtual void terminate() = 0;
	/** The host as given in the target, for messages. */
	virtual std::string host() const = 0;

protected:
	session() = default;
	session(const session &) = delete;
	session &operator=(const session &) = delete;
};

/**
 * Releases what the crypto library under libssh (OpenSSL) keeps for the calling thread. A
 * thread that used sessions and ends without being joined calls it last: otherwise OpenSSL
 * frees that state in the thread's exit handlers, which may still run while the process's
 * exit has begun tearing OpenSSL down (seen under TSan: a keep-alive thread ended by a failed
 * ping, its pool left open by an exiting application). Harmless for threads that made no
 * session.
 */
void end_thread() noexcept;

} // namespace rpmem::ssh
