// SPDX-License-Identifier: BSD-3-Clause
// Control-protocol codec. Field order and sizes are documented in docs/protocol.md; a change here
// without a change there (and a proto_major bump) breaks the golden-bytes unit test on purpose.
#include "control/codec.hpp"

#include "wire/wire.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>

namespace rpmem::control
{

namespace
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
void require_type(msg_type type, msg_type a, msg_type b, const char *what)
{
	if (type != a && type != b)
		throw rpmem::error(EINVAL,
		                   fmt::format("control protocol: a {} is sent as {} or {}, not "
		                               "as {} (bug in the caller)",
		                               what, msg_type_name(a), msg_type_name(b),
		                               msg_type_name(type)));
}

// ---- validation shared by encode and decode -----------------------------------------------

/** Checked before anything else: another major may lay out the rest of the body differently. */
void check_major(std::uint16_t major, std::uint16_t minor, const checker &c)
{
	if (major != proto_major)
		c.fail("major", fmt::format("is protocol version {}.{}, this side speaks {}.{}",
		                            major, minor, proto_major, proto_minor));
}

void validate(const hello &m, const checker &c)
{
	check_major(m.major, m.minor, c);
	c.known("status", m.st);
	c.text("daemon_version", m.daemon_version, max_string, false);
	c.text("message", m.message, max_string, false);
}

void validate(const pool_request &m, const checker &c)
{
	check_major(m.major, m.minor, c);
	c.require(m.pool_size > 0, "pool_size", "is 0");
	c.require(m.nlanes >= 1, "nlanes", "is 0 (at least one lane is needed)");
	c.text("provider", m.provider, max_provider, true);
	c.text("descriptor", m.descriptor, max_string, true);
	if (c.type() == msg_type::open)
		c.require(!m.attr, "attr", "is present (only create carries pool attributes)");
}

void validate(const pool_response &m, const checker &c)
{
	const fabric_params &f = m.fabric;
	c.known("status", m.st);
	c.text("message", m.message, max_string, false);
	c.known("fabric.method", f.method);
	bool ok = m.st == status::success;
	c.text("fabric.provider", f.provider, max_provider, ok);
	c.text("fabric.address", f.address, max_string, ok);
	if (!ok)
		return; // the daemon failed: nothing else is meaningful
	c.require(f.port != 0, "fabric.port", "is 0 in a success response");
	c.require(f.nlanes >= 1, "fabric.nlanes", "is 0 in a success response");
	c.require(f.nendpoints >= 1, "fabric.nendpoints", "is 0 in a success response");
	c.require(f.queue_depth >= 1, "fabric.queue_depth", "is 0 in a success response");
	c.require(m.pool_size > 0, "pool_size", "is 0 in a success response");
}

void validate(const close_request &m, const checker &c)
{
	std::uint32_t unknown = m.flags & ~close_flag_remove;
	if (unknown != 0)
		c.fail("flags", fmt::format("has unknown bits 0x{:x}", unknown));
}

void validate(const status_response &m, const checker &c)
{
	c.known("status", m.st);
	c.text("message", m.message, max_string, false);
}

void validate(const checksum_request &m, const checker &c)
{
	c.require(
	    m.algorithm == checksum_algorithm::xxh3_128, "algorithm",
	    fmt::format("is {} (known: 1 xxh3_128)", static_cast<std::uint32_t>(m.algorithm)));
	c.require(m.block_size >= min_checksum_block && m.block_size <= max_checksum_block &&
	              (m.block_size & (m.block_size - 1)) == 0,
	          "block_size",
	          fmt::format("is {}, not a power of two from {} to {}", m.block_size,
	                      min_checksum_block, max_checksum_block));
	c.require(m.length > 0, "length", "is 0");
	c.require(m.offset + m.length > m.offset, "offset + length",
	          fmt::format("wraps around (offset {}, length {})", m.offset, m.length));
}

void validate(const checksum_response &m, const checker &c)
{
	c.known("status", m.st);
	c.text("message", m.message, max_string, false);
	c.require(
	    m.sums.size() <= max_checksums_per_message, "count",
	    fmt::format("is {}, over the limit of {}", m.sums.size(), max_checksums_per_message));
	if (m.st != status::success) {
		c.require(m.sums.empty(), "count", "is not 0 in a failure response");
		c.require(m.last, "last", "is 0 in a failure response (a failure ends the answer)");
	}
}

// Any value of their fields is valid; present so decode_with() can treat every message alike.
void validate(const set_attr_request &, const checker &) {}
void validate(const ping &, const checker &) {}
void validate(const pong &, const checker &) {}
void validate(const create_done &, const checker &) {}

// ---- encoding ------------------------------------------------------------------------------

constexpr std::size_t length_offset = 8;

void put_attr(wire::writer &w, const pool_attr &a)
{
	w.bytes(a.signature.data(), a.signature.size());
	w.u32(a.major);
	w.u32(a.compat_features);
	w.u32(a.incompat_features);
	w.u32(a.ro_compat_features);
	for (const auto *id : {&a.poolset_uuid, &a.uuid, &a.next_uuid, &a.prev_uuid, &a.user_flags})
		w.bytes(*id);
}

void put_optional_attr(wire::writer &w, const std::optional<pool_attr> &a)
{
	w.u8(a ? 1 : 0);
	put_attr(w, a.value_or(pool_attr{})); // absent: zeros, so the body size never varies
}

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

// ---- decoding ------------------------------------------------------------------------------

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

	/** Limits and content are checked by validate(), in one place for encode and decode. */
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

template <class T>
T decode_with(msg_type type, std::span<const std::uint8_t> body,
              void (*read_fn)(body_reader &, T &, const checker &))
{
	checker c(type, true);
	body_reader r(body, c);
	T m;
	read_fn(r, m, c);
	r.finish();
	validate(m, c);
	return m;
}

void read_pool_request(body_reader &r, pool_request &m, const checker &c)
{
	m.major = r.u16("major");
	m.minor = r.u16("minor");
	check_major(m.major, m.minor, c);
	m.pool_size = r.u64("pool_size");
	m.nlanes = r.u32("nlanes");
	m.attr = r.optional_attr("attr");
	m.provider = r.str("provider");
	m.descriptor = r.str("descriptor");
}

void read_pool_response(body_reader &r, pool_response &m, const checker &)
{
	fabric_params &f = m.fabric;
	m.st = static_cast<status>(r.u32("status"));
	m.err = r.u32("err");
	m.pool_size = r.u64("pool_size");
	f.rkey = r.u64("fabric.rkey");
	f.raddr = r.u64("fabric.raddr");
	f.mr_mode = r.u64("fabric.mr_mode");
	f.nlanes = r.u32("fabric.nlanes");
	f.nendpoints = r.u32("fabric.nendpoints");
	f.inline_max = r.u32("fabric.inline_max");
	f.queue_depth = r.u32("fabric.queue_depth");
	f.method = static_cast<persist_method>(r.u32("fabric.method"));
	f.port = r.u16("fabric.port");
	m.is_pmem = r.boolean("is_pmem");
	r.bytes(f.secret, "fabric.secret");
	m.attr = r.attr("attr");
	m.message = r.str("message");
	f.provider = r.str("fabric.provider");
	f.address = r.str("fabric.address");
}

void read_status_response(body_reader &r, status_response &m, const checker &)
{
	m.st = static_cast<status>(r.u32("status"));
	m.err = r.u32("err");
	m.message = r.str("message");
}

void read_checksum_request(body_reader &r, checksum_request &m, const checker &)
{
	m.offset = r.u64("offset");
	m.length = r.u64("length");
	m.block_size = r.u32("block_size");
	m.algorithm = static_cast<checksum_algorithm>(r.u32("algorithm"));
}

void read_checksum_response(body_reader &r, checksum_response &m, const checker &c)
{
	m.st = static_cast<status>(r.u32("status"));
	m.err = r.u32("err");
	m.first_block = r.u64("first_block");
	m.last = r.boolean("last");
	std::uint32_t count = r.u32("count");
	// Checked before allocating: the count must fit the limit and the bytes that follow.
	c.require(count <= max_checksums_per_message, "count",
	          fmt::format("is {}, over the limit of {}", count, max_checksums_per_message));
	m.sums.resize(count);
	for (auto &s : m.sums) {
		s.lo = r.u64("sums");
		s.hi = r.u64("sums");
	}
	m.message = r.str("message");
}

} // namespace

// ---- encode --------------------------------------------------------------------------------

std::vector<std::uint8_t> encode(const hello &m)
{
	checker c(msg_type::hello, false);
	validate(m, c);
	return build_frame(c, [&](wire::writer &w) {
		w.u16(
		    m.major); // major and minor first, in every protocol version (docs/protocol.md)
		w.u16(m.minor);
		w.u32(static_cast<std::uint32_t>(m.st));
		w.u32(m.err);
		w.str(m.daemon_version);
		w.str(m.message);
	});
}

std::vector<std::uint8_t> encode(const pool_request &m, msg_type type)
{
	require_type(type, msg_type::create, msg_type::open, "pool_request");
	checker c(type, false);
	validate(m, c);
	return build_frame(c, [&](wire::writer &w) {
		w.u16(m.major);
		w.u16(m.minor);
		w.u64(m.pool_size);
		w.u32(m.nlanes);
		put_optional_attr(w, m.attr);
		w.str(m.provider);
		w.str(m.descriptor);
	});
}

std::vector<std::uint8_t> encode(const pool_response &m, msg_type type)
{
	require_type(type, msg_type::create_resp, msg_type::open_resp, "pool_response");
	checker c(type, false);
	validate(m, c);
	const fabric_params &f = m.fabric;
	return build_frame(c, [&](wire::writer &w) {
		w.u32(static_cast<std::uint32_t>(m.st));
		w.u32(m.err);
		w.u64(m.pool_size);
		w.u64(f.rkey);
		w.u64(f.raddr);
		w.u64(f.mr_mode);
		w.u32(f.nlanes);
		w.u32(f.nendpoints);
		w.u32(f.inline_max);
		w.u32(f.queue_depth);
		w.u32(static_cast<std::uint32_t>(f.method));
		w.u16(f.port);
		w.u8(m.is_pmem ? 1 : 0);
		w.bytes(f.secret);
		put_attr(w, m.attr);
		w.str(m.message);
		w.str(f.provider);
		w.str(f.address);
	});
}

std::vector<std::uint8_t> encode(const set_attr_request &m)
{
	return build_frame(checker(msg_type::set_attr, false),
	                   [&](wire::writer &w) { put_optional_attr(w, m.attr); });
}

std::vector<std::uint8_t> encode(const close_request &m)
{
	checker c(msg_type::close, false);
	validate(m, c);
	return build_frame(c, [&](wire::writer &w) { w.u32(m.flags); });
}

std::vector<std::uint8_t> encode(const status_response &m, msg_type type)
{
	require_type(type, msg_type::set_attr_resp, msg_type::close_resp, "status_response");
	checker c(type, false);
	validate(m, c);
	return build_frame(c, [&](wire::writer &w) {
		w.u32(static_cast<std::uint32_t>(m.st));
		w.u32(m.err);
		w.str(m.message);
	});
}

std::vector<std::uint8_t> encode(const ping &m)
{
	return build_frame(checker(msg_type::ping, false),
	                   [&](wire::writer &w) { w.u64(m.cookie); });
}

std::vector<std::uint8_t> encode(const pong &m)
{
	return build_frame(checker(msg_type::pong, false),
	                   [&](wire::writer &w) { w.u64(m.cookie); });
}

std::vector<std::uint8_t> encode(const checksum_request &m)
{
	checker c(msg_type::checksum, false);
	validate(m, c);
	return build_frame(c, [&](wire::writer &w) {
		w.u64(m.offset);
		w.u64(m.length);
		w.u32(m.block_size);
		w.u32(static_cast<std::uint32_t>(m.algorithm));
	});
}

std::vector<std::uint8_t> encode(const checksum_response &m)
{
	checker c(msg_type::checksum_resp, false);
	validate(m, c);
	return build_frame(c, [&](wire::writer &w) {
		w.u32(static_cast<std::uint32_t>(m.st));
		w.u32(m.err);
		w.u64(m.first_block);
		w.u8(m.last ? 1 : 0);
		w.u32(static_cast<std::uint32_t>(m.sums.size()));
		for (const auto &s : m.sums) {
			w.u64(s.lo);
			w.u64(s.hi);
		}
		w.str(m.message);
	});
}

std::vector<std::uint8_t> encode(const create_done &)
{
	return build_frame(checker(msg_type::create_done, false), [](wire::writer &) {});
}

// ---- decode --------------------------------------------------------------------------------

hello decode_hello(std::span<const std::uint8_t> body)
{
	checker c(msg_type::hello, true);
	body_reader r(body, c);
	hello m;
	m.major = r.u16("major");
	m.minor = r.u16("minor");
	if (m.major != proto_major) {
		// Only major and minor are frozen across versions; the rest may differ.
		m.st = status::badproto;
		m.err = EPROTONOSUPPORT;
		m.message = fmt::format("rpmemd speaks control protocol {}.{}, this client {}.{}: "
		                        "install the same rpmem release on client and server",
		                        m.major, m.minor, proto_major, proto_minor);
		return m;
	}
	m.st = static_cast<status>(r.u32("status"));
	m.err = r.u32("err");
	m.daemon_version = r.str("daemon_version");
	m.message = r.str("message");
	r.finish();
	validate(m, c);
	return m;
}

pool_request decode_pool_request(std::span<const std::uint8_t> body, msg_type type)
{
	require_type(type, msg_type::create, msg_type::open, "pool_request");
	return decode_with<pool_request>(type, body, read_pool_request);
}

pool_response decode_pool_response(std::span<const std::uint8_t> body, msg_type type)
{
	require_type(type, msg_type::create_resp, msg_type::open_resp, "pool_response");
	return decode_with<pool_response>(type, body, read_pool_response);
}

set_attr_request decode_set_attr_request(std::span<const std::uint8_t> body)
{
	return decode_with<set_attr_request>(
	    msg_type::set_attr, body, [](body_reader &r, set_attr_request &m, const checker &) {
		    m.attr = r.optional_attr("attr");
	    });
}

close_request decode_close_request(std::span<const std::uint8_t> body)
{
	return decode_with<close_request>(
	    msg_type::close, body,
	    [](body_reader &r, close_request &m, const checker &) { m.flags = r.u32("flags"); });
}

status_response decode_status_response(std::span<const std::uint8_t> body, msg_type type)
{
	require_type(type, msg_type::set_attr_resp, msg_type::close_resp, "status_response");
	return decode_with<status_response>(type, body, read_status_response);
}

ping decode_ping(std::span<const std::uint8_t> body)
{
	return decode_with<ping>(
	    msg_type::ping, body,
	    [](body_reader &r, ping &m, const checker &) { m.cookie = r.u64("cookie"); });
}

pong decode_pong(std::span<const std::uint8_t> body)
{
	return decode_with<pong>(
	    msg_type::pong, body,
	    [](body_reader &r, pong &m, const checker &) { m.cookie = r.u64("cookie"); });
}

checksum_request decode_checksum_request(std::span<const std::uint8_t> body)
{
	return decode_with<checksum_request>(msg_type::checksum, body, read_checksum_request);
}

checksum_response decode_checksum_response(std::span<const std::uint8_t> body)
{
	return decode_with<checksum_response>(msg_type::checksum_resp, body,
	                                      read_checksum_response);
}

create_done decode_create_done(std::span<const std::uint8_t> body)
{
	return decode_with<create_done>(msg_type::create_done, body,
	                                [](body_reader &, create_done &, const checker &) {});
}

} // namespace rpmem::control
