// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the lane (in-band persist) messages: rpmem::lane::decode_request and
// rpmemd::execute() (daemon/lane_exec.cpp) against an in-memory persist_region.
//
// Input layout (little-endian), so the fuzzer also explores the limits and the region size:
//   [0..1] region size in bytes (0..65535)    [2] nlanes    [3..4] inline_max
//   [5..]  the lane message exactly as received from the fabric (header + payload)
// tests/fuzz/make_lane_corpus.py writes the seeds (tests/fuzz/corpus/lane/).
//
// Checked on every input, independently of lane_exec.cpp and lane_msg.hpp (the payload is
// parsed again here, with 128-bit arithmetic):
//   - nothing is written outside the region: it sits between poisoned guard zones (ASan reports
//     the first stray byte with its stack) whose pattern is verified afterwards;
//   - persist()/deep_persist() are only ever called for ranges inside the region;
//   - a request is accepted (0) only if it is well formed: lane below nlanes, payload within
//     inline_max, a persist batch of exactly `length` complete entries filling the payload, every
//     range in bounds; an accepted batch leaves exactly its inline data (applied in order) in the
//     region and nothing else changed, and reports the sum of its lengths as persisted;
//   - a rejected request leaves the region byte-for-byte unchanged and persists nothing;
//   - execute() returns only 0, EINVAL, EPROTO (EIO is reserved for failing persists, which this
//     region never does);
//   - the same bytes as a fabric connection's private data (decode_conn_data, which rpmemd's
//     accept thread runs on what any peer sends) and as a response (decode_response): decoded
//     only at exactly their size, fields as read here, and encoding the result gives the bytes
//     back.
// Build and run: scripts/fuzz.sh (or -DRPMEM_FUZZ=ON with clang, target lane_fuzz).
#include "lane/lane_msg.hpp"
#include "lane_exec.hpp"

#include <sanitizer/asan_interface.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace
{

using u128 = unsigned __int128;
constexpr std::size_t guard = 256;
constexpr std::uint8_t guard_byte = 0xa5;

[[noreturn]] void fail(const char *what)
{
	std::fprintf(stderr, "lane_fuzz: invariant violated: %s\n", what);
	std::abort();
}

bool inside(std::uint64_t offset, std::uint64_t len, std::uint64_t size)
{
	return u128(offset) + u128(len) <= u128(size);
}

class guarded_region final : public rpmemd::persist_region
{
public:
	explicit guarded_region(std::size_t size) : size_(size), mem_(size + 2 * guard)
	{
		std::fill(mem_.begin(), mem_.begin() + guard, guard_byte);
		std::fill(mem_.end() - guard, mem_.end(), guard_byte);
		for (std::size_t i = 0; i < size; ++i)
			mem_[guard + i] = static_cast<std::uint8_t>(i * 131 + 7);
		ASAN_POISON_MEMORY_REGION(mem_.data(), guard);
		ASAN_POISON_MEMORY_REGION(mem_.data() + guard + size, guard);
	}
	~guarded_region() override { ASAN_UNPOISON_MEMORY_REGION(mem_.data(), mem_.size()); }
	guarded_region(const guarded_region &) = delete;
	guarded_region &operator=(const guarded_region &) = delete;

	std::uint8_t *base() override { return mem_.data() + guard; }
	std::uint64_t size() const override { return size_; }
	void persist(std::uint64_t offset, std::uint64_t len) override { record(offset, len); }
	void deep_persist(std::uint64_t offset, std::uint64_t len) override { record(offset, len); }

	std::vector<std::uint8_t> snapshot() const
	{
		return {mem_.begin() + guard, mem_.begin() + guard + size_};
	}
	void check_guards()
	{
		ASAN_UNPOISON_MEMORY_REGION(mem_.data(), mem_.size());
		for (std::size_t i = 0; i < guard; ++i)
			if (mem_[i] != guard_byte || mem_[guard + size_ + i] != guard_byte)
				fail("bytes outside the region were written");
		ASAN_POISON_MEMORY_REGION(mem_.data(), guard);
		ASAN_POISON_MEMORY_REGION(mem_.data() + guard + size_, guard);
	}
	std::size_t calls = 0;

private:
	void record(std::uint64_t offset, std::uint64_t len)
	{
		if (!inside(offset, len, size_))
			fail("persist called for a range outside the region");
		++calls;
	}
	std::size_t size_;
	std::vector<std::uint8_t> mem_;
};

/** An entry of a persist batch as this file reads the wire format (docs/protocol.md). */
struct wire_entry {
	std::uint64_t offset, length;
	const std::uint8_t *data;
};

/** Parses a persist payload independently of lane_msg.hpp; false if it is malformed. */
bool parse_batch(const std::uint8_t *p, std::size_t size, std::uint64_t count,
                 std::vector<wire_entry> &out)
{
	std::size_t pos = 0;
	for (std::uint64_t i = 0; i < count; ++i) {
		if (size - pos < 16)
			return false;
		std::uint64_t off = 0, len = 0;
		for (int b = 0; b < 8; ++b) {
			off |= std::uint64_t(p[pos + b]) << (8 * b);
			len |= std::uint64_t(p[pos + 8 + b]) << (8 * b);
		}
		pos += 16;
		bool with_data = len >> 63;
		len &= ~(1ULL << 63);
		const std::uint8_t *data = nullptr;
		if (with_data) {
			u128 padded = (u128(len) + 7) / 8 * 8;
			if (padded > size - pos)
				return false;
			data = p + pos;
			pos += static_cast<std::size_t>(padded);
		}
		out.push_back({off, len, data});
	}
	return pos == size;
}

std::uint64_t le(const std::uint8_t *p, int n)
{
	std::uint64_t v = 0;
	for (int i = 0; i < n; ++i)
		v |= std::uint64_t(p[i]) << (8 * i);
	return v;
}

/** The fixed-size lane messages: connection data and responses. */
void check_fixed_messages(const std::vector<std::uint8_t> &msg)
{
	namespace lane = rpmem::lane;
	auto cd = lane::decode_conn_data(msg);
	if (cd.has_value() != (msg.size() == lane::conn_data_size))
		fail("connection data was decoded from the wrong number of bytes");
	if (cd) {
		if (!std::equal(cd->secret.begin(), cd->secret.end(), msg.begin()) ||
		    cd->endpoint != le(msg.data() + 32, 4))
			fail("connection data decoded to other fields than its bytes say");
		std::uint8_t again[lane::conn_data_size];
		lane::encode(*cd, again);
		if (!std::equal(msg.begin(), msg.end(), again))
			fail("connection data does not encode back to its bytes");
	}
	auto resp = lane::decode_response(msg);
	if (resp.has_value() != (msg.size() == lane::response_size))
		fail("a response was decoded from the wrong number of bytes");
	if (resp) {
		if (resp->lane != le(msg.data(), 4) || resp->err != le(msg.data() + 4, 4) ||
		    resp->cookie != le(msg.data() + 8, 8))
			fail("a response decoded to other fields than its bytes say");
		std::uint8_t again[lane::response_size];
		lane::encode(*resp, again);
		if (!std::equal(msg.begin(), msg.end(), again))
			fail("a response does not encode back to its bytes");
	}
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
	if (size < 5)
		return 0;
	std::size_t region_size = data[0] | std::size_t(data[1]) << 8;
	rpmemd::lane_limits limits;
	limits.nlanes = data[2];
	limits.inline_max = data[3] | std::uint32_t(data[4]) << 8;
	// The message gets its own exact-size allocation: reading past it is an ASan report.
	std::vector<std::uint8_t> msg(data + 5, data + size);
	check_fixed_messages(msg);

	guarded_region region(region_size);
	auto before = region.snapshot();
	rpmem::lane::request decoded;
	decoded.cookie = ~msg.size();
	std::uint64_t persisted = 0;
	int rc = rpmemd::execute(msg, limits, region, &decoded, &persisted);
	region.check_guards();
	auto after = region.snapshot();

	if (rc != 0 && rc != EINVAL && rc != EPROTO)
		fail("execute returned an unexpected error code");
	auto req = rpmem::lane::decode_request(msg);
	if (!req) {
		if (rc != EPROTO)
			fail("bytes that are not a request header were not refused with EPROTO");
	} else if (rc != EPROTO && decoded.cookie != req->cookie)
		fail("the decoded request header was not returned to the caller");

	if (rc != 0) {
		if (before != after)
			fail("a rejected request changed the region");
		if (region.calls)
			fail("a rejected request persisted something");
		return 0;
	}

	// Accepted: re-derive from the bytes alone that it had to be acceptable.
	constexpr std::size_t hdr = 32;
	if (!req || msg.size() < hdr)
		fail("a malformed message was accepted");
	if (req->lane >= limits.nlanes)
		fail("a request for a lane out of range was accepted");
	std::size_t payload = msg.size() - hdr;
	const std::uint8_t *pl = msg.data() + hdr;
	if (payload > limits.inline_max)
		fail("a payload larger than inline_max was accepted");
	std::uint16_t kind = static_cast<std::uint16_t>(msg[2] | msg[3] << 8);
	if (kind == 1) { // persist: a batch of entries
		std::vector<wire_entry> entries;
		if (!parse_batch(pl, payload, req->length, entries))
			fail("a malformed persist batch was accepted");
		std::vector<std::uint8_t> expect = before;
		u128 total = 0;
		for (const auto &e : entries) {
			if (!inside(e.offset, e.length, region_size))
				fail("a persist batch with an out-of-bounds range was accepted");
			if (e.data && e.length)
				std::memcpy(expect.data() + e.offset, e.data, e.length);
			total += e.length;
		}
		if (expect != after)
			fail("a persist batch wrote something other than its inline data");
		if (u128(persisted) != total)
			fail("persisted bytes differ from the batch's lengths");
	} else if (kind == 2) { // deep_persist of bytes already written
		if (payload || !inside(req->offset, req->length, region_size))
			fail("an out-of-bounds or payload-carrying deep persist was accepted");
		if (before != after)
			fail("a deep persist changed the region");
		if (persisted != req->length)
			fail("persisted bytes differ from the deep persist's length");
	} else {
		fail("a request of an unknown kind was accepted");
	}
	return 0;
}
