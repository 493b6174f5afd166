// SPDX-License-Identifier: BSD-3-Clause
// The control protocol between librpmem and rpmemd, carried over the SSH exec channel.
// Wire format (docs/protocol.md): every message is a 12-byte header followed by a body, all
// little-endian. Typed messages here; encode/decode with full validation in codec.hpp.
#pragma once

#include "rpmem/pool_attr.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rpmem::control
{

inline constexpr std::uint32_t frame_magic = 0x4d505052; // "RPPM" read little-endian
inline constexpr std::uint16_t proto_major = 1;
/** 1.1: persist_method::commit (rpmemd offers it only to a client that announced 1.1).
 *  1.2: checksum requests (block checksums of the pool, for delta resync).
 *  1.3: create_done (the client's create returned; rpmemd keeps the pool from then on).
 *  1.4: status damaged (rpmemd answers it only to a request that announced 1.4). */
inline constexpr std::uint16_t proto_minor = 4;
inline constexpr std::size_t header_size = 12;
/** No message may be larger than this (header included): no unbounded allocation. */
inline constexpr std::size_t max_message_size = 64 * 1024;
inline constexpr std::size_t max_string = 4096;
inline constexpr std::size_t secret_size = 32;

enum class msg_type : std::uint16_t {
	hello = 1,          // daemon -> client, first message of a session
	create = 2,         // client -> daemon
	create_resp = 3,    // daemon -> client
	open = 4,           // client -> daemon
	open_resp = 5,      // daemon -> client
	set_attr = 6,       // client -> daemon
	set_attr_resp = 7,  // daemon -> client
	close = 8,          // client -> daemon
	close_resp = 9,     // daemon -> client
	ping = 10,          // client -> daemon: liveness check
	pong = 11,          // daemon -> client
	checksum = 12,      // client -> daemon, since 1.2: checksums of blocks of the pool
	checksum_resp = 13, // daemon -> client: one or more per checksum request
	create_done = 14,   // client -> daemon, since 1.3: its create returned; no answer
};

/** PMDK's remote status codes (librpmem 1.12 rpmem_common.h), same values. */
enum class status : std::uint32_t {
	success = 0,
	badproto = 1,
	badname = 2,
	badsize = 3,
	badnlanes = 4,
	badprovider = 5,
	fatal = 6,
	fatal_conn = 7,
	busy = 8,
	exists = 9,
	provnosup = 10,
	noexist = 11,
	noaccess = 12,
	pool_cfg = 13,
	unsupported = 14, // ours, since 1.2: this rpmemd does not serve the request (ENOTSUP)
	/** Ours, since 1.4: the pool set is there and rpmemd answers, but the pool on disk is
	 *  damaged (a part's header is invalid, a part is shorter than the pool set declares,
	 *  an ADR failure): re-creating it from a sound copy repairs it. EINVAL, as PMDK's
	 *  pool_cfg for the same pool; an older client is sent pool_cfg. */
	damaged = 15,
};
inline constexpr std::uint32_t status_count = 16;
inline constexpr std::uint16_t damaged_since_minor = 4;

/** errno PMDK's librpmem maps the status to (EPROTONOSUPPORT, EINVAL, EFBIG, ...). */
int status_errno(status s) noexcept;
/** PMDK's text for the status ("Pool already in use", ...). */
const char *status_text(status s) noexcept;

/** Persistence method the daemon chose for the session (PMDK's values, and one of ours). */
enum class persist_method : std::uint32_t {
	gpspm = 1,  // write, then a message; the daemon persists and replies
	apm = 2,    // write, then an RDMA read (replica declares NIC writes durable)
	commit = 3, // since 1.1: a write with FI_COMMIT_COMPLETE is durable when it completes
};
inline constexpr std::uint16_t commit_since_minor = 1;

/** Whether v is a method this version knows. */
bool known_method(std::uint32_t v) noexcept;
/** "gpspm", "apm", "commit": the names options and tables use. */
const char *to_string(persist_method m) noexcept;
/** One line for people: "GPSPM (rpmemd persists each range and answers)", ... */
const char *describe(persist_method m) noexcept;

/** The 104-byte attribute block of struct rpmem_pool_attr (declared once, for every layer). */
using pool_attr = rpmem::pool_attr;
inline constexpr std::size_t pool_attr_size = 104;

/** First message of every session, sent by rpmemd as soon as it has started (or failed to). */
struct hello {
	status st = status::success;
	std::uint32_t err = 0; // errno of a start-up failure
	std::uint16_t major = proto_major;
	std::uint16_t minor = proto_minor;
	std::string daemon_version;
	std::string message; // what failed, when st != success

	bool operator==(const hello &) const = default;
};

/** create and open requests. */
struct pool_request {
	std::uint16_t major = proto_major;
	std::uint16_t minor = proto_minor;
	std::uint64_t pool_size = 0; // bytes the client maps; the daemon registers exactly this
	std::uint32_t nlanes = 0;    // lanes requested
	std::string provider;        // libfabric provider the client selected ("tcp", "verbs", ...)
	std::string descriptor;      // pool set name relative to the daemon's poolset dir
	std::optional<pool_attr> attr; // create only; nullopt: a pool without headers (NOHDRS)

	bool operator==(const pool_request &) const = default;
};

/** What the client needs to connect the fabric, sent by the daemon in create/open responses. */
struct fabric_params {
	std::string provider;
	std::string address; // numeric address the daemon listens on (where SSH arrived)
	std::uint16_t port = 0;
	std::uint64_t rkey = 0;
	std::uint64_t raddr = 0; // remote address of pool offset 0 (0 when the MR is offset based)
	std::uint64_t mr_mode = 0;    // what the daemon's provider granted
	std::uint32_t nlanes = 0;     // lanes granted
	std::uint32_t nendpoints = 0; // fabric connections the daemon will accept
	std::uint32_t inline_max = 0; // largest inline persist payload the daemon accepts
	/** Persist messages in flight per endpoint the daemon can take. */
	std::uint32_t queue_depth = 0;
	persist_method method = persist_method::gpspm;
	/** One-time: binds fabric connections to this SSH session. */
	std::array<std::uint8_t, secret_size> secret{};

	bool operator==(const fabric_params &) const = default;
};

/** create_resp and open_resp. */
struct pool_response {
	status st = status::success;
	std::uint32_t err = 0;       // daemon-side errno behind a failure, for the message
	std::string message;         // what failed on the daemon and what to do
	fabric_params fabric;        // meaningful when st == success
	pool_attr attr;              // open_resp: the pool's attributes (zeros for NOHDRS)
	std::uint64_t pool_size = 0; // usable size of the remote pool
	bool is_pmem = false; // remote pool is on persistent memory (pmem_persist) or msync'ed

	bool operator==(const pool_response &) const = default;
};

struct set_attr_request {
	std::optional<pool_attr> attr; // nullopt is sent as zeros

	bool operator==(const set_attr_request &) const = default;
};

inline constexpr std::uint32_t close_flag_remove = 0x1; // delete a pool created in this session

struct close_request {
	std::uint32_t flags = 0;

	bool operator==(const close_request &) const = default;
};

/** set_attr_resp, close_resp. */
struct status_response {
	status st = status::success;
	std::uint32_t err = 0;
	std::string message;

	bool operator==(const status_response &) const = default;
};

/** Since 1.2: a daemon whose hello announces an older minor does not know checksum requests. */
inline constexpr std::uint16_t checksum_since_minor = 2;

/** Block checksum algorithms (checksum_request::algorithm). */
enum class checksum_algorithm : std::uint32_t {
	xxh3_128 = 1, // XXH3, 128-bit (libxxhash)
};
inline constexpr std::uint32_t min_checksum_block = 4096;
inline constexpr std::uint32_t max_checksum_block = 64u << 20;
/** Checksums one checksum_resp carries at most (32 KiB of them). */
inline constexpr std::uint32_t max_checksums_per_message = 2048;

/** One block's checksum (XXH3-128: low and high halves). */
struct block_sum {
	std::uint64_t lo = 0;
	std::uint64_t hi = 0;

	bool operator==(const block_sum &) const = default;
};

/**
 * Checksums of the blocks of [offset, offset + length) of the pool, block_size bytes each (the
 * last one shorter when length is not a multiple). Answered by checksum_resp messages in order,
 * the last with last = true, or by one with a failure status.
 */
struct checksum_request {
	std::uint64_t offset = 0;
	std::uint64_t length = 0;
	std::uint32_t block_size = 64 * 1024; // a power of two, min..max_checksum_block
	checksum_algorithm algorithm = checksum_algorithm::xxh3_128;

	bool operator==(const checksum_request &) const = default;
};

/** Blocks (so checksums) the request covers: its last block may be short. */
constexpr std::uint64_t checksum_count(const checksum_request &r) noexcept
{
	return (r.length + r.block_size - 1) / r.block_size;
}

struct checksum_response {
	status st = status::success;
	std::uint32_t err = 0;
	std::string message;           // what failed, when st != success
	std::uint64_t first_block = 0; // index of sums[0], counted from the request's offset
	bool last = false;             // the final response to the request
	std::vector<block_sum> sums;   // at most max_checksums_per_message

	bool operator==(const checksum_response &) const = default;
};

/**
 * Since 1.3, sent by the client when its create is about to return (its fabric connections are
 * up), and not answered. A pool created in a session stays when its client vanishes only if
 * this arrived first: before it, nothing the application wrote can have been acknowledged.
 * rpmemd judges a client older than 1.3 by what its fabric saw (docs/protocol.md).
 */
struct create_done {
	bool operator==(const create_done &) const = default;
};
inline constexpr std::uint16_t create_done_since_minor = 3;

struct ping {
	std::uint64_t cookie = 0;

	bool operator==(const ping &) const = default;
};
struct pong {
	std::uint64_t cookie = 0;

	bool operator==(const pong &) const = default;
};

} // namespace rpmem::control
