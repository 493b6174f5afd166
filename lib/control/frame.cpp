// SPDX-License-Identifier: BSD-3-Clause
// Frames: header validation, message type names, and moving frames over a byte_stream.
#include "control/codec.hpp"

#include "wire/wire.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace rpmem::control
{

// ---- names and header ----------------------------------------------------------------------

const char *msg_type_name(msg_type t) noexcept
{
	switch (t) {
	case msg_type::hello:
		return "hello";
	case msg_type::create:
		return "create";
	case msg_type::create_resp:
		return "create_resp";
	case msg_type::open:
		return "open";
	case msg_type::open_resp:
		return "open_resp";
	case msg_type::set_attr:
		return "set_attr";
	case msg_type::set_attr_resp:
		return "set_attr_resp";
	case msg_type::close:
		return "close";
	case msg_type::close_resp:
		return "close_resp";
	case msg_type::ping:
		return "ping";
	case msg_type::pong:
		return "pong";
	case msg_type::checksum:
		return "checksum";
	case msg_type::checksum_resp:
		return "checksum_resp";
	case msg_type::create_done:
		return "create_done";
	}
	return "unknown";
}

bool is_known(msg_type t) noexcept
{
	auto v = static_cast<std::uint16_t>(t);
	return v >= static_cast<std::uint16_t>(msg_type::hello) &&
	       v <= static_cast<std::uint16_t>(msg_type::create_done);
}

frame_header decode_header(std::span<const std::uint8_t, header_size> bytes)
{
	auto bad = [](std::string_view problem) {
		return protocol_error(
		    fmt::format("control protocol: received an invalid frame header: "
		                "{}",
		                problem));
	};
	wire::reader r(bytes);
	std::uint32_t magic = r.u32();
	auto type = static_cast<msg_type>(r.u16());
	std::uint16_t flags = r.u16();
	std::uint32_t length = r.u32();
	if (magic != frame_magic)
		throw bad(fmt::format("magic is 0x{:08x}, expected 0x{:08x} (\"RPPM\"); something "
		                      "else writes to the channel (a login script printing text on "
		                      "the remote host, or PMDK's own rpmemd first in PATH)",
		                      magic, frame_magic));
	if (!is_known(type))
		throw bad(fmt::format("unknown message type {}; {}", static_cast<unsigned>(type),
		                      peer_hint));
	if (flags != 0)
		throw bad(fmt::format("flags are 0x{:04x} in a {} message, must be 0; {}", flags,
		                      msg_type_name(type), peer_hint));
	if (length < header_size || length > max_message_size)
		throw bad(fmt::format("length {} of a {} message is outside [{}, {}]; {}", length,
		                      msg_type_name(type), header_size, max_message_size,
		                      peer_hint));
	return frame_header{type, length};
}

// ---- streams -------------------------------------------------------------------------------

void send(rpmem::byte_stream &stream, std::span<const std::uint8_t> frame)
{
	if (frame.size() < header_size || frame.size() > max_message_size)
		throw rpmem::error(EINVAL,
		                   fmt::format("control protocol: refusing to send a {}-byte "
		                               "frame (bug in the caller: send only what "
		                               "encode() returns)",
		                               frame.size()));
	stream.write_all(frame);
}

message receive(rpmem::byte_stream &stream, std::chrono::milliseconds timeout)
{
	using clock = std::chrono::steady_clock;
	const auto start = clock::now();
	std::array<std::uint8_t, header_size> raw{};
	stream.read_exact(raw, timeout);
	frame_header h = decode_header(raw);
	// Allocation is bounded: decode_header refused lengths over max_message_size.
	message m{h.type, std::vector<std::uint8_t>(h.body_size())};
	if (m.body.empty())
		return m;
	auto left = timeout;
	if (timeout.count() >= 0) {
		auto spent =
		    std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - start);
		left = std::max(std::chrono::milliseconds(0), timeout - spent);
	}
	stream.read_exact(m.body, left);
	return m;
}

void check_type(msg_type expected, msg_type got)
{
	if (expected != got)
		throw protocol_error(
		    fmt::format("control protocol: expected message type {}, received "
		                "{}; {}",
		                msg_type_name(expected), msg_type_name(got), peer_hint));
}

} // namespace rpmem::control
