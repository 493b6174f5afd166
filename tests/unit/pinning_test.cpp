// SPDX-License-Identifier: BSD-3-Clause
// lib/fabric/pinning: a pool registered whole on a provider that pins (verbs) must fit
// RLIMIT_MEMLOCK, unless the process has CAP_IPC_LOCK or the card pages on demand (ODP).
#include "fabric/pinning.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace rpmem::fabric;

TEST_CASE("pinning: which providers pin what they register", "[unit][pinning]")
{
	CHECK(provider_pins("verbs"));
	CHECK(provider_pins("verbs;ofi_rxm"));
	CHECK(provider_pins("efa"));
	CHECK_FALSE(provider_pins("tcp"));
	CHECK_FALSE(provider_pins("sockets"));
	CHECK_FALSE(provider_pins("shm"));
}

TEST_CASE("pinning: a pool larger than RLIMIT_MEMLOCK is refused with what to do",
          "[unit][pinning]")
{
	constexpr std::uint64_t gib = std::uint64_t(1) << 30;
	pin_limits l;
	l.provider_pins = true;
	l.memlock = 8 << 20; // Debian's default for a user: 8 MiB
	auto why = pinning_refusal(l, 64 * gib, "the pool");
	REQUIRE(why);
	CHECK_THAT(*why, Catch::Contains("RLIMIT_MEMLOCK") && Catch::Contains("8388608") &&
	                     Catch::Contains("ulimit -l") && Catch::Contains("FI_VERBS_USE_ODP") &&
	                     Catch::Contains("the pool"));
	CHECK_FALSE(pinning_refusal(l, 8 << 20, "the pool")); // exactly the limit fits
	CHECK(pinning_refusal(l, (8 << 20) + 4096, "the pool"));

	auto odp = l;
	odp.on_demand = true; // nothing pinned
	CHECK_FALSE(pinning_refusal(odp, 64 * gib, "the pool"));
	auto capable = l;
	capable.unlimited = true; // CAP_IPC_LOCK
	CHECK_FALSE(pinning_refusal(capable, 64 * gib, "the pool"));
	auto tcp = l;
	tcp.provider_pins = false;
	CHECK_FALSE(pinning_refusal(tcp, 64 * gib, "the pool"));
}

TEST_CASE("pinning: this process's limits", "[unit][pinning]")
{
	CHECK_FALSE(current_pin_limits("tcp").provider_pins);
	::setenv("FI_VERBS_USE_ODP", "1", 1);
	auto l = current_pin_limits("verbs");
	CHECK(l.provider_pins);
	CHECK(l.on_demand);
	::setenv("FI_VERBS_USE_ODP", "0", 1);
	CHECK_FALSE(current_pin_limits("verbs").on_demand);
	::unsetenv("FI_VERBS_USE_ODP");
	CHECK_FALSE(current_pin_limits("verbs").on_demand);
}
