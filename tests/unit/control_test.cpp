// SPDX-License-Identifier: BSD-3-Clause
// Control-protocol codec: round trips, golden bytes, and rejection of every malformed input the
// decoders must refuse (docs/protocol.md lists the rules tested here).
#include "control_samples.hpp"
#include "wire/wire.hpp"

#include <catch2/catch.hpp>

#include <cerrno>
#include <string>
#include <string_view>

using namespace rpmem::control;
using namespace rpmem::control::test;
using Catch::Matchers::Contains;

namespace
{

using bytes = std::vector<std::uint8_t>;

/** Runs f, which must throw protocol_error (EPROTO) whose message contains every needle. */
template <class F> void require_proto_error(F &&f, std::initializer_list<std::string_view> needles)
{
	try {
		f();
		FAIL("no protocol_error thrown");
	} catch (const protocol_error &e) {
		CHECK(e.errnum() == EPROTO);
		for (auto n : needles)
			CHECK_THAT(e.message(), Contains(std::string(n)));
	}
}

/** Runs f, which must throw rpmem::error with EINVAL naming field (encoder refusals). */
template <class F> void require_einval(F &&f, std::string_view field)
{
	try {
		f();
		FAIL("no rpmem::error thrown");
	} catch (const rpmem::error &e) {
		CHECK(e.errnum() == EINVAL);
		CHECK_THAT(e.message(), Contains(std::string(field)));
	}
}

bytes body_of(const bytes &frame)
{
	return message_of(frame).body;
}

void patch(bytes &b, std::size_t off, std::uint64_t v, int n)
{
	REQUIRE(off + static_cast<std::size_t>(n) <= b.size());
	for (int i = 0; i < n; ++i)
		b[off + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * i));
}

/** A create/open body written field by field, so tests can break any one of them. */
struct raw_request {
	std::uint16_t major = proto_major;
	std::uint16_t minor = proto_minor;
	std::uint64_t pool_size = 4096;
	std::uint32_t nlanes = 1;
	std::uint8_t present = 0;
	std::string provider = "tcp";
	std::string descriptor = "pool.set";

	bytes body() const
	{
		bytes out;
		rpmem::wire::writer w(out);
		w.u16(major);
		w.u16(minor);
		w.u64(pool_size);
		w.u32(nlanes);
		w.u8(present);
		out.resize(out.size() + pool_attr_size);
		w.str(provider);
		w.str(descriptor);
		return out;
	}
};

/** Patches one field of a valid frame's body; decoding it as T must fail naming the field. */
template <class T>
void require_bad_field(const bytes &frame, std::size_t off, std::uint64_t v, int n,
                       std::string_view field)
{
	message m = message_of(frame);
	patch(m.body, off, v, n);
	INFO(msg_type_name(m.type) << " field " << field << " = " << v);
	require_proto_error([&] { (void)decode<T>(m); }, {msg_type_name(m.type), field});
}

template <class T> void check_round_trip(const T &m, const bytes &frame, msg_type type)
{
	message got = message_of(frame);
	CHECK(got.type == type);
	T back = decode<T>(got);
	CHECK(back == m);
}

} // namespace

TEST_CASE("every message survives a round trip with every field set", "[control][codec]")
{
	check_round_trip(sample_hello(), encode(sample_hello()), msg_type::hello);
	check_round_trip(sample_create(), encode(sample_create(), msg_type::create),
	                 msg_type::create);
	check_round_trip(sample_open(), encode(sample_open(), msg_type::open), msg_type::open);
	check_round_trip(sample_open_resp(), encode(sample_open_resp(), msg_type::open_resp),
	                 msg_type::open_resp);
	check_round_trip(sample_open_resp(), encode(sample_open_resp(), msg_type::create_resp),
	                 msg_type::create_resp);
	for (auto method : {persist_method::gpspm, persist_method::commit}) {
		auto resp = sample_open_resp(); // APM
		resp.fabric.method = method;
		check_round_trip(resp, encode(resp, msg_type::open_resp), msg_type::open_resp);
	}
	check_round_trip(sample_failed_create_resp(),
	                 encode(sample_failed_create_resp(), msg_type::create_resp),
	                 msg_type::create_resp);
	check_round_trip(set_attr_request{sample_attr()}, encode(set_attr_request{sample_attr()}),
	                 msg_type::set_attr);
	check_round_trip(set_attr_request{}, encode(set_attr_request{}), msg_type::set_attr);
	check_round_trip(close_request{close_flag_remove}, encode(close_request{close_flag_remove}),
	                 msg_type::close);
	check_round_trip(sample_status_response(),
	                 encode(sample_status_response(), msg_type::set_attr_resp),
	                 msg_type::set_attr_resp);
	check_round_trip(sample_status_response(),
	                 encode(sample_status_response(), msg_type::close_resp),
	                 msg_type::close_resp);
	check_round_trip(ping{0x0123456789abcdef}, encode(ping{0x0123456789abcdef}),
	                 msg_type::ping);
	check_round_trip(pong{~0ull}, encode(pong{~0ull}), msg_type::pong);
	check_round_trip(sample_checksum_request(), encode(sample_checksum_request()),
	                 msg_type::checksum);
	check_round_trip(sample_checksum_response(), encode(sample_checksum_response()),
	                 msg_type::checksum_resp);
	checksum_response full;
	full.sums.resize(max_checksums_per_message, block_sum{~0ull, 7});
	check_round_trip(full, encode(full), msg_type::checksum_resp);
	checksum_response failed{status::unsupported, ENOTSUP, "checksums are off", 0, true, {}};
	check_round_trip(failed, encode(failed), msg_type::checksum_resp);
	check_round_trip(create_done{}, encode(create_done{}), msg_type::create_done);
}

TEST_CASE("create_done is a bare header, and a body is refused", "[control][codec]")
{
	const bytes frame = encode(create_done{});
	REQUIRE(frame.size() == header_size);
	CHECK(header_of(frame) == frame_header{msg_type::create_done, header_size});
	CHECK(decode<create_done>(message_of(frame)) == create_done{});
	require_proto_error([] { decode_create_done(bytes{0x00}); }, {"create_done"});
}

TEST_CASE("golden bytes: checksum request and response", "[control][codec]")
{
	const bytes req = {
	    0x52, 0x50, 0x50, 0x4d, 0x0c, 0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00, // header
	    0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                         // offset 4096
	    0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00,                         // length 1 GiB
	    0x00, 0x00, 0x01, 0x00, // block_size 64 KiB
	    0x01, 0x00, 0x00, 0x00, // algorithm xxh3_128
	};
	CHECK(encode(sample_checksum_request()) == req);
	checksum_response m;
	m.first_block = 3;
	m.sums = {{0x1122334455667788, 0x99}};
	const bytes resp = {
	    0x52, 0x50, 0x50, 0x4d, 0x0d, 0x00, 0x00, 0x00, 0x33, 0x00, 0x00, 0x00, // header
	    0x00, 0x00, 0x00, 0x00,                         // status success
	    0x00, 0x00, 0x00, 0x00,                         // err
	    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // first_block
	    0x00,                                           // last
	    0x01, 0x00, 0x00, 0x00,                         // count
	    0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // sums[0].lo
	    0x99, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // sums[0].hi
	    0x00, 0x00,                                     // message ""
	};
	CHECK(encode(m) == resp);
}

TEST_CASE("checksum requests and responses are validated", "[control][codec]")
{
	const bytes req = body_of(encode(sample_checksum_request()));
	auto bad_req = [&](std::size_t off, std::uint64_t v, int n,
	                   std::initializer_list<std::string_view> words) {
		bytes b = req;
		patch(b, off, v, n);
		require_proto_error([&] { decode_checksum_request(b); }, words);
	};
	bad_req(8, 0, 8, {"checksum", "length", "is 0"});
	bad_req(0, ~0ull, 8, {"offset + length", "wraps around"});
	bad_req(16, 4095, 4, {"block_size", "is 4095"});
	bad_req(16, 3u << 16, 4, {"block_size", "not a power of two"});
	bad_req(16, 128u << 20, 4, {"block_size", "is 134217728"});
	bad_req(20, 2, 4, {"algorithm", "is 2"});
	bytes ok = req;
	patch(ok, 16, min_checksum_block, 4);
	CHECK(decode_checksum_request(ok).block_size == min_checksum_block);
	patch(ok, 16, max_checksum_block, 4);
	CHECK(decode_checksum_request(ok).block_size == max_checksum_block);

	// count over the limit: refused before anything is allocated for it.
	bytes resp = body_of(encode(sample_checksum_response()));
	patch(resp, 17, max_checksums_per_message + 1, 4);
	require_proto_error([&] { decode_checksum_response(resp); },
	                    {"checksum_resp", "count", "2049", "over the limit"});
	patch(resp, 17, 0xffffffff, 4);
	require_proto_error([&] { decode_checksum_response(resp); }, {"count", "over the limit"});
	// count larger than what follows: cut short.
	resp = body_of(encode(sample_checksum_response()));
	patch(resp, 17, 4, 4);
	require_proto_error([&] { decode_checksum_response(resp); }, {"cut short"});
	// A failure carries no sums and ends the answer.
	checksum_response failed{status::fatal, EIO, "read error", 0, true, {}};
	bytes f = body_of(encode(failed));
	patch(f, 16, 0, 1);
	require_proto_error([&] { decode_checksum_response(f); }, {"last", "failure response"});
	failed.sums.push_back({});
	REQUIRE_THROWS_AS(encode(failed), rpmem::error);
	bytes bad_last = body_of(encode(sample_checksum_response()));
	patch(bad_last, 16, 2, 1);
	require_proto_error([&] { decode_checksum_response(bad_last); }, {"last", "bool"});
}

TEST_CASE("golden bytes: frame header and ping", "[control][codec]")
{
	const bytes expected = {
	    0x52, 0x50, 0x50, 0x4d,                         // magic "RPPM"
	    0x0a, 0x00,                                     // type ping
	    0x00, 0x00,                                     // flags
	    0x14, 0x00, 0x00, 0x00,                         // length 20
	    0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // cookie
	};
	CHECK(encode(ping{0x1122334455667788}) == expected);
	CHECK(header_of(expected) == frame_header{msg_type::ping, 20});
}

TEST_CASE("golden bytes: hello", "[control][codec]")
{
	hello m;
	m.st = status::fatal;
	m.err = 0x0d;
	m.daemon_version = "0.1.0";
	m.message = "x";
	const bytes expected = {
	    0x52, 0x50, 0x50, 0x4d, 0x01, 0x00, 0x00, 0x00, 0x22, 0x00, 0x00, 0x00, // header
	    0x01, 0x00, 0x04, 0x00,                  // major 1, minor 4
	    0x06, 0x00, 0x00, 0x00,                  // status fatal
	    0x0d, 0x00, 0x00, 0x00,                  // err
	    0x05, 0x00, '0',  '.',  '1',  '.',  '0', // daemon_version
	    0x01, 0x00, 'x',                         // message
	};
	CHECK(encode(m) == expected);
}

TEST_CASE("every truncation of every message is rejected", "[control][codec]")
{
	for (const sample &s : all_samples()) {
		message full = message_of(s.frame);
		for (std::size_t len = 0; len < full.body.size(); ++len) {
			INFO(s.name << " body cut to " << len << " of " << full.body.size());
			message cut{full.type, bytes(full.body.begin(), full.body.begin() + len)};
			require_proto_error([&] { s.decode(cut); }, {s.name, "cut short"});
		}
	}
}

TEST_CASE("trailing bytes after a body are rejected", "[control][codec]")
{
	for (const sample &s : all_samples()) {
		INFO(s.name);
		message m = message_of(s.frame);
		m.body.push_back(0);
		require_proto_error([&] { s.decode(m); }, {s.name, "1 unexpected trailing bytes"});
	}
}

TEST_CASE("frame headers are validated", "[control][codec]")
{
	bytes good = encode(ping{1});
	auto decode_patched = [&](std::size_t off, std::uint64_t v, int n) {
		bytes b = good;
		patch(b, off, v, n);
		return header_of(b);
	};
	require_proto_error([&] { decode_patched(0, 0x4d505053, 4); }, {"magic", "0x4d505053"});
	require_proto_error([&] { decode_patched(4, 0, 2); }, {"unknown message type 0"});
	require_proto_error([&] { decode_patched(4, 15, 2); }, {"unknown message type 15"});
	require_proto_error([&] { decode_patched(4, 0xffff, 2); }, {"unknown message type 65535"});
	require_proto_error([&] { decode_patched(6, 0x8000, 2); }, {"flags", "0x8000"});
	require_proto_error([&] { decode_patched(8, header_size - 1, 4); }, {"length 11"});
	require_proto_error([&] { decode_patched(8, max_message_size + 1, 4); }, {"length 65537"});
	require_proto_error([&] { decode_patched(8, 0xffffffff, 4); }, {"length 4294967295"});
	CHECK(decode_patched(8, header_size, 4).body_size() == 0);
	CHECK(decode_patched(8, max_message_size, 4).body_size() == max_message_size - header_size);
}

TEST_CASE("unknown enum values and bad bools are rejected", "[control][codec]")
{
	const bytes resp = encode(sample_open_resp(), msg_type::open_resp);
	const bytes set_attr = encode(set_attr_request{sample_attr()});

	require_bad_field<hello>(encode(sample_hello()), 4, status_count, 4, "status");
	require_bad_field<pool_response>(resp, 0, status_count, 4, "status");
	require_bad_field<status_response>(encode(sample_status_response(), msg_type::close_resp),
	                                   0, 0xffffffff, 4, "status");
	require_bad_field<pool_response>(resp, 56, 0, 4, "fabric.method");
	require_bad_field<pool_response>(resp, 56, 4, 4, "fabric.method");
	require_bad_field<pool_response>(resp, 62, 2, 1, "is_pmem");
	require_bad_field<pool_request>(encode(sample_create(), msg_type::create), 16, 2, 1,
	                                "attr");
	require_bad_field<set_attr_request>(set_attr, 0, 0xff, 1, "attr");
	// Marked absent while the attribute bytes are not zero: two encodings of one message.
	require_bad_field<set_attr_request>(set_attr, 0, 0, 1, "attr");
	require_bad_field<close_request>(encode(close_request{}), 0, 0x2, 4, "flags");
}

TEST_CASE("strings are bounded, NUL-free and non-empty where required", "[control][codec]")
{
	auto decode_req = [](const raw_request &r, msg_type t = msg_type::create) {
		return decode_pool_request(r.body(), t);
	};
	CHECK(decode_req(raw_request{}).descriptor == "pool.set");

	raw_request r;
	r.provider = std::string(max_provider + 1, 'p');
	require_proto_error([&] { decode_req(r); }, {"create", "provider", "33 bytes"});
	r.provider = std::string(max_provider, 'p');
	CHECK(decode_req(r).provider.size() == max_provider);
	r = raw_request{};
	r.provider = "";
	require_proto_error([&] { decode_req(r); }, {"provider", "empty"});
	r = raw_request{};
	r.descriptor = std::string(max_string + 1, 'd');
	require_proto_error([&] { decode_req(r); }, {"descriptor", "4097 bytes"});
	r.descriptor = std::string("pool\0set", 8);
	require_proto_error([&] { decode_req(r); }, {"descriptor", "NUL byte at offset 4"});
	r.descriptor = "";
	require_proto_error([&] { decode_req(r, msg_type::open); },
	                    {"open", "descriptor", "empty"});

	status_response st;
	st.message = std::string(max_string, 'm');
	bytes body = body_of(encode(st, msg_type::close_resp));
	body.push_back('m');
	patch(body, 8, max_string + 1, 2);
	require_proto_error([&] { decode_status_response(body, msg_type::close_resp); },
	                    {"close_resp", "message", "4097 bytes"});
}

TEST_CASE("semantic ranges of requests and responses", "[control][codec]")
{
	raw_request r;
	r.pool_size = 0;
	require_proto_error([&] { decode_pool_request(r.body()); }, {"pool_size", "is 0"});
	r = raw_request{};
	r.nlanes = 0;
	require_proto_error([&] { decode_pool_request(r.body()); }, {"nlanes", "is 0"});

	bytes create_body = body_of(encode(sample_create(), msg_type::create));
	require_proto_error([&] { decode_pool_request(create_body, msg_type::open); },
	                    {"open", "attr", "present"});

	// encode() refuses these values, so patch a valid body.
	bytes resp = body_of(encode(sample_open_resp(), msg_type::open_resp));
	auto check_resp = [&](std::size_t off, int n, std::string_view field) {
		bytes b = resp;
		patch(b, off, 0, n);
		require_proto_error([&] { decode_pool_response(b, msg_type::open_resp); },
		                    {"open_resp", field, "is 0 in a success response"});
	};
	check_resp(60, 2, "fabric.port");
	check_resp(40, 4, "fabric.nlanes");
	check_resp(44, 4, "fabric.nendpoints");
	check_resp(52, 4, "fabric.queue_depth");
	check_resp(8, 8, "pool_size");

	// A failure response needs none of that: its fabric parameters are all defaults.
	CHECK(decode_pool_response(
	          body_of(encode(sample_failed_create_resp(), msg_type::create_resp)))
	          .st == status::exists);
}

TEST_CASE("protocol versions", "[control][codec]")
{
	SECTION("a newer minor is accepted")
	{
		raw_request r;
		r.minor = proto_minor + 7;
		CHECK(decode_pool_request(r.body()).minor == proto_minor + 7);
		CHECK(decode_hello(body_of(encode(sample_hello()))).minor == proto_minor + 3);
	}
	SECTION("a hello of another major is reported as badproto, whatever follows")
	{
		bytes body = {0x02, 0x00, 0x05, 0x00, 0xde, 0xad}; // 2.5 and an unknown layout
		hello h = decode_hello(body);
		CHECK(h.st == status::badproto);
		CHECK(h.err == EPROTONOSUPPORT);
		CHECK(h.major == 2);
		CHECK(h.minor == 5);
		CHECK_THAT(h.message, Contains("2.5") && Contains("install the same rpmem"));
		require_proto_error(
		    [] {
			    decode_hello(bytes{0x02, 0x00, 0x05});
		    },
		    {"minor", "cut short"});
	}
	SECTION("a request of another major is a protocol error naming both versions")
	{
		raw_request r;
		r.major = proto_major + 1;
		r.minor = 4;
		const std::string ours =
		    std::to_string(proto_major) + "." + std::to_string(proto_minor);
		require_proto_error([&] { decode_pool_request(r.body(), msg_type::open); },
		                    {"open", "major", "2.4", ours});
	}
}

TEST_CASE("encode refuses invalid messages with EINVAL", "[control][codec]")
{
	pool_request req = sample_create();
	req.provider = std::string(max_provider + 1, 'p');
	require_einval([&] { encode(req, msg_type::create); }, "provider");
	req = sample_create();
	req.descriptor = std::string(max_string + 1, 'd');
	require_einval([&] { encode(req, msg_type::create); }, "descriptor");
	require_einval([&] { encode(sample_create(), msg_type::open); }, "attr");
	require_einval([&] { encode(sample_create(), msg_type::ping); }, "pool_request");

	pool_response resp = sample_open_resp();
	resp.fabric.port = 0;
	require_einval([&] { encode(resp, msg_type::open_resp); }, "fabric.port");
	resp = sample_open_resp();
	resp.fabric.method = static_cast<persist_method>(7);
	require_einval([&] { encode(resp, msg_type::open_resp); }, "fabric.method");

	require_einval([] { encode(close_request{0x10}); }, "flags");
	require_einval(
	    [] {
		    encode(status_response{static_cast<status>(99), 0, ""}, msg_type::close_resp);
	    },
	    "status");
	hello h;
	h.major = 2;
	require_einval([&] { encode(h); }, "major");
}

TEST_CASE("decode<T> refuses a message of another type", "[control][codec]")
{
	message m = message_of(encode(ping{1}));
	require_proto_error([&] { (void)decode<pool_request>(m); }, {"ping", "create", "open"});
	require_proto_error([&] { (void)decode<pong>(m); },
	                    {"expected message type pong", "received ping"});
	require_proto_error([] { check_type(msg_type::open_resp, msg_type::create_resp); },
	                    {"expected message type open_resp", "received create_resp"});
}

TEST_CASE("message type names", "[control][codec]")
{
	CHECK(std::string(msg_type_name(msg_type::set_attr_resp)) == "set_attr_resp");
	CHECK(std::string(msg_type_name(static_cast<msg_type>(0))) == "unknown");
	CHECK(is_known(msg_type::pong));
	CHECK(is_known(msg_type::checksum_resp));
	CHECK(std::string(msg_type_name(msg_type::checksum)) == "checksum");
	CHECK(is_known(msg_type::create_done));
	CHECK(std::string(msg_type_name(msg_type::create_done)) == "create_done");
	CHECK_FALSE(is_known(static_cast<msg_type>(15)));
}

TEST_CASE("status errno and text match PMDK's table", "[control][status]")
{
	struct row {
		int errnum;
		const char *text;
	};
	// librpmem 1.12 rpmem_util.c:20-81 (docs/design.md, PMDK §P4), in status order, then ours.
	const row pmdk[status_count] = {
	    {0, "Success"},
	    {EPROTONOSUPPORT, "Protocol version number mismatch"},
	    {EINVAL, "Invalid pool descriptor"},
	    {EFBIG, "Invalid pool size"},
	    {EINVAL, "Invalid number of lanes"},
	    {EINVAL, "Invalid provider"},
	    {EREMOTEIO, "Fatal error"},
	    {ECONNABORTED, "Fatal in-band connection error"},
	    {EBUSY, "Pool already in use"},
	    {EEXIST, "Pool already exists"},
	    {EMEDIUMTYPE, "Provider not supported"},
	    {ENOENT, "Pool set or its part doesn't exist or it is unavailable"},
	    {EACCES, "Pool set permission denied"},
	    {EINVAL, "Invalid pool set configuration"},
	    {ENOTSUP, "Operation not supported by rpmemd"}, // ours, since protocol 1.2
	    {EINVAL, "Pool set damaged"},                   // ours, since protocol 1.4
	};
	for (std::uint32_t v = 0; v < status_count; ++v) {
		INFO("status " << v);
		auto s = static_cast<status>(v);
		CHECK(status_errno(s) == pmdk[v].errnum);
		CHECK(std::string(status_text(s)) == pmdk[v].text);
	}
	CHECK(status_errno(status::pool_cfg) == EINVAL);
	CHECK(status_errno(static_cast<status>(status_count)) == EPROTO);
	CHECK(std::string(status_text(static_cast<status>(status_count))) == "Unknown status");
}

TEST_CASE("status damaged (since 1.4) travels in an open_resp, and no value past it does",
          "[control][status]")
{
	pool_response r;
	r.st = status::damaged;
	r.err = EINVAL;
	r.message = "pool p.set: invalid header in part /pmem/p.part: invalid pool header checksum";
	const bytes body = body_of(encode(r, msg_type::open_resp));
	CHECK(decode_pool_response(body, msg_type::open_resp) == r);
	CHECK(static_cast<std::uint32_t>(status::damaged) + 1 == status_count);
	bytes past = body;
	patch(past, 0, status_count, 4);
	require_proto_error([&] { decode_pool_response(past, msg_type::open_resp); },
	                    {"status", std::to_string(status_count)});
}

TEST_CASE("pool_attr::is_zero", "[control][status]")
{
	CHECK(pool_attr{}.is_zero());
	CHECK_FALSE(sample_attr().is_zero());
	pool_attr a;
	a.user_flags[15] = 1;
	CHECK_FALSE(a.is_zero());
	a = pool_attr{};
	a.ro_compat_features = 1;
	CHECK_FALSE(a.is_zero());
}
