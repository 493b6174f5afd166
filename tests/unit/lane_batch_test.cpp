// SPDX-License-Identifier: BSD-3-Clause
// The client's lane batch: the bytes it builds are a request rpmemd's lane executor accepts and
// applies; ranges are inline up to the threshold; a full batch says so; older inline bytes under
// a newer write are detected; large persists are cut into whole, 4 KiB-aligned chunks.
#include "client/lane_batch.hpp"
#include "lane/lane_msg.hpp"
#include "lane_exec.hpp"

#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

using rpmem::client::chunk_plan;
using rpmem::client::inline_crossover;
using rpmem::client::lane_batch;
using rpmem::client::pipeline_chunk_for;
using rpmem::client::plan_chunks;
using rpmem::client::range;
namespace ln = rpmem::lane;

namespace
{

constexpr std::size_t payload_max = 4096 + 256;
constexpr std::uint64_t threshold = 4096;

struct slot {
	std::vector<std::uint8_t> bytes =
	    std::vector<std::uint8_t>(ln::request_header_size + payload_max);
	lane_batch batch{bytes.data(), payload_max, threshold};
};

/** A pool in memory, as rpmemd's executor sees it. */
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
	void deep_persist(std::uint64_t, std::uint64_t) override {}
	std::vector<std::uint8_t> bytes;
	std::vector<range> persisted;
};

std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed)
{
	std::vector<std::uint8_t> v(n);
	std::iota(v.begin(), v.end(), seed);
	return v;
}

} // namespace

TEST_CASE("lane batch: a sealed batch is a request rpmemd applies", "[lane_batch]")
{
	slot s;
	auto a = pattern(13, 1), b = pattern(4096, 7);
	s.batch.add_inline({100, a.size()}, a.data());
	s.batch.add_written({8192, 100000});
	s.batch.add_inline({200000, b.size()}, b.data());
	CHECK(s.batch.entries() == 3);
	CHECK(s.batch.has_inline());
	std::size_t n = s.batch.seal(5, 42);
	CHECK(n == ln::request_header_size + ln::entry_size(13, true) + ln::entry_header_size +
	               ln::entry_size(4096, true));
	CHECK(s.batch.empty());
	CHECK_FALSE(s.batch.has_inline());

	auto req = ln::decode_request({s.bytes.data(), n});
	REQUIRE(req);
	CHECK(req->lane == 5);
	CHECK(req->cookie == 42);
	CHECK(req->length == 3);

	memory_region pool(1 << 20);
	ln::request decoded;
	REQUIRE(rpmemd::execute({s.bytes.data(), n}, {8, payload_max}, pool, &decoded) == 0);
	CHECK(std::equal(a.begin(), a.end(), pool.bytes.begin() + 100));
	CHECK(std::equal(b.begin(), b.end(), pool.bytes.begin() + 200000));
	REQUIRE(pool.persisted.size() == 3);
	CHECK(pool.persisted[1].offset == 8192);
	CHECK(pool.persisted[1].length == 100000);
}

TEST_CASE("lane batch: ranges up to the threshold travel inline and cost their bytes",
          "[lane_batch]")
{
	slot s;
	CHECK(s.batch.capacity() == payload_max);
	CHECK(s.batch.travels_inline(threshold));
	CHECK_FALSE(s.batch.travels_inline(threshold + 1));
	CHECK(s.batch.cost(13) == ln::entry_header_size + 16);
	CHECK(s.batch.cost(threshold + 1) == ln::entry_header_size);

	// One largest inline range fits an empty batch; then only what is left.
	auto big = pattern(threshold, 3);
	REQUIRE(s.batch.fits(threshold));
	s.batch.add_inline({4096, threshold}, big.data());
	std::size_t left = payload_max - ln::entry_size(threshold, true);
	CHECK(s.batch.payload_bytes() == payload_max - left);
	CHECK(s.batch.fits(left - ln::entry_header_size));
	CHECK_FALSE(s.batch.fits(left - ln::entry_header_size + 8));
	// Written ranges cost an entry each, whatever their size.
	while (s.batch.fits(1 << 20))
		s.batch.add_written({1 << 20, 1 << 20});
	CHECK(payload_max - s.batch.payload_bytes() < ln::entry_header_size);
}

TEST_CASE("lane batch: older inline bytes under a newer write are found", "[lane_batch]")
{
	slot s;
	auto six = pattern(6, 9);
	CHECK_FALSE(s.batch.under_inline({0, 1 << 30})); // nothing inline yet
	s.batch.add_inline({100000, 6}, six.data());
	s.batch.add_inline({300000, 6}, six.data());
	CHECK(s.batch.under_inline({95000, 300000}));      // covers the first
	CHECK(s.batch.under_inline({300005, 10000}));      // its last byte
	CHECK(s.batch.under_inline({200000, 10}));         // between them: the extent is kept whole
	CHECK_FALSE(s.batch.under_inline({300006, 10}));   // just after
	CHECK_FALSE(s.batch.under_inline({90000, 10000})); // ends where the first begins
	s.batch.add_written({1 << 20, 1 << 20});
	CHECK(s.batch.last_written()->offset == 1 << 20);
	s.batch.clear();
	CHECK_FALSE(s.batch.under_inline({95000, 300000}));
	CHECK_FALSE(s.batch.last_written());
}

TEST_CASE("lane batch: large persists are cut into whole 4 KiB-aligned chunks", "[lane_batch]")
{
	constexpr std::uint64_t k256 = 256 << 10;
	CHECK(plan_chunks(2 * k256 - 1, 8, k256).count == 0); // too short to cut
	CHECK(plan_chunks(4 << 20, 1, k256).count == 0);      // one request per lane
	CHECK(plan_chunks(4 << 20, 8, 0).count == 0);         // pipelining off

	auto one_mib = plan_chunks(1 << 20, 8, k256);
	CHECK(one_mib.chunk == k256);
	CHECK(one_mib.count == 3); // and the last 256 KiB in the lane's own request

	auto four_mib = plan_chunks(4 << 20, 8, k256);
	CHECK(four_mib.chunk == 512 << 10);
	CHECK(four_mib.count == 7);

	for (std::uint64_t len : {600000ULL, 1000001ULL, 3ULL << 20, 100ULL << 20}) {
		for (std::uint32_t pipeline : {2U, 3U, 8U}) {
			INFO("length " << len << ", pipeline " << pipeline);
			auto p = plan_chunks(len, pipeline, k256);
			REQUIRE(p.count >= 1);
			CHECK(p.count < pipeline);
			CHECK(p.chunk % 4096 == 0);
			CHECK(p.chunk >= k256);
			CHECK(std::uint64_t(p.count) * p.chunk <
			      len); // something left for the lane
		}
	}
}

TEST_CASE("lane batch: pipelining is on where the provider progresses in our calls, unless told",
          "[lane_batch]")
{
	using rpmem::client::default_pipeline_chunk;
	CHECK(pipeline_chunk_for(std::nullopt, false) == default_pipeline_chunk); // tcp, verbs
	CHECK(pipeline_chunk_for(std::nullopt, true) == 0);                       // sockets
	// RPMEM_PIPELINE_CHUNK decides on every provider, 0 included.
	for (bool threads : {false, true}) {
		CHECK(pipeline_chunk_for(std::uint64_t(256 << 10), threads) == 256 << 10);
		CHECK(pipeline_chunk_for(std::uint64_t(0), threads) == 0);
	}
}

TEST_CASE("lane batch: the inline threshold follows the measured costs", "[lane_batch]")
{
	// Inline cheaper at both sizes (tcp, GPSPM): everything up to the largest goes inline.
	CHECK(inline_crossover({64, 20, 30}, {4096, 25, 31}) == 4096);
	CHECK(inline_crossover({64, 20, 30}, {4096, 31, 31}) == 4096); // a tie keeps inline
	CHECK(inline_crossover({64, 20, 30}, {4096, 32, 31}) == 4096); // within 5 %: inline
	// Dearer already at 64 bytes (APM on sockets: send+reply 76 us, write+read 55 us): none.
	CHECK(inline_crossover({64, 76, 55}, {4096, 95, 60}) == 0);
	// Cheaper small, dearer large: the crossing, rounded down to 8 bytes.
	CHECK(inline_crossover({64, 21.5, 30}, {4096, 41.5, 30}) == (64 + 2016) / 8 * 8);
	auto at = inline_crossover({64, 20, 21}, {4096, 40, 30});
	CHECK(at > 64);
	CHECK(at < 1024);
	CHECK(at % 8 == 0);
}

TEST_CASE("lane batch: a measured tie goes the way that spares rpmemd's threads", "[lane_batch]")
{
	using rpmem::client::tie_goes;
	// APM on sockets probed while the machine was busy: both ways 49-50 us. GPSPM keeps the
	// tie inline (one operation fewer), APM and commit write by RDMA (no daemon thread).
	const rpmem::client::path_costs small{64, 50.1, 48.3}, large{34800, 57.1, 55.1};
	CHECK(inline_crossover(small, large, tie_goes::inline_) == 34800);
	CHECK(inline_crossover(small, large, tie_goes::rdma) == 0);
	// Dearer inline at 64 B but cheaper at the large size (the same busy probe): none inline,
	// whichever way ties go.
	CHECK(inline_crossover({64, 49.9, 48.3}, {34800, 58.2, 62.5}, tie_goes::rdma) == 0);
	CHECK(inline_crossover({64, 58.7, 48.4}, {34800, 70.6, 76.7}, tie_goes::inline_) == 0);
	// A clear difference is followed either way.
	CHECK(inline_crossover({64, 20, 30}, {4096, 25, 31}, tie_goes::rdma) == 4096);
	CHECK(inline_crossover({64, 38, 29}, {4096, 46, 35}, tie_goes::inline_) == 0);
	// Inline cheaper by more than 5 % at 64 B only: the crossing lies between the sizes.
	const auto at = inline_crossover({64, 20, 30}, {4096, 40, 30}, tie_goes::rdma);
	CHECK(at > 64);
	CHECK(at < 4096);
}
