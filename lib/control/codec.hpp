// SPDX-License-Identifier: BSD-3-Clause
// Encoding and decoding of control-protocol frames (wire format: docs/protocol.md).
//
// Decoding validates every field — lengths, enum values, bools, string limits, the semantic ranges
// listed in docs/protocol.md — and requires the body to be consumed exactly, so a decoded message
// is always one the encoder could have produced (the encoding is canonical). Nothing is allocated
// beyond max_message_size whatever the peer sends.
//
// Errors: decoding throws protocol_error (errno EPROTO) naming the message type and the field.
// Encoding a message that breaks the same rules throws rpmem::error(EINVAL): the values came from
// the local caller, e.g. a pool set name longer than max_string. Messages do not name the peer
// host; callers that know it add it.
#pragma once

#include "control/messages.hpp"
#include "wire/stream.hpp"

#include <rpmem/error.hpp>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rpmem::control
{

/** A received message broke the protocol. errnum() is EPROTO. */
class protocol_error : public rpmem::error
{
public:
	explicit protocol_error(const std::string &message) : rpmem::error(EPROTO, message) {}
};

/** Ends protocol_error messages: what the user can do about a peer that breaks the protocol. */
inline constexpr const char *peer_hint =
    "the peer is broken or runs an incompatible rpmem version: install the same rpmem release on "
    "client and server";

/** Largest provider name accepted ("verbs;ofi_rxm" fits); libfabric names are short. */
inline constexpr std::size_t max_provider = 32;

/** "hello", "create", ... or "unknown" for a value outside msg_type. */
const char *msg_type_name(msg_type t) noexcept;
/** True for the values msg_type declares. */
bool is_known(msg_type t) noexcept;

/** A validated frame header: known type, flags zero, header_size <= length <= max_message_size. */
struct frame_header {
	msg_type type = msg_type::hello;
	std::uint32_t length = header_size; // whole frame, header included

	std::size_t body_size() const noexcept { return length - header_size; }
	bool operator==(const frame_header &) const = default;
};

frame_header decode_header(std::span<const std::uint8_t, header_size> bytes);

// Each encode() returns a complete frame: header + body. Messages shared by two types take the
// type: create/open, create_resp/open_resp, set_attr_resp/close_resp.
std::vector<std::uint8_t> encode(const hello &m);
std::vector<std::uint8_t> encode(const pool_request &m, msg_type type);
std::vector<std::uint8_t> encode(const pool_response &m, msg_type type);
std::vector<std::uint8_t> encode(const set_attr_request &m);
std::vector<std::uint8_t> encode(const close_request &m);
std::vector<std::uint8_t> encode(const status_response &m, msg_type type);
std::vector<std::uint8_t> encode(const ping &m);
std::vector<std::uint8_t> encode(const pong &m);
std::vector<std::uint8_t> encode(const checksum_request &m);
std::vector<std::uint8_t> encode(const checksum_response &m);
std::vector<std::uint8_t> encode(const create_done &m);

// Each decoder takes a body (the frame without its header). The type argument selects the
// type-specific rules (an open request carries no attributes) and names the message in errors.

/**
 * A hello whose major version differs from proto_major is not an error here: only its frozen
 * prefix (major, minor) is read, and the result has st = badproto, err = EPROTONOSUPPORT and a
 * message naming both versions, so the client reports it like any failed start-up.
 */
hello decode_hello(std::span<const std::uint8_t> body);
/** A request whose major version differs throws protocol_error naming both versions. */
pool_request decode_pool_request(std::span<const std::uint8_t> body,
                                 msg_type type = msg_type::create);
pool_response decode_pool_response(std::span<const std::uint8_t> body,
                                   msg_type type = msg_type::create_resp);
set_attr_request decode_set_attr_request(std::span<const std::uint8_t> body);
close_request decode_close_request(std::span<const std::uint8_t> body);
status_response decode_status_response(std::span<const std::uint8_t> body,
                                       msg_type type = msg_type::set_attr_resp);
ping decode_ping(std::span<const std::uint8_t> body);
pong decode_pong(std::span<const std::uint8_t> body);
/** block_size a power of two in [min_checksum_block, max_checksum_block], length > 0, the
 *  range not wrapping, a known algorithm. */
checksum_request decode_checksum_request(std::span<const std::uint8_t> body);
/** At most max_checksums_per_message sums; a failure carries none and is the last. */
checksum_response decode_checksum_response(std::span<const std::uint8_t> body);
/** An empty body. */
create_done decode_create_done(std::span<const std::uint8_t> body);

/** A received frame whose header was validated; the body is not decoded yet. */
struct message {
	msg_type type = msg_type::hello;
	std::vector<std::uint8_t> body;
};

/** Writes one complete frame (as returned by encode) to the stream. */
void send(rpmem::byte_stream &stream, std::span<const std::uint8_t> frame);

/**
 * Reads one frame: the header, validated, then exactly its body. The timeout bounds the whole
 * frame (negative: wait forever). Throws protocol_error for a bad header, and what the stream
 * throws (ECONNRESET, ETIMEDOUT) for transport failures.
 */
message receive(rpmem::byte_stream &stream, std::chrono::milliseconds timeout);

/**
 * Decodes a received message as T; m.type must be one T is sent as (pool_request: create or open,
 * pool_response: create_resp or open_resp, status_response: set_attr_resp or close_resp, the
 * others their own type). Defined for the eleven message structs (one template: layout.hpp).
 */
template <class T> T decode(const message &m);

/** Throws protocol_error "expected <expected> message, received <got>" unless they are equal. */
void check_type(msg_type expected, msg_type got);

/** Receives one message, which must be of the given type, and decodes it as T. */
template <class T>
T expect(rpmem::byte_stream &stream, msg_type type, std::chrono::milliseconds timeout)
{
	message m = receive(stream, timeout);
	check_type(type, m.type);
	return decode<T>(m);
}

} // namespace rpmem::control
