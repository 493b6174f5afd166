// SPDX-License-Identifier: BSD-3-Clause
// The rules every control message's codec follows (private to lib/control): what reports a broken
// rule, how a frame is built and a body read, and the one encode and decode path each message
// takes. A message supplies its layout (codec.cpp): the types it is sent as, its rules, and its
// body written and read in one field order (docs/protocol.md).
#pragma once

#include "control/codec.hpp"

#include "wire/wire.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <string_view>

namespace rpmem::control
{

/**
 * Reports a rule broken by a message. Decoding blames the peer (protocol_error, EPROTO); encoding
 * blames the local caller (rpmem::error, EINVAL). Both name the message type and the field.
 */
class checker
{
public:
	checker(msg_type type, bool decoding) : type_(type), decoding_(decoding) {}

	msg_type type() const { return type_; }

	[[noreturn]] void fail(std::string_view field, std::string_view problem) const
	{
		if (decoding_)
			throw protocol_error(
			    fmt::format("control protocol: invalid {} message received: {} {}; {}",
			                msg_type_name(type_), field, problem, peer_hint));
		throw rpmem::error(
		    EINVAL, fmt::format("control protocol: invalid {} message not sent: {} {}",
		                        msg_type_name(type_), field, problem));
	}

	void require(bool ok, std::string_view field, std::string_view problem) const
	{
		if (!ok)
			fail(field, problem);
	}

	/** Strings are text for C APIs and logs: bounded, and never holding a NUL byte. */
	void text(std::string_view field, const std::string &s, std::size_t max,
	          bool non_empty) const
	{
		if (s.size() > max)
			fail(field,
			     fmt::format("is {} bytes long, over the limit of {}", s.size(), max));
		if (non_empty && s.empty())
			fail(field, "is empty");
		if (auto nul = s.find('\0'); nul != std::string::npos)
			fail(field, fmt::format("contains a NUL byte at offset {}", nul));
	}

	void known(std::string_view field, status s) const
	{
		auto v = static_cast<std::uint32_t>(s);
		if (v >= status_count)
			fail(field, fmt::format("has unknown status value {}", v));
	}

	void known(std::string_view field, persist_method m) const
	{
		auto v = static_cast<std::uint32_t>(m);
		if (!known_method(v))
			fail(field,
			     fmt::format("has unknown persistence method {} (known: 1 gpspm, "
			                 "2 apm, 3 commit)",
			                 v));
	}

private:
	msg_type type_;
	bool decoding_;
};

/** Programming errors of the caller of this codec (not of the peer). */
inline void require_type(msg_type type, msg_type a, msg_type b, const char *what)
{
	if (type != a && type != b)
		throw rpmem::error(EINVAL,
		                   fmt::format("control protocol: a {} is sent as {} or {}, not "
		                               "as {} (bug in the caller)",
		                               what, msg_type_name(a), msg_type_name(b),
		                               msg_type_name(type)));
}

/** A received message of another type than the two a message struct is sent as. */
inline void check_decoded_type(msg_type got, msg_type a, msg_type b)
{
	if (got != a && got != b)
		throw protocol_error(
		    fmt::format("control protocol: received message type {} where {} or "
		                "{} was expected; {}",
		                msg_type_name(got), msg_type_name(a), msg_type_name(b), peer_hint));
}

/** Checked before anything else: another major may lay out the rest of the body differently. */
inline void check_major(std::uint16_t major, std::uint16_t minor, const checker &c)
{
	if (major != proto_major)
		c.fail("major", fmt::format("is protocol version {}.{}, this side speaks {}.{}",
		                            major, minor, proto_major, proto_minor));
}

// ---- writing -------------------------------------------------------------------------------

inline void put_attr(wire::writer &w, const pool_attr &a)
{
	w.bytes(a.signature.data(), a.signature.size());
	w.u32(a.major);
	w.u32(a.compat_features);
	w.u32(a.incompat_features);
	w.u32(a.ro_compat_features);
	for (const auto *id : {&a.poolset_uuid, &a.uuid, &a.next_uuid, &a.prev_uuid, &a.user_flags})
		w.bytes(*id);
}

inline void put_optional_attr(wire::writer &w, const std::optional<pool_attr> &a)
{
	w.u8(a ? 1 : 0);
	put_attr(w, a.value_or(pool_attr{})); // absent: zeros, so the body size never varies
}

inline constexpr std::size_t length_offset = 8;

/** Builds header + body; body_fn(writer&) appends the body. */
template <class BodyFn> std::vector<std::uint8_t> build_frame(const checker &c, BodyFn &&body_fn)
{
	std::vector<std::uint8_t> out;
	out.reserve(256);
	wire::writer w(out);
	w.u32(frame_magic);
	w.u16(static_cast<std::uint16_t>(c.type()));
	w.u16(0); // flags
	w.u32(0); // length, patched below
	body_fn(w);
	// Unreachable with today's limits (largest body ~37 KiB, a full checksum_resp); kept so a
	// new field cannot silently produce frames the peer must refuse.
	if (out.size() > max_message_size)
		c.fail("frame",
		       fmt::format("would be {} bytes, over max_message_size", out.size()));
	auto len = static_cast<std::uint32_t>(out.size());
	for (std::size_t i = 0; i < 4; ++i)
		out[length_offset + i] = static_cast<std::uint8_t>(len >> (8 * i));
	return out;
}

// ---- reading -------------------------------------------------------------------------------

/** wire::reader that reports the first short read or malformed field by name. */
class body_reader
{
public:
	body_reader(std::span<const std::uint8_t> body, const checker &c) : r_(body), c_(c) {}

	std::uint8_t u8(std::string_view f) { return checked(r_.u8(), f); }
	std::uint16_t u16(std::string_view f) { return checked(r_.u16(), f); }
	std::uint32_t u32(std::string_view f) { return checked(r_.u32(), f); }
	std::uint64_t u64(std::string_view f) { return checked(r_.u64(), f); }

	template <std::size_t N> void bytes(std::array<std::uint8_t, N> &dst, std::string_view f)
	{
		if (!r_.bytes(dst.data(), N))
			truncated(f);
	}

	bool boolean(std::string_view f)
	{
		std::uint8_t v = u8(f);
		if (v > 1)
			c_.fail(f, fmt::format("is {} where a bool (0 or 1) is expected", v));
		return v == 1;
	}

	/** Limits and content are checked by the message's rules, in one place for encode and
	 *  decode. */
	std::string str(std::string_view f)
	{
		std::size_t n = u16(f);
		if (n > r_.remaining())
			truncated(f);
		std::string s(n, '\0');
		r_.bytes(s.data(), n);
		return s;
	}

	pool_attr attr(std::string_view f)
	{
		pool_attr a;
		if (!r_.bytes(a.signature.data(), a.signature.size()))
			truncated(f);
		a.major = u32(f);
		a.compat_features = u32(f);
		a.incompat_features = u32(f);
		a.ro_compat_features = u32(f);
		for (auto *id :
		     {&a.poolset_uuid, &a.uuid, &a.next_uuid, &a.prev_uuid, &a.user_flags})
			bytes(*id, f);
		return a;
	}

	std::optional<pool_attr> optional_attr(std::string_view f)
	{
		bool present = boolean(f);
		pool_attr a = attr(f);
		if (present)
			return a;
		c_.require(a.is_zero(), f, "is marked absent but its 104 bytes are not zero");
		return std::nullopt;
	}

	/** The body must be consumed exactly: trailing bytes mean the layouts disagree. */
	void finish()
	{
		if (r_.remaining() != 0)
			c_.fail("body",
			        fmt::format("has {} unexpected trailing bytes", r_.remaining()));
	}

private:
	template <class T> T checked(T v, std::string_view f)
	{
		if (!r_.ok())
			truncated(f);
		return v;
	}
	[[noreturn]] void truncated(std::string_view f)
	{
		c_.fail(f, "is cut short (the body ends inside it)");
	}

	wire::reader r_;
	const checker &c_;
};

// ---- one path for every message ------------------------------------------------------------

/**
 * A message's layout (specialized for each message struct in codec.cpp):
 *   static constexpr std::array sent_as     the one or two types it travels as
 *   static constexpr const char *name       (two types only) the struct's name, for errors
 *   static void check(const T &, const checker &)          the rules, on both sides
 *   static void write(wire::writer &, const T &)           the body, field by field
 *   static void read(body_reader &, T &, const checker &)  the same fields, in the same order
 *   static std::optional<T> foreign(std::span<const std::uint8_t>)   (optional) a body of
 *       another protocol version, answered without reading the rest
 */
template <class T> struct layout;

/** Encoding blames the caller for a type the message is not sent as. */
template <class T> void require_sent_as(msg_type type)
{
	constexpr auto &as = layout<T>::sent_as;
	if constexpr (as.size() == 2)
		require_type(type, as[0], as[1], layout<T>::name);
}

template <class T> std::vector<std::uint8_t> encode_as(const T &m, msg_type type)
{
	require_sent_as<T>(type);
	checker c(type, false);
	layout<T>::check(m, c);
	return build_frame(c, [&](wire::writer &w) { layout<T>::write(w, m); });
}

template <class T> std::vector<std::uint8_t> encode_as(const T &m)
{
	return encode_as(m, layout<T>::sent_as[0]);
}

template <class T> T decode_body(std::span<const std::uint8_t> body, msg_type type)
{
	require_sent_as<T>(type);
	if constexpr (requires { layout<T>::foreign(body); }) {
		if (auto other = layout<T>::foreign(body))
			return *other;
	}
	checker c(type, true);
	body_reader r(body, c);
	T m;
	layout<T>::read(r, m, c);
	r.finish();
	layout<T>::check(m, c);
	return m;
}

template <class T> T decode_body(std::span<const std::uint8_t> body)
{
	return decode_body<T>(body, layout<T>::sent_as[0]);
}

/** The one decoder of a received message: its type checked against the struct's, then its body. */
template <class T> T decode(const message &m)
{
	constexpr auto &as = layout<T>::sent_as;
	if constexpr (as.size() == 2)
		check_decoded_type(m.type, as[0], as[1]);
	else
		check_type(as[0], m.type);
	return decode_body<T>(m.body, m.type);
}

} // namespace rpmem::control
