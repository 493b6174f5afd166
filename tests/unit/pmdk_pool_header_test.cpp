// SPDX-License-Identifier: BSD-3-Clause
// lib/pmdk/pool_header: PMDK's on-media pool header (encode/decode, checksum, links) and
// rpmem's marks on it, as pure functions (store_test.cpp checks the bytes against pmempool).
#include "pmdk/pool_header.hpp"
#include "pmdk/pool_map.hpp"

#include <catch2/catch.hpp>

#include <cstring>

using namespace rpmem::pmdk;

TEST_CASE("encode and decode are inverse, and encode seals", "[pmdk][header]")
{
	header_fields f;
	std::memcpy(f.signature.data(), "PMEMOBJ", 8);
	f.major = 6;
	f.compat = 1;
	f.incompat = feat_incompat_cksum_2k;
	f.links = {generate_uuid(), generate_uuid(), generate_uuid(),
	           generate_uuid(), generate_uuid(), generate_uuid()};
	f.crtime = 1234567;
	f.arch = host_arch_bytes();
	const auto h = encode(f);
	CHECK_FALSE(check_header_alone(h));
	CHECK(h.checksum == header_checksum(h));
	const auto g = decode(h);
	CHECK(g.signature == f.signature);
	CHECK(g.major == 6);
	CHECK(g.links.self == f.links.self);
	CHECK(g.links.next_repl == f.links.next_repl);
	CHECK(g.crtime == f.crtime);
	CHECK(g.arch == f.arch);
	// Any change to a checksummed byte is caught.
	auto broken = h;
	broken.major ^= 1;
	CHECK(check_header_alone(broken));
	pool_hdr zero{};
	CHECK_THAT(*check_header_alone(zero), Catch::Contains("zero"));
}

TEST_CASE("ring_links ties part i to its neighbours in a ring", "[pmdk][header]")
{
	const uuid ps = generate_uuid(), prev = generate_uuid(), next = generate_uuid();
	std::vector<uuid> parts = {generate_uuid(), generate_uuid(), generate_uuid()};
	auto l = ring_links(parts, 0, ps, prev, next);
	CHECK(l.self == parts[0]);
	CHECK(l.prev_part == parts[2]);
	CHECK(l.next_part == parts[1]);
	CHECK(l.poolset == ps);
	CHECK(l.prev_repl == prev);
	CHECK(l.next_repl == next);
	auto last = ring_links(parts, 2, ps, prev, next);
	CHECK(last.next_part == parts[0]);
	std::vector<uuid> one = {generate_uuid()};
	auto alone = ring_links(one, 0, ps, prev, next);
	CHECK(alone.prev_part == one[0]);
	CHECK(alone.next_part == one[0]);
}

TEST_CASE("the possibly-behind and rebuilding marks, on attributes and header images",
          "[pmdk][header][marks]")
{
	rpmem::pool_attr a;
	a.compat_features = 0x1;
	CHECK_FALSE(marked_behind(a));
	auto m = with_behind_mark(a, true);
	CHECK(marked_behind(m));
	CHECK(m.compat_features == (0x1 | feat_compat_rpmem_behind));
	CHECK(with_behind_mark(m, false) == a); // nothing else touched

	header_fields f;
	f.compat = 0x1;
	f.incompat = feat_incompat_cksum_2k;
	auto h = encode(f);
	CHECK_FALSE(marked_behind(h));
	set_behind_mark(h, true);
	CHECK(marked_behind(h));
	CHECK(load_le(h.feat.compat) == (0x1 | feat_compat_rpmem_behind));
	CHECK(check_header_alone(h)); // the caller reseals
	seal(h);
	CHECK_FALSE(check_header_alone(h));
	CHECK(marked_behind(header_attr(h)));

	CHECK_FALSE(marked_rebuilding(h));
	set_rebuilding_mark(h, true);
	CHECK(marked_rebuilding(h));
	CHECK(load_le(h.feat.incompat) ==
	      (feat_incompat_cksum_2k | feat_incompat_rpmem_rebuilding));
	set_rebuilding_mark(h, false);
	CHECK_FALSE(marked_rebuilding(h));
	CHECK(load_le(h.feat.incompat) == feat_incompat_cksum_2k);
}

TEST_CASE("part_extent: parts after the first start past their own header", "[pmdk][header]")
{
	constexpr std::uint64_t MiB = 1u << 20;
	// Every part has a header: part 0 whole, the others from 4 KiB on.
	CHECK(part_extent(0, 2 * MiB, 3, 3).offset == 0);
	CHECK(part_extent(0, 2 * MiB, 3, 3).length == 2 * MiB);
	CHECK(part_extent(1, 2 * MiB, 3, 3).offset == pool_hdr_size);
	CHECK(part_extent(1, 2 * MiB, 3, 3).length == 2 * MiB - pool_hdr_size);
	// SINGLEHDR / NOHDRS: later parts are mapped whole.
	CHECK(part_extent(1, 2 * MiB, 3, 1).offset == 0);
	CHECK(part_extent(1, 2 * MiB, 3, 0).length == 2 * MiB);
	// Lengths end at a page boundary.
	CHECK(part_extent(0, 2 * MiB + 100, 1, 1).length == 2 * MiB);
}
