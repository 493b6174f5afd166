// SPDX-License-Identifier: BSD-3-Clause
// Control-protocol messages with every field set to a distinct, non-default value, shared by the
// codec and stream tests.
#pragma once

#include "control/codec.hpp"

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace rpmem::control::test
{

inline pool_attr sample_attr()
{
	pool_attr a;
	std::memcpy(a.signature.data(), "PMEMOBJ", 7);
	a.major = 6;
	a.compat_features = 0x11223344;
	a.incompat_features = 0x55;
	a.ro_compat_features = 0x66;
	for (std::uint8_t i = 0; i < 16; ++i) {
		a.poolset_uuid[i] = static_cast<std::uint8_t>(0x01 + i);
		a.uuid[i] = static_cast<std::uint8_t>(0x21 + i);
		a.next_uuid[i] = static_cast<std::uint8_t>(0x41 + i);
		a.prev_uuid[i] = static_cast<std::uint8_t>(0x61 + i);
		a.user_flags[i] = static_cast<std::uint8_t>(0x81 + i);
	}
	return a;
}

inline hello sample_hello()
{
	hello m;
	m.st = status::noaccess;
	m.err = EACCES;
	m.minor = proto_minor + 3; // a newer minor is compatible
	m.daemon_version = "0.1.0";
	m.message = "cannot open /var/log/rpmemd.log: Permission denied";
	return m;
}

inline pool_request sample_create()
{
	pool_request m;
	m.pool_size = 0x100002000;
	m.nlanes = 1024;
	m.provider = "verbs";
	m.descriptor = "dir/pool.set";
	m.attr = sample_attr();
	return m;
}

inline pool_request sample_open()
{
	pool_request m;
	m.pool_size = 8 << 20;
	m.nlanes = 3;
	m.provider = "tcp";
	m.descriptor = "pool.set";
	return m;
}

inline pool_response sample_open_resp()
{
	pool_response m;
	m.pool_size = 1 << 30;
	m.is_pmem = true;
	m.attr = sample_attr();
	fabric_params &f = m.fabric;
	f.provider = "tcp";
	f.address = "192.168.1.10";
	f.port = 0xbeef;
	f.rkey = 0x0102030405060708;
	f.raddr = 0x7f0012345000;
	f.mr_mode = 0x3c;
	f.nlanes = 64;
	f.nendpoints = 2;
	f.inline_max = 4096;
	f.queue_depth = 32;
	f.method = persist_method::apm;
	for (std::uint8_t i = 0; i < secret_size; ++i)
		f.secret[i] = static_cast<std::uint8_t>(0xa0 + i);
	return m;
}

inline pool_response sample_failed_create_resp()
{
	pool_response m;
	m.st = status::exists;
	m.err = EEXIST;
	m.message = "pool set dir/pool.set already exists: remove it with rpmemd --remove";
	return m;
}

inline status_response sample_status_response()
{
	return status_response{status::fatal, EIO, "writing the pool header failed: I/O error"};
}

inline checksum_request sample_checksum_request()
{
	return checksum_request{4096, 1u << 30, 1u << 16, checksum_algorithm::xxh3_128};
}

inline checksum_response sample_checksum_response()
{
	checksum_response m;
	m.first_block = 2048;
	m.last = true;
	m.sums = {{0x0123456789abcdef, 0xfedcba9876543210}, {1, 2}, {0, 0}};
	return m;
}

/** A sample frame and a function that decodes a message of its type (result dropped). */
struct sample {
	std::string name;
	std::vector<std::uint8_t> frame;
	std::function<void(const message &)> decode;
};

template <class T> std::function<void(const message &)> decoder()
{
	return [](const message &m) { (void)control::decode<T>(m); };
}

inline std::vector<sample> all_samples()
{
	return {
	    {"hello", encode(sample_hello()), decoder<hello>()},
	    {"create", encode(sample_create(), msg_type::create), decoder<pool_request>()},
	    {"open", encode(sample_open(), msg_type::open), decoder<pool_request>()},
	    {"open_resp", encode(sample_open_resp(), msg_type::open_resp),
	     decoder<pool_response>()},
	    {"create_resp", encode(sample_failed_create_resp(), msg_type::create_resp),
	     decoder<pool_response>()},
	    {"set_attr", encode(set_attr_request{sample_attr()}), decoder<set_attr_request>()},
	    {"set_attr_resp", encode(sample_status_response(), msg_type::set_attr_resp),
	     decoder<status_response>()},
	    {"close", encode(close_request{close_flag_remove}), decoder<close_request>()},
	    {"close_resp", encode(status_response{}, msg_type::close_resp),
	     decoder<status_response>()},
	    {"ping", encode(ping{0x0123456789abcdef}), decoder<ping>()},
	    {"pong", encode(pong{0xfedcba9876543210}), decoder<pong>()},
	    {"checksum", encode(sample_checksum_request()), decoder<checksum_request>()},
	    {"checksum_resp", encode(sample_checksum_response()), decoder<checksum_response>()},
	};
}

inline frame_header header_of(const std::vector<std::uint8_t> &frame)
{
	REQUIRE(frame.size() >= header_size);
	return decode_header(std::span<const std::uint8_t, header_size>(frame.data(), header_size));
}

/** Splits a frame as receive() would. */
inline message message_of(const std::vector<std::uint8_t> &frame)
{
	frame_header h = header_of(frame);
	REQUIRE(h.length == frame.size());
	return message{h.type, {frame.begin() + header_size, frame.end()}};
}

} // namespace rpmem::control::test
