// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the control-protocol decoders (lib/control/codec.cpp).
//
// Every input is tried as the body of each of the thirteen message types, and as a stream of
// frames read with receive() (a seed holding one complete frame starts there). Decoders may only
// accept or throw protocol_error; anything else (a crash, a sanitizer report, another exception) is
// a bug. A decoded message must re-encode to exactly the input bytes: the encoding is canonical,
// which proves every byte was validated rather than skipped.
//
// Built with -DRPMEM_FUZZ=ON and clang (tests/fuzz/CMakeLists.txt); run by scripts/fuzz.sh
// (which passes -max_len=70000) on a copy of tests/fuzz/corpus/control.
#include "control/codec.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace rpmem::control;

namespace
{

/** Decodes m as its type and encodes the result again: a whole frame. */
std::vector<std::uint8_t> reencode(const message &m)
{
	switch (m.type) {
	case msg_type::hello:
		return encode(decode<hello>(m));
	case msg_type::create:
	case msg_type::open:
		return encode(decode<pool_request>(m), m.type);
	case msg_type::create_resp:
	case msg_type::open_resp:
		return encode(decode<pool_response>(m), m.type);
	case msg_type::set_attr:
		return encode(decode<set_attr_request>(m));
	case msg_type::set_attr_resp:
	case msg_type::close_resp:
		return encode(decode<status_response>(m), m.type);
	case msg_type::close:
		return encode(decode<close_request>(m));
	case msg_type::ping:
		return encode(decode<ping>(m));
	case msg_type::pong:
		return encode(decode<pong>(m));
	case msg_type::checksum:
		return encode(decode<checksum_request>(m));
	case msg_type::checksum_resp:
		return encode(decode<checksum_response>(m));
	case msg_type::create_done:
		return encode(decode<create_done>(m));
	}
	std::abort(); // receive() and decode_header() only return known types
}

/** A hello of another major decodes to a synthesized badproto hello: not canonical by design. */
bool foreign_hello(const message &m)
{
	return m.type == msg_type::hello && m.body.size() >= 2 &&
	       (m.body[0] | m.body[1] << 8) != proto_major;
}

void check_canonical(const message &m)
{
	std::vector<std::uint8_t> frame;
	try {
		if (foreign_hello(m)) {
			(void)decode<hello>(m);
			return;
		}
		frame = reencode(m);
	} catch (const protocol_error &) {
		return;
	}
	if (frame.size() != header_size + m.body.size() ||
	    !std::equal(m.body.begin(), m.body.end(), frame.begin() + header_size))
		std::abort(); // accepted bytes that the encoder would not produce
}

/** Serves the fuzz input as a stream; its end is a closed peer. */
class input_stream final : public rpmem::byte_stream
{
public:
	explicit input_stream(std::span<const std::uint8_t> in) : in_(in) {}
	void write_all(std::span<const std::uint8_t>) override {}
	void read_exact(std::span<std::uint8_t> data, std::chrono::milliseconds) override
	{
		if (data.size() > in_.size())
			throw rpmem::error(ECONNRESET, "end of fuzz input");
		std::memcpy(data.data(), in_.data(), data.size());
		in_ = in_.subspan(data.size());
	}

private:
	std::span<const std::uint8_t> in_;
};

void fuzz_stream(std::span<const std::uint8_t> in)
{
	input_stream s(in);
	try {
		for (;;)
			check_canonical(receive(s, std::chrono::milliseconds(-1)));
	} catch (const protocol_error &) {
	} catch (const rpmem::error &e) {
		if (e.errnum() != ECONNRESET)
			throw;
	}
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
	std::span<const std::uint8_t> in(data, size);
	std::vector<std::uint8_t> body(in.begin(), in.end());
	for (std::uint16_t t = 1; t <= static_cast<std::uint16_t>(msg_type::checksum_resp); ++t)
		check_canonical(message{static_cast<msg_type>(t), body});
	fuzz_stream(in);
	return 0;
}
