// SPDX-License-Identifier: BSD-3-Clause
// The chaos checker's record check against doctored replica images: a test that it could fail.
// Whole histories pass; an acknowledged record lost (zeroed, torn, or the counter behind) is
// caught and named; an asynchronous replica with a hole below a record that arrived is not a
// prefix; one behind what a barrier covered is caught; records not yet covered, or being
// caught up in any order, are no failure; a ring slot overwritten by a newer record is not
// judged.
#include "chaos/history.hpp"
#include "chaos/records.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

using namespace rpmem::chaos;

namespace
{

constexpr std::uint64_t slots = 64;

struct image {
	std::vector<std::byte> bytes = std::vector<std::byte>(record_offset(slots, 2, 0));
	std::vector<std::uint64_t> acked{0, 0};

	void put(std::uint64_t t, std::uint64_t k)
	{
		for (std::uint64_t i = 0; i < record_words; ++i) {
			const auto w = word(t, k, i);
			std::memcpy(&bytes[record_offset(slots, t, k) + 8 * i], &w, 8);
		}
	}
	void count(std::uint64_t t, std::uint64_t n)
	{
		std::memcpy(&bytes[counters_offset + 8 * t], &n, 8);
	}
	/** Records 1..n of thread t written and acknowledged, the counter at n. */
	void write(std::uint64_t t, std::uint64_t n)
	{
		for (std::uint64_t k = 1; k <= n; ++k)
			put(t, k);
		count(t, n);
		acked[t] = n;
	}
	void zero(std::uint64_t t, std::uint64_t k)
	{
		std::memset(&bytes[record_offset(slots, t, k)], 0, record_size);
	}
	std::string check(const std::vector<std::uint64_t> &covered, bool prefix)
	{
		record_layout l;
		l.slots = slots;
		l.record_at = [](std::uint64_t t, std::uint64_t k) {
			return record_offset(slots, t, k);
		};
		l.count_at = [](std::uint64_t t) { return counters_offset + 8 * t; };
		return check_records(
		    "replica 0",
		    [this](std::uint64_t off, void *buf, std::size_t n) {
			    if (off + n > bytes.size())
				    return false;
			    std::memcpy(buf, &bytes[off], n);
			    return true;
		    },
		    l, covered, [this] { return acked; }, prefix);
	}
};

} // namespace

TEST_CASE("chaos checker: a replica holding every acknowledged record passes", "[chaos]")
{
	image m;
	m.write(0, 40);
	m.write(1, 30);
	CHECK(m.check({40, 30}, false) == "");
	CHECK(m.check({40, 30}, true) == "");
	CHECK(m.check({0, 0}, false) == "");
}

TEST_CASE("chaos checker: a lost acknowledged record is caught and named", "[chaos]")
{
	image m;
	m.write(0, 40);
	m.write(1, 30);
	m.zero(1, 17);
	const auto v = m.check({40, 30}, false);
	INFO(v);
	CHECK(v.find("thread 1 record 17") != std::string::npos);
	CHECK(v.find("not whole") != std::string::npos);
	CHECK(v.find("acknowledged while the replica was in sync") != std::string::npos);
	// Covered only up to 16 (the replica was not seen in sync since): no promise broken.
	CHECK(m.check({40, 16}, false) == "");
}

TEST_CASE("chaos checker: a torn record (one word of eight) is caught", "[chaos]")
{
	image m;
	m.write(0, 10);
	m.bytes[record_offset(slots, 0, 10) + 8 * 7] ^= std::byte{1};
	CHECK(m.check({10}, false).find("thread 0 record 10") != std::string::npos);
}

TEST_CASE("chaos checker: a counter behind what was acknowledged is caught", "[chaos]")
{
	image m;
	m.write(0, 10);
	m.count(0, 9);
	CHECK(m.check({10}, false).find("counter is 9, but 10 records") != std::string::npos);
}

TEST_CASE("chaos checker: synchronous, records beyond the covered ones may arrive in any order",
          "[chaos]")
{
	image m;
	m.write(0, 20);
	m.zero(0, 18); // a replica being caught up: 19 and 20 came before 18
	CHECK(m.check({17}, false) == "");
	CHECK(m.check({18}, false).find("record 18") != std::string::npos);
}

TEST_CASE("chaos checker: asynchronous, a hole below a record that arrived is no prefix", "[chaos]")
{
	image m;
	m.write(0, 20);
	m.zero(0, 15);
	const auto v = m.check({10}, true);
	INFO(v);
	CHECK(v.find("thread 0 record 15") != std::string::npos);
	CHECK(v.find("not a prefix") != std::string::npos);
	// A prefix (the newest not there yet) is what asynchronous mode promises.
	image p;
	p.write(0, 20);
	p.zero(0, 20);
	p.zero(0, 19);
	CHECK(p.check({18}, true) == "");
	// ... but not shorter than what a barrier covered.
	CHECK(p.check({20}, true).find("a barrier covered 20") != std::string::npos);
}

TEST_CASE("chaos checker: ring slots written again by newer records are not judged", "[chaos]")
{
	image m;
	m.write(0, 200); // slots hold records 137..200
	m.acked[0] = 200;
	CHECK(m.check({200}, false) == "");
	// The writer went on meanwhile: record 140's slot now holds 204 (not judged) ...
	m.put(0, 204);
	m.acked[0] = 204;
	CHECK(m.check({200}, false) == "");
	// ... but a newer one lost is still caught.
	m.zero(0, 190);
	CHECK(m.check({200}, false).find("record 190") != std::string::npos);
}
