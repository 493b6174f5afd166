// SPDX-License-Identifier: BSD-3-Clause
// In-band messages carried over the fabric connections (docs/protocol.md, "Lane messages").
//
// A request is a 32-byte header and a payload. `persist` carries a batch of entries: each entry
// is a range (16 bytes) optionally followed by its data inline (padded to 8 bytes); ranges without
// data were written by RDMA before the request (send-after-write order). The daemon copies inline
// data with 8-byte-atomic stores, then makes every range durable, then answers with a 16-byte
// response. One message therefore carries one persist, or many relaxed flushes and their drain.
// Little-endian like every rpmem wire format.
#pragma once

#include "wire/wire.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

namespace rpmem::lane
{

enum class op : std::uint16_t {
	persist = 1,      // payload: `length` entries; persist every range (pmem_persist / msync)
	deep_persist = 2, // [offset, offset+length) already written: persist down to the media
};

inline constexpr std::uint16_t request_magic = 0x4c52; // "RL"
inline constexpr std::size_t request_header_size = 32;
inline constexpr std::size_t response_size = 16;
inline constexpr std::size_t entry_header_size = 16;
inline constexpr std::uint64_t entry_inline_flag = 1ULL << 63;

struct request {
	op kind = op::persist;
	std::uint32_t lane = 0;
	std::uint64_t offset = 0; // deep_persist: start of the range; persist: 0
	std::uint64_t length = 0; // deep_persist: bytes; persist: number of entries
	std::uint64_t cookie = 0; // echoed in the response
};

/** One range of a persist batch; `data` points into the payload when the bytes travel inline. */
struct entry {
	std::uint64_t offset = 0;
	std::uint64_t length = 0;
	const std::uint8_t *data = nullptr;
};

struct response {
	std::uint32_t lane = 0;
	std::uint32_t err = 0; // 0, or a positive errno: what went wrong on the daemon
	std::uint64_t cookie = 0;
};

inline constexpr std::size_t padded(std::size_t n)
{
	return (n + 7) & ~std::size_t(7);
}

/** Bytes an entry takes in the payload. */
inline constexpr std::size_t entry_size(std::uint64_t length, bool with_data)
{
	return entry_header_size + (with_data ? padded(length) : 0);
}

inline void encode(const request &r, std::uint8_t *out)
{
	wire::fixed_writer w(out);
	w.u16(request_magic);
	w.u16(static_cast<std::uint16_t>(r.kind));
	w.u32(r.lane);
	w.u64(r.offset);
	w.u64(r.length);
	w.u64(r.cookie);
}

/** Decodes a request header; nullopt when the bytes are not a well-formed header. */
inline std::optional<request> decode_request(std::span<const std::uint8_t> in)
{
	if (in.size() < request_header_size)
		return std::nullopt;
	wire::reader rd(in.first(request_header_size));
	std::uint16_t magic = rd.u16();
	std::uint16_t kind = rd.u16();
	request r;
	r.lane = rd.u32();
	r.offset = rd.u64();
	r.length = rd.u64();
	r.cookie = rd.u64();
	if (!rd.ok() || magic != request_magic || kind < 1 || kind > 2)
		return std::nullopt;
	r.kind = static_cast<op>(kind);
	return r;
}

/** Writes an entry at out; copies `data` (length bytes, zero padded) when given. Returns the
 * bytes written. */
inline std::size_t encode(std::uint64_t offset, std::uint64_t length, const void *data,
                          std::uint8_t *out)
{
	wire::fixed_writer w(out);
	w.u64(offset);
	w.u64(length | (data ? entry_inline_flag : 0));
	if (!data)
		return entry_header_size;
	w.bytes(data, length);
	std::memset(w.pos(), 0, padded(length) - length);
	return entry_size(length, true);
}

/**
 * Walks a persist payload. next() returns the next entry or nullopt at the end; ok() tells
 * whether the payload was well formed (every entry complete, nothing left over, count matched).
 */
class entry_reader
{
public:
	entry_reader(std::span<const std::uint8_t> payload, std::uint64_t count)
	    : payload_(payload), left_(count)
	{
	}
	std::optional<entry> next()
	{
		if (left_ == 0) {
			ok_ = ok_ && pos_ == payload_.size();
			return std::nullopt;
		}
		if (payload_.size() - pos_ < entry_header_size) {
			ok_ = false;
			return std::nullopt;
		}
		wire::reader rd(payload_.subspan(pos_, entry_header_size));
		entry e;
		e.offset = rd.u64();
		std::uint64_t len = rd.u64();
		pos_ += entry_header_size;
		e.length = len & ~entry_inline_flag;
		if (len & entry_inline_flag) {
			if (e.length > payload_.size() - pos_ ||
			    padded(e.length) > payload_.size() - pos_) {
				ok_ = false;
				return std::nullopt;
			}
			e.data = payload_.data() + pos_;
			pos_ += padded(e.length);
		}
		--left_;
		return e;
	}
	bool ok() const { return ok_; }

private:
	std::span<const std::uint8_t> payload_;
	std::uint64_t left_;
	std::size_t pos_ = 0;
	bool ok_ = true;
};

inline void encode(const response &r, std::uint8_t *out)
{
	wire::fixed_writer w(out);
	w.u32(r.lane);
	w.u32(r.err);
	w.u64(r.cookie);
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

/** Private data a client presents with each fabric connection request: the session's secret
 * (32 bytes) and the index of the endpoint (u32). */
struct conn_data {
	std::array<std::uint8_t, 32> secret{};
	std::uint32_t endpoint = 0;
};
inline constexpr std::size_t conn_data_size = 36;

inline void encode(const conn_data &c, std::uint8_t *out)
{
	wire::fixed_writer w(out);
	w.bytes(c.secret.data(), c.secret.size());
	w.u32(c.endpoint);
}

/** nullopt unless exactly conn_data_size bytes. */
inline std::optional<conn_data> decode_conn_data(std::span<const std::uint8_t> in)
{
	if (in.size() != conn_data_size)
		return std::nullopt;
	conn_data c;
	std::memcpy(c.secret.data(), in.data(), c.secret.size());
	wire::reader rd(in.subspan(c.secret.size()));
	c.endpoint = rd.u32();
	return c;
}

} // namespace rpmem::lane
