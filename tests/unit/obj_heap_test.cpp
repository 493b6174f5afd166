// SPDX-License-Identifier: BSD-3-Clause
// lib/pmdk/obj_heap against real pools written by Debian's libpmemobj: the ranges it calls
// unreplicated never hold an allocated object or its header, and they do hold what libpmemobj
// leaves unpersisted (the descriptor's run-time fields, huge-chunk footers, free space).
#include "pmdk/obj_heap.hpp"

#include <catch2/catch.hpp>
#include <libpmemobj.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;
using rpmem::pmdk::byte_range;
using rpmem::pmdk::obj_unreplicated;

namespace
{

std::vector<std::uint8_t> slurp(const fs::path &p)
{
	std::ifstream f(p, std::ios::binary);
	return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

bool overlaps(const std::vector<byte_range> &ranges, std::uint64_t begin, std::uint64_t end)
{
	for (const auto &r : ranges)
		if (r.begin < end && begin < r.end)
			return true;
	return false;
}

struct temp_pool {
	fs::path path =
	    fs::temp_directory_path() / ("rpmem-obj-heap-" + std::to_string(::getpid()) + ".obj");
	~temp_pool()
	{
		std::error_code ec;
		fs::remove(path, ec);
	}
};

} // namespace

TEST_CASE("no allocated object lies in what obj_unreplicated skips, and free space does",
          "[pmdk][obj]")
{
	temp_pool t;
	const std::size_t pool_size = 64 << 20;
	PMEMobjpool *pop = pmemobj_create(t.path.c_str(), "obj-heap", pool_size, 0600);
	REQUIRE(pop != nullptr);
	// Small (runs of several classes), medium and huge objects; every other one freed.
	std::mt19937 rng(42);
	std::vector<PMEMoid> oids;
	for (std::size_t size : {64, 200, 1000, 4000, 20000, 300000, 1 << 20, 3 << 20})
		for (int i = 0; i < 6; ++i) {
			PMEMoid oid;
			REQUIRE(pmemobj_alloc(pop, &oid, size + rng() % 64, 1, nullptr, nullptr) ==
			        0);
			oids.push_back(oid);
		}
	for (std::size_t i = 0; i < oids.size(); i += 2)
		pmemobj_free(&oids[i]);
	pmemobj_close(pop);

	const auto bytes = slurp(t.path);
	REQUIRE(bytes.size() == pool_size);
	const auto skip = obj_unreplicated(bytes);
	REQUIRE(!skip.empty());
	// The descriptor's run-time fields come first.
	CHECK(skip.front() == byte_range{4096 + 2048, 8192});
	std::uint64_t total = 0, small = 0;
	for (std::size_t i = 0; i < skip.size(); ++i) {
		CHECK(skip[i].begin < skip[i].end);
		if (i > 0)
			CHECK(skip[i - 1].end < skip[i].begin); // sorted, merged
		total += skip[i].end - skip[i].begin;
		small += skip[i].end - skip[i].begin == 8 ? 1 : 0; // footers
	}
	INFO(skip.size() << " ranges, " << total << " bytes");
	CHECK(small > 0);             // huge-chunk footers
	CHECK(total > pool_size / 2); // most of the pool is free space
	CHECK(total < pool_size);

	pop = pmemobj_open(t.path.c_str(), "obj-heap");
	REQUIRE(pop != nullptr);
	const auto base = reinterpret_cast<std::uintptr_t>(pop);
	std::size_t objects = 0;
	for (PMEMoid oid = pmemobj_first(pop); !OID_IS_NULL(oid); oid = pmemobj_next(oid)) {
		const auto off = reinterpret_cast<std::uintptr_t>(pmemobj_direct(oid)) - base;
		const auto size = pmemobj_alloc_usable_size(oid);
		INFO("object at 0x" << std::hex << off << ", " << std::dec << size << " bytes");
		// 16 bytes of allocation header before it (compact header) count too.
		CHECK_FALSE(overlaps(skip, off - 16, off + size));
		++objects;
	}
	CHECK(objects == oids.size() / 2);
	pmemobj_close(pop);
}

TEST_CASE("obj_unreplicated: not a PMEMOBJ pool, or a heap it does not know, skips no heap",
          "[pmdk][obj]")
{
	std::vector<std::uint8_t> blk(1 << 20, 0);
	std::memcpy(blk.data(), "PMEMBLK", 8);
	CHECK(obj_unreplicated(blk).empty());
	std::vector<std::uint8_t> obj(1 << 20, 0);
	std::memcpy(obj.data(), "PMEMOBJ", 8);
	// A descriptor whose heap is not there: the run-time fields only.
	CHECK(obj_unreplicated(obj) == std::vector<byte_range>{{4096 + 2048, 8192}});
	CHECK(obj_unreplicated(std::span<const std::uint8_t>(obj.data(), 100)).empty());
}
