// SPDX-License-Identifier: BSD-3-Clause
// The daemon's lane request executor: every malformed or out-of-range request is refused before
// the pool is touched; good batches land whole; inline copies never tear an aligned word.
#include "lane_exec.hpp"

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <vector>

namespace ln = rpmem::lane;

namespace
{

/** An in-memory region that records what was persisted. */
class memory_region final : public rpmemd::persist_region
{
public:
	explicit memory_region(std::size_t size) : bytes(size, 0) {}
	std::uint8_t *base() override { return bytes.data(); }
	std::uint64_t size() const override { return bytes.size(); }
	void persist(std::uint64_t off, std::uint64_t len) override
	{
		persisted.push_back({off, len});
	}
	void deep_persist(std::uint64_t off, std::uint64_t len) override
	{
		deep.push_back({off, len});
	}
	std::vector<std::uint8_t> bytes;
	std::vector<std::pair<std::uint64_t, std::uint64_t>> persisted, deep;
};

const rpmemd::lane_limits limits{8, 4096};

struct batch {
	std::vector<std::uint8_t> msg = std::vector<std::uint8_t>(ln::request_header_size);
	std::uint64_t entries = 0;

	batch &range(std::uint64_t off, std::uint64_t len) { return add(off, len, nullptr); }
	batch &data(std::uint64_t off, const std::vector<std::uint8_t> &d)
	{
		return add(off, d.size(), d.data());
	}
	batch &add(std::uint64_t off, std::uint64_t len, const void *d)
	{
		std::size_t at = msg.size();
		msg.resize(at + ln::entry_size(len, d != nullptr));
		ln::encode(off, len, d, msg.data() + at);
		++entries;
		return *this;
	}
	std::vector<std::uint8_t> build(std::uint32_t lane = 0, std::uint64_t count = UINT64_MAX)
	{
		ln::encode(ln::request{ln::op::persist, lane, 0,
		                       count == UINT64_MAX ? entries : count, 77},
		           msg.data());
		return msg;
	}
};

int run(rpmemd::persist_region &r, const std::vector<std::uint8_t> &msg,
        std::uint64_t *bytes = nullptr)
{
	ln::request req;
	return rpmemd::execute(msg, limits, r, &req, bytes);
}

} // namespace

TEST_CASE("lane: a batch of inline and written ranges lands and is persisted", "[lane]")
{
	memory_region r(1 << 20);
	std::vector<std::uint8_t> a(13, 0xaa), b(4000, 0xbb);
	auto msg = batch().data(5, a).range(10000, 300).data(20001, b).build();
	std::uint64_t bytes = 0;
	REQUIRE(run(r, msg, &bytes) == 0);
	CHECK(bytes == 13 + 300 + 4000);
	CHECK(r.bytes[4] == 0);
	CHECK(r.bytes[5] == 0xaa);
	CHECK(r.bytes[17] == 0xaa);
	CHECK(r.bytes[18] == 0);
	CHECK(r.bytes[20001] == 0xbb);
	CHECK(r.bytes[24000] == 0xbb);
	CHECK(r.bytes[24001] == 0);
	REQUIRE(r.persisted.size() == 3);
	CHECK(r.persisted[1] == std::pair<std::uint64_t, std::uint64_t>{10000, 300});
}

namespace
{

/** A region with a CPU cache in front of its media: base() is what the CPU sees, media_ what
 *  survives a power failure; persist() writes a range back. Any dirty byte may reach the media
 *  at any moment (eviction), so the media holds a prefix of a batch only if, whenever a range is
 *  persisted, nothing outside it is dirty. Every persist checks that. */
class cached_region final : public rpmemd::persist_region
{
public:
	explicit cached_region(std::size_t size) : cache(size, 0), media(size, 0) {}
	std::uint8_t *base() override { return cache.data(); }
	std::uint64_t size() const override { return cache.size(); }
	void persist(std::uint64_t off, std::uint64_t len) override
	{
		for (std::size_t i = 0; i < cache.size(); ++i)
			if (cache[i] != media[i] && (i < off || i >= off + len)) {
				dirty_outside.push_back({off, i}); // the first is enough
				break;
			}
		std::memcpy(media.data() + off, cache.data() + off, len);
	}
	void deep_persist(std::uint64_t off, std::uint64_t len) override { persist(off, len); }
	std::vector<std::uint8_t> cache, media;
	/** (range persisted, a byte dirty outside it at that moment) */
	std::vector<std::pair<std::uint64_t, std::size_t>> dirty_outside;
};

} // namespace

TEST_CASE("lane: each entry of a batch is durable before the next one is written", "[lane]")
{
	// Asynchronous replication's rounds rely on it: the replica's media holds a prefix of the
	// round's persists even if the replica host loses power mid-batch.
	cached_region r(1 << 14);
	std::vector<std::uint8_t> written(600, 0x5a), a(64, 0xa1), b(200, 0xb2), c(64, 0xc3);
	// The RDMA-written range landed before the request (the NIC wrote it into the cache).
	std::memset(r.cache.data() + 8192, 0x5a, written.size());
	// Inline ranges after it, one of them rewriting an earlier one's bytes.
	auto msg = batch().range(8192, 600).data(100, a).data(1000, b).data(100, c).build();
	REQUIRE(run(r, msg) == 0);
	for (const auto &[range_off, byte] : r.dirty_outside)
		FAIL_CHECK("persisting the range at " << range_off << " while byte " << byte
		                                      << " of another entry was dirty");
	CHECK(r.media == r.cache);
	CHECK(r.media[100] == 0xc3);
	CHECK(r.media[1100] == 0xb2);
}

TEST_CASE("lane: bad requests are refused and change nothing", "[lane]")
{
	memory_region r(1 << 16);
	std::vector<std::uint8_t> d(64, 0x11);
	SECTION("lane out of range")
	{
		CHECK(run(r, batch().data(0, d).build(8)) == EINVAL);
	}
	SECTION("range past the end")
	{
		CHECK(run(r, batch().data(0, d).range((1 << 16) - 10, 11).build()) == EINVAL);
	}
	SECTION("offset + length overflows")
	{
		CHECK(run(r, batch().data(0, d).range(UINT64_MAX - 5, 10).build()) == EINVAL);
		CHECK(run(r, batch().range(10, UINT64_MAX >> 1).build()) == EINVAL);
	}
	SECTION("fewer entries than announced")
	{
		CHECK(run(r, batch().data(0, d).build(0, 2)) == EINVAL);
	}
	SECTION("more bytes than the entries describe")
	{
		auto msg = batch().data(0, d).build();
		msg.resize(msg.size() + 8);
		CHECK(run(r, msg) == EINVAL);
	}
	SECTION("inline data cut short")
	{
		auto msg = batch().data(0, d).build();
		msg.resize(msg.size() - 16);
		CHECK(run(r, msg) == EINVAL);
	}
	SECTION("payload larger than the daemon's inline limit")
	{
		std::vector<std::uint8_t> big(4096, 1);
		CHECK(run(r, batch().data(0, big).build()) == EINVAL);
	}
	SECTION("not a request at all")
	{
		std::vector<std::uint8_t> junk(40, 0x42);
		CHECK(run(r, junk) == EPROTO);
		CHECK(run(r, std::vector<std::uint8_t>(10, 0)) == EPROTO);
	}
	CHECK(r.persisted.empty());
	CHECK(std::all_of(r.bytes.begin(), r.bytes.end(), [](auto b) { return b == 0; }));
}

TEST_CASE("lane: deep_persist is bounds-checked and has no payload", "[lane]")
{
	memory_region r(1 << 16);
	std::vector<std::uint8_t> msg(ln::request_header_size);
	ln::encode(ln::request{ln::op::deep_persist, 1, 100, 200, 5}, msg.data());
	CHECK(run(r, msg) == 0);
	REQUIRE(r.deep.size() == 1);
	ln::encode(ln::request{ln::op::deep_persist, 1, (1 << 16) - 1, 2, 5}, msg.data());
	CHECK(run(r, msg) == EINVAL);
	msg.push_back(0);
	ln::encode(ln::request{ln::op::deep_persist, 1, 0, 1, 5}, msg.data());
	CHECK(run(r, msg) == EINVAL);
	CHECK(r.deep.size() == 1);
}

TEST_CASE("lane: atomic_copy copies exactly, at every alignment", "[lane]")
{
	std::vector<std::uint8_t> src(200), dst(256);
	for (std::size_t i = 0; i < src.size(); ++i)
		src[i] = static_cast<std::uint8_t>(i * 7 + 1);
	for (std::size_t d = 0; d < 8; ++d) {
		for (std::size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 191}) {
			std::fill(dst.begin(), dst.end(), 0);
			rpmemd::atomic_copy(dst.data() + d, src.data() + 3, n);
			CHECK(std::memcmp(dst.data() + d, src.data() + 3, n) == 0);
			CHECK(dst[d + n] == 0);
			if (d)
				CHECK(dst[d - 1] == 0);
		}
	}
}
