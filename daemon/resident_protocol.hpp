// SPDX-License-Identifier: BSD-3-Clause
// What the rpmemd processes of one user say to each other on a host (daemon/resident.hpp): the
// rpmemd sshd started (the front), the resident, and the resident's spare processes. Local
// SOCK_SEQPACKET sockets, one message per packet, little-endian fields (lib/wire), descriptors
// passed with SCM_RIGHTS:
//
//   front -> resident   request          who is asking and what the session inherits
//   resident -> spare   job              the request's bytes, with the front's socket attached
//   spare -> resident   warm             libfabric loaded, providers initialized
//   spare -> front      accept           the spare's pid: send the channel
//   resident -> front   refuse           why not (the front serves the session itself)
//   front -> spare      channel          stdin, stdout and stderr of the SSH channel attached
//   session -> front    exited           the session's exit status, sent by its process
//   resident -> front   exited, killed   how the session's process ended, as waitpid saw it
#pragma once

#include "posix/file.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rpmemd::resident
{

/** Bumped whenever a message changes: a front and a resident of different builds never talk
 *  (their executables differ, so their identities do too; this is the second fence). */
inline constexpr std::uint32_t protocol_version = 1;
/** How long a front waits for a spare's accept after it sent its request. A spare answers
 *  within a millisecond; past this the front serves the session itself (nothing was handed
 *  over, and the resident, seeing it hung up, hands its request to no spare). */
inline constexpr int front_wait_ms = 1000;
/** The largest message: a request carries the front's whole environment. */
inline constexpr std::size_t max_message = 256 * 1024;

enum class kind : std::uint32_t {
	request = 1,
	job,
	warm,
	accept,
	refuse,
	channel,
	exited,
	killed,
};

/** What a session inherits from the front besides what the identity fixes. */
struct request {
	std::uint32_t front_pid = 0;
	std::uint32_t umask = 0;
	std::string cwd;
	std::string identity;                 // the front's identity text (identity.hpp)
	std::vector<std::string> environment; // "NAME=value": the front's whole environment
};

/** One decoded message; the fields its kind does not use stay empty. */
struct message {
	kind what{};
	request req;           // request, job
	std::uint32_t value{}; // accept: pid; exited: status; killed: signal
	bool core = false;     // killed: a core was dumped
	std::string reason;    // refuse
};

std::vector<std::uint8_t> encode_request(const request &r, kind what = kind::request);
std::vector<std::uint8_t> encode_simple(kind what, std::uint32_t value = 0, bool core = false);
std::vector<std::uint8_t> encode_refuse(const std::string &reason);
/** nullopt for anything malformed: a wrong version, a bad kind, bytes missing or left over. */
std::optional<message> decode(std::span<const std::uint8_t> bytes);

/** One packet as received: its bytes and the descriptors that came with it (close-on-exec,
 *  closed with it). */
struct packet {
	std::vector<std::uint8_t> bytes;
	std::vector<rpmem::posix::unique_fd> fds;
};

/** Sends one packet with `fds` attached; 0, or the errno (EPIPE when the peer is gone: no
 *  SIGPIPE). */
int send_packet(int sock, std::span<const std::uint8_t> bytes, std::span<const int> fds = {});
/** Receives one packet within timeout_ms (negative: no limit). nullopt with *err set: 0 at the
 *  end of the stream, ETIMEDOUT, EMSGSIZE for a packet or descriptors cut short, or the
 *  errno of recvmsg. */
std::optional<packet> receive_packet(int sock, int timeout_ms, int *err);

} // namespace rpmemd::resident
