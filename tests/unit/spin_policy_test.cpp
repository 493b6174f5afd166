// SPDX-License-Identifier: BSD-3-Clause
// The adaptive wait: the polling budget follows how long caught completions took, polling
// stops for a while when it mostly misses and resumes after, and a busy machine forbids it.
#include "fabric/spin_policy.hpp"

#include <catch2/catch.hpp>

using namespace rpmem::fabric;
using namespace std::chrono_literals;
using ns = std::chrono::nanoseconds;

TEST_CASE("spin policy: wait modes parse and print", "[spin]")
{
	for (auto m : {wait_mode::block, wait_mode::spin, wait_mode::adaptive})
		CHECK(parse_wait_mode(to_string(m)) == m);
	CHECK_FALSE(parse_wait_mode("poll"));
	CHECK_FALSE(parse_wait_mode(""));
	CHECK_FALSE(parse_wait_mode("Spin"));
}

TEST_CASE("spin policy: the budget follows the completions polling caught", "[spin]")
{
	spin_budget b({.initial = 50us, .min = 5us, .max = 250us});
	CHECK(b.next() == ns(50us));
	b.hit(10us); // three times the typical catch
	CHECK(b.current() == ns(30us));
	for (int i = 0; i < 100; ++i)
		b.hit(40us);
	CHECK(b.current() > ns(110us));
	CHECK(b.current() <= ns(120us));
	for (int i = 0; i < 100; ++i)
		b.hit(500us); // never beyond max
	CHECK(b.current() == ns(250us));
	for (int i = 0; i < 100; ++i)
		b.hit(100ns); // nor below min
	CHECK(b.current() == ns(5us));
	b.calibrate(20us);
	CHECK(b.current() == ns(60us));
}

TEST_CASE("spin policy: polling that mostly misses stops for a while, then resumes", "[spin]")
{
	spin_budget b;
	const auto budget = b.next();
	// A window with enough hits keeps polling.
	for (unsigned i = 0; i < spin_budget::window; ++i) {
		if (i < spin_budget::min_hits)
			b.hit(budget / 3);
		else
			b.miss();
	}
	CHECK_FALSE(b.cooling());
	CHECK(b.next() > ns(0));
	// A window of misses stops it for `cooldown` waits ...
	for (unsigned i = 0; i < spin_budget::window; ++i)
		b.miss();
	CHECK(b.cooling());
	for (unsigned i = 0; i < spin_budget::cooldown; ++i)
		CHECK(b.next() == ns(0));
	// ... after which it polls again.
	CHECK_FALSE(b.cooling());
	CHECK(b.next() > ns(0));
}

TEST_CASE("spin policy: a core is spare only while runnable threads fit the cores", "[spin]")
{
	CHECK(core_to_spare("0.08 0.03 0.01 1/178 3042\n", 2));
	CHECK(core_to_spare("0.08 0.03 0.01 2/178 3042\n", 2));
	CHECK_FALSE(core_to_spare("4.10 3.90 2.00 3/178 3042\n", 2));
	CHECK_FALSE(core_to_spare("9.99 9.99 9.99 12/400 1\n", 8));
	CHECK(core_to_spare("9.99 9.99 9.99 8/400 1\n", 8));
	// Unreadable text forbids polling rather than allowing it.
	CHECK_FALSE(core_to_spare("", 2));
	CHECK_FALSE(core_to_spare("garbage", 2));
	CHECK_FALSE(core_to_spare("0.1 0.1 0.1 x/178 1", 2));
	CHECK_FALSE(core_to_spare("0.1 0.1 0.1 /178 1", 2));
}

TEST_CASE("spin policy: completions a little after the budget teach it, and end a cooldown",
          "[spin]")
{
	spin_budget b({.initial = 20us, .min = 5us, .max = 250us});
	for (unsigned i = 0; i < spin_budget::window; ++i)
		b.miss();
	REQUIRE(b.cooling());
	// A blocking wait that got its completion 40 us after it began: polling would have.
	b.late(40us);
	CHECK_FALSE(b.cooling());
	CHECK(b.current() == ns(120us));
	// Later than the largest budget: a long operation, nothing to learn.
	for (unsigned i = 0; i < spin_budget::window; ++i)
		b.miss();
	REQUIRE(b.cooling());
	b.late(5ms);
	CHECK(b.cooling());
	CHECK(b.current() == ns(120us));
}
