// SPDX-License-Identifier: BSD-3-Clause
// In-band messages carried over the fabric connections (docs/protocol.md, "Lane messages").
// A request is a 32-byte header, optionally followed by inline data (persist_inline) or by an
// array of ranges (drain). A response is 16 bytes. Little-endian like every rpmem wire format.
#pragma once

#include "common/wire.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>

namespace rpmem::lane
{

enum class op : std::uint16_t {
	persist = 1, // data already written by RDMA write at [offset, offset+length): persist it
	persist_inline = 2, // data follows the header: copy (8-byte atomic) and persist
	deep_persist = 3,   // data already written: persist down to the media (msync even on pmem)
	drain = 4, // persist every range listed after the header (a lane's relaxed flushes)
};

inline constexpr std::uint16_t request_magic = 0x4c52; // "RL"
inline constexpr std::size_t request_header_size = 32;
inline constexpr std::size_t response_size = 16;
inline constexpr std::size_t range_size = 16;

struct request {
	op kind = op::persist;
	std::uint32_t lane = 0;
	std::uint64_t offset = 0;
	std::uint64_t length = 0; // persist: bytes; inline: bytes of data; drain: number of ranges
	std::uint64_t cookie = 0; // echoed in the response
};

struct range {
	std::uint64_t offset = 0;
	std::uint64_t length = 0;
};

struct response {
	std::uint32_t lane = 0;
	std::uint32_t err = 0; // 0, or a positive errno: what went wrong on the daemon
	std::uint64_t cookie = 0;
};

inline void encode(const request &r, std::uint8_t *out)
{
	std::uint8_t *p = out;
	auto put = [&p](std::uint64_t v, int n) {
		for (int i = 0; i < n; ++i)
			*p++ = static_cast<std::uint8_t>(v >> (8 * i));
	};
	put(request_magic, 2);
	put(static_cast<std::uint16_t>(r.kind), 2);
	put(r.lane, 4);
	put(r.offset, 8);
	put(r.length, 8);
	put(r.cookie, 8);
}

/** Decodes a request header; nullopt when the bytes are not a well-formed header. */
inline std::optional<request> decode_request(std::span<const std::uint8_t> in)
{
	wire::reader rd(in.first(std::min(in.size(), request_header_size)));
	std::uint16_t magic = rd.u16();
	std::uint16_t kind = rd.u16();
	request r;
	r.lane = rd.u32();
	r.offset = rd.u64();
	r.length = rd.u64();
	r.cookie = rd.u64();
	if (!rd.ok() || magic != request_magic || kind < 1 || kind > 4)
		return std::nullopt;
	r.kind = static_cast<op>(kind);
	return r;
}

inline void encode(const range &r, std::uint8_t *out)
{
	for (int i = 0; i < 8; ++i) {
		out[i] = static_cast<std::uint8_t>(r.offset >> (8 * i));
		out[8 + i] = static_cast<std::uint8_t>(r.length >> (8 * i));
	}
}

inline range decode_range(const std::uint8_t *in)
{
	range r;
	for (int i = 0; i < 8; ++i) {
		r.offset |= static_cast<std::uint64_t>(in[i]) << (8 * i);
		r.length |= static_cast<std::uint64_t>(in[8 + i]) << (8 * i);
	}
	return r;
}

inline void encode(const response &r, std::uint8_t *out)
{
	for (int i = 0; i < 4; ++i) {
		out[i] = static_cast<std::uint8_t>(r.lane >> (8 * i));
		out[4 + i] = static_cast<std::uint8_t>(r.err >> (8 * i));
	}
	for (int i = 0; i < 8; ++i)
		out[8 + i] = static_cast<std::uint8_t>(r.cookie >> (8 * i));
}

inline std::optional<response> decode_response(std::span<const std::uint8_t> in)
{
	if (in.size() != response_size)
		return std::nullopt;
	wire::reader rd(in);
	response r;
	r.lane = rd.u32();
	r.err = rd.u32();
	r.cookie = rd.u64();
	return r;
}

/** Private data a client presents with each fabric connection request. */
struct conn_data {
	std::uint8_t secret[32];
	std::uint32_t endpoint;
};
inline constexpr std::size_t conn_data_size = 36;

} // namespace rpmem::lane
