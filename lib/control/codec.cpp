// SPDX-License-Identifier: BSD-3-Clause
// Control-protocol codec, one section per message: the types it is sent as, its rules (checked
// when encoding and when decoding), and its body written and read in one field order. Field
// order and sizes are documented in docs/protocol.md; a change here without a change there (and
// a proto_major bump) breaks the golden-bytes unit test on purpose. The machinery every message
// shares (checker, body_reader, the one encode and decode path) is in layout.hpp.
#include "control/codec.hpp"

#include "control/layout.hpp"

namespace rpmem::control
{

// ---- hello (rpmemd -> client, first) -------------------------------------------------------

template <> struct layout<hello> {
	static constexpr std::array sent_as{msg_type::hello};

	static void check(const hello &m, const checker &c)
	{
		check_major(m.major, m.minor, c);
		c.known("status", m.st);
		c.text("daemon_version", m.daemon_version, max_string, false);
		c.text("message", m.message, max_string, false);
	}

	static void write(wire::writer &w, const hello &m)
	{
		w.u16(
		    m.major); // major and minor first, in every protocol version (docs/protocol.md)
		w.u16(m.minor);
		w.u32(static_cast<std::uint32_t>(m.st));
		w.u32(m.err);
		w.str(m.daemon_version);
		w.str(m.message);
	}

	static void read(body_reader &r, hello &m, const checker &)
	{
		m.major = r.u16("major");
		m.minor = r.u16("minor");
		m.st = static_cast<status>(r.u32("status"));
		m.err = r.u32("err");
		m.daemon_version = r.str("daemon_version");
		m.message = r.str("message");
	}

	/** Only major and minor are frozen across versions; the rest may differ. */
	static std::optional<hello> foreign(std::span<const std::uint8_t> body)
	{
		checker c(msg_type::hello, true);
		body_reader r(body, c);
		hello m;
		m.major = r.u16("major");
		m.minor = r.u16("minor");
		if (m.major == proto_major)
			return std::nullopt;
		m.st = status::badproto;
		m.err = EPROTONOSUPPORT;
		m.message = fmt::format("rpmemd speaks control protocol {}.{}, this client {}.{}: "
		                        "install the same rpmem release on client and server",
		                        m.major, m.minor, proto_major, proto_minor);
		return m;
	}
};

std::vector<std::uint8_t> encode(const hello &m)
{
	return encode_as(m);
}

hello decode_hello(std::span<const std::uint8_t> body)
{
	return decode_body<hello>(body);
}

template hello decode<hello>(const message &m);

// ---- create, open (client -> rpmemd) -------------------------------------------------------

template <> struct layout<pool_request> {
	static constexpr std::array sent_as{msg_type::create, msg_type::open};
	static constexpr const char *name = "pool_request";

	static void check(const pool_request &m, const checker &c)
	{
		check_major(m.major, m.minor, c);
		c.require(m.pool_size > 0, "pool_size", "is 0");
		c.require(m.nlanes >= 1, "nlanes", "is 0 (at least one lane is needed)");
		c.text("provider", m.provider, max_provider, true);
		c.text("descriptor", m.descriptor, max_string, true);
		if (c.type() == msg_type::open)
			c.require(!m.attr, "attr",
			          "is present (only create carries pool attributes)");
	}

	static void write(wire::writer &w, const pool_request &m)
	{
		w.u16(m.major);
		w.u16(m.minor);
		w.u64(m.pool_size);
		w.u32(m.nlanes);
		put_optional_attr(w, m.attr);
		w.str(m.provider);
		w.str(m.descriptor);
	}

	static void read(body_reader &r, pool_request &m, const checker &c)
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
};

std::vector<std::uint8_t> encode(const pool_request &m, msg_type type)
{
	return encode_as(m, type);
}

pool_request decode_pool_request(std::span<const std::uint8_t> body, msg_type type)
{
	return decode_body<pool_request>(body, type);
}

template pool_request decode<pool_request>(const message &m);

// ---- create_resp, open_resp (rpmemd -> client) ---------------------------------------------

template <> struct layout<pool_response> {
	static constexpr std::array sent_as{msg_type::create_resp, msg_type::open_resp};
	static constexpr const char *name = "pool_response";

	static void check(const pool_response &m, const checker &c)
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

	static void write(wire::writer &w, const pool_response &m)
	{
		const fabric_params &f = m.fabric;
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
	}

	static void read(body_reader &r, pool_response &m, const checker &)
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
};

std::vector<std::uint8_t> encode(const pool_response &m, msg_type type)
{
	return encode_as(m, type);
}

pool_response decode_pool_response(std::span<const std::uint8_t> body, msg_type type)
{
	return decode_body<pool_response>(body, type);
}

template pool_response decode<pool_response>(const message &m);

// ---- set_attr (client -> rpmemd) -----------------------------------------------------------

template <> struct layout<set_attr_request> {
	static constexpr std::array sent_as{msg_type::set_attr};

	static void check(const set_attr_request &, const checker &) {} // any value is valid
	static void write(wire::writer &w, const set_attr_request &m)
	{
		put_optional_attr(w, m.attr);
	}
	static void read(body_reader &r, set_attr_request &m, const checker &)
	{
		m.attr = r.optional_attr("attr");
	}
};

std::vector<std::uint8_t> encode(const set_attr_request &m)
{
	return encode_as(m);
}

set_attr_request decode_set_attr_request(std::span<const std::uint8_t> body)
{
	return decode_body<set_attr_request>(body);
}

template set_attr_request decode<set_attr_request>(const message &m);

// ---- close (client -> rpmemd) --------------------------------------------------------------

template <> struct layout<close_request> {
	static constexpr std::array sent_as{msg_type::close};

	static void check(const close_request &m, const checker &c)
	{
		std::uint32_t unknown = m.flags & ~close_flag_remove;
		if (unknown != 0)
			c.fail("flags", fmt::format("has unknown bits 0x{:x}", unknown));
	}
	static void write(wire::writer &w, const close_request &m) { w.u32(m.flags); }
	static void read(body_reader &r, close_request &m, const checker &)
	{
		m.flags = r.u32("flags");
	}
};

std::vector<std::uint8_t> encode(const close_request &m)
{
	return encode_as(m);
}

close_request decode_close_request(std::span<const std::uint8_t> body)
{
	return decode_body<close_request>(body);
}

template close_request decode<close_request>(const message &m);

// ---- set_attr_resp, close_resp (rpmemd -> client) ------------------------------------------

template <> struct layout<status_response> {
	static constexpr std::array sent_as{msg_type::set_attr_resp, msg_type::close_resp};
	static constexpr const char *name = "status_response";

	static void check(const status_response &m, const checker &c)
	{
		c.known("status", m.st);
		c.text("message", m.message, max_string, false);
	}
	static void write(wire::writer &w, const status_response &m)
	{
		w.u32(static_cast<std::uint32_t>(m.st));
		w.u32(m.err);
		w.str(m.message);
	}
	static void read(body_reader &r, status_response &m, const checker &)
	{
		m.st = static_cast<status>(r.u32("status"));
		m.err = r.u32("err");
		m.message = r.str("message");
	}
};

std::vector<std::uint8_t> encode(const status_response &m, msg_type type)
{
	return encode_as(m, type);
}

status_response decode_status_response(std::span<const std::uint8_t> body, msg_type type)
{
	return decode_body<status_response>(body, type);
}

template status_response decode<status_response>(const message &m);

// ---- ping (client -> rpmemd), pong (rpmemd -> client) --------------------------------------

/** ping and pong: a cookie, echoed; any value is valid. */
template <class T, msg_type Type> struct cookie_layout {
	static constexpr std::array sent_as{Type};

	static void check(const T &, const checker &) {}
	static void write(wire::writer &w, const T &m) { w.u64(m.cookie); }
	static void read(body_reader &r, T &m, const checker &) { m.cookie = r.u64("cookie"); }
};
template <> struct layout<ping> : cookie_layout<ping, msg_type::ping> {
};
template <> struct layout<pong> : cookie_layout<pong, msg_type::pong> {
};

std::vector<std::uint8_t> encode(const ping &m)
{
	return encode_as(m);
}

ping decode_ping(std::span<const std::uint8_t> body)
{
	return decode_body<ping>(body);
}

template ping decode<ping>(const message &m);

std::vector<std::uint8_t> encode(const pong &m)
{
	return encode_as(m);
}

pong decode_pong(std::span<const std::uint8_t> body)
{
	return decode_body<pong>(body);
}

template pong decode<pong>(const message &m);

// ---- checksum (client -> rpmemd, since 1.2) ------------------------------------------------

template <> struct layout<checksum_request> {
	static constexpr std::array sent_as{msg_type::checksum};

	static void check(const checksum_request &m, const checker &c)
	{
		c.require(m.algorithm == checksum_algorithm::xxh3_128, "algorithm",
		          fmt::format("is {} (known: 1 xxh3_128)",
		                      static_cast<std::uint32_t>(m.algorithm)));
		c.require(m.block_size >= min_checksum_block &&
		              m.block_size <= max_checksum_block &&
		              (m.block_size & (m.block_size - 1)) == 0,
		          "block_size",
		          fmt::format("is {}, not a power of two from {} to {}", m.block_size,
		                      min_checksum_block, max_checksum_block));
		c.require(m.length > 0, "length", "is 0");
		c.require(m.offset + m.length > m.offset, "offset + length",
		          fmt::format("wraps around (offset {}, length {})", m.offset, m.length));
	}

	static void write(wire::writer &w, const checksum_request &m)
	{
		w.u64(m.offset);
		w.u64(m.length);
		w.u32(m.block_size);
		w.u32(static_cast<std::uint32_t>(m.algorithm));
	}

	static void read(body_reader &r, checksum_request &m, const checker &)
	{
		m.offset = r.u64("offset");
		m.length = r.u64("length");
		m.block_size = r.u32("block_size");
		m.algorithm = static_cast<checksum_algorithm>(r.u32("algorithm"));
	}
};

std::vector<std::uint8_t> encode(const checksum_request &m)
{
	return encode_as(m);
}

checksum_request decode_checksum_request(std::span<const std::uint8_t> body)
{
	return decode_body<checksum_request>(body);
}

template checksum_request decode<checksum_request>(const message &m);

// ---- checksum_resp (rpmemd -> client, since 1.2) -------------------------------------------

template <> struct layout<checksum_response> {
	static constexpr std::array sent_as{msg_type::checksum_resp};

	static void check(const checksum_response &m, const checker &c)
	{
		c.known("status", m.st);
		c.text("message", m.message, max_string, false);
		c.require(m.sums.size() <= max_checksums_per_message, "count",
		          fmt::format("is {}, over the limit of {}", m.sums.size(),
		                      max_checksums_per_message));
		if (m.st != status::success) {
			c.require(m.sums.empty(), "count", "is not 0 in a failure response");
			c.require(m.last, "last",
			          "is 0 in a failure response (a failure ends the answer)");
		}
	}

	static void write(wire::writer &w, const checksum_response &m)
	{
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
	}

	static void read(body_reader &r, checksum_response &m, const checker &c)
	{
		m.st = static_cast<status>(r.u32("status"));
		m.err = r.u32("err");
		m.first_block = r.u64("first_block");
		m.last = r.boolean("last");
		std::uint32_t count = r.u32("count");
		// Checked before allocating: the count must fit the limit and the bytes that
		// follow.
		c.require(
		    count <= max_checksums_per_message, "count",
		    fmt::format("is {}, over the limit of {}", count, max_checksums_per_message));
		m.sums.resize(count);
		for (auto &s : m.sums) {
			s.lo = r.u64("sums");
			s.hi = r.u64("sums");
		}
		m.message = r.str("message");
	}
};

std::vector<std::uint8_t> encode(const checksum_response &m)
{
	return encode_as(m);
}

checksum_response decode_checksum_response(std::span<const std::uint8_t> body)
{
	return decode_body<checksum_response>(body);
}

template checksum_response decode<checksum_response>(const message &m);

// ---- create_done (client -> rpmemd, since 1.3) ---------------------------------------------

template <> struct layout<create_done> {
	static constexpr std::array sent_as{msg_type::create_done};

	static void check(const create_done &, const checker &) {} // an empty body
	static void write(wire::writer &, const create_done &) {}
	static void read(body_reader &, create_done &, const checker &) {}
};

std::vector<std::uint8_t> encode(const create_done &m)
{
	return encode_as(m);
}

create_done decode_create_done(std::span<const std::uint8_t> body)
{
	return decode_body<create_done>(body);
}

template create_done decode<create_done>(const message &m);

} // namespace rpmem::control
