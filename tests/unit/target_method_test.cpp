// SPDX-License-Identifier: BSD-3-Clause
// Which persistence method rpmemd announces (daemon/target_method): APM only where the writes are
// durable once visible — eADR on any provider, or the operator's nic-writes-durable on RDMA
// hardware (verbs) — commit before it, GPSPM otherwise, and why APM, asked for, is not offered.
#include "target_method.hpp"

#include <catch2/catch.hpp>

using namespace rpmemd;
using Catch::Contains;
namespace ctl = rpmem::control;

namespace
{

constexpr auto gpspm = ctl::persist_method::gpspm;
constexpr auto apm = ctl::persist_method::apm;
constexpr auto commit = ctl::persist_method::commit;

/** persist-apm on a pool on pmem, nothing known of the platform. */
method_inputs apm_on_pmem()
{
	method_inputs in;
	in.apm = true;
	in.pmem = true;
	return in;
}

} // namespace

TEST_CASE("target method: only verbs writes with a NIC, every other provider's writes are CPU "
          "copies",
          "[unit][target_method]")
{
	CHECK(nic_writes("verbs"));
	for (auto p : {"tcp", "sockets", "shm", "udp", "efa", ""})
		CHECK_FALSE(nic_writes(p));
}

TEST_CASE("target method: APM over tcp or sockets only where the platform flushes caches on "
          "power loss",
          "[unit][target_method]")
{
	for (auto provider : {"tcp", "sockets"}) {
		INFO(provider);
		auto in = apm_on_pmem();
		auto c = choose_method(in, provider, false);
		CHECK(c.method == gpspm);
		CHECK_THAT(c.apm_refused, Contains(provider) && Contains("CPU copies") &&
		                              Contains("pmem_has_auto_flush()") &&
		                              Contains("eADR"));
		// The operator's word about NICs says nothing about a CPU's copies.
		in.nic_writes_durable = true;
		c = choose_method(in, provider, false);
		CHECK(c.method == gpspm);
		CHECK_THAT(c.apm_refused, Contains("nic-writes-durable speaks for RDMA NICs only"));
		// eADR: the caches are in the persistence domain.
		in.nic_writes_durable = false;
		in.auto_flush = true;
		c = choose_method(in, provider, false);
		CHECK(c.method == apm);
		CHECK(c.apm_refused.empty());
	}
}

TEST_CASE("target method: APM over verbs only where the operator asserts durable NIC writes, or "
          "eADR",
          "[unit][target_method]")
{
	auto in = apm_on_pmem();
	auto c = choose_method(in, "verbs", false);
	CHECK(c.method == gpspm);
	CHECK_THAT(c.apm_refused, Contains("verbs") && Contains("DDIO") && Contains("eADR") &&
	                              Contains("nic-writes-durable = yes") &&
	                              Contains("rpmemd(1)"));
	in.nic_writes_durable = true;
	c = choose_method(in, "verbs", false);
	CHECK(c.method == apm);
	CHECK(c.apm_refused.empty());
	in.nic_writes_durable = false;
	in.auto_flush = true;
	CHECK(choose_method(in, "verbs", false).method == apm);
}

TEST_CASE("target method: no APM on a pool that is not persistent memory, whatever the platform",
          "[unit][target_method]")
{
	method_inputs in;
	in.apm = true;
	in.auto_flush = true;
	in.nic_writes_durable = true;
	for (auto provider : {"tcp", "verbs"}) {
		auto c = choose_method(in, provider, true);
		CHECK(c.method == gpspm);
		CHECK_THAT(c.apm_refused, Contains("not on persistent memory"));
	}
}

TEST_CASE("target method: APM not asked for is neither offered nor explained",
          "[unit][target_method]")
{
	auto in = apm_on_pmem();
	in.apm = false;
	in.auto_flush = true;
	in.nic_writes_durable = true;
	for (auto provider : {"tcp", "verbs"}) {
		auto c = choose_method(in, provider, false);
		CHECK(c.method == gpspm);
		CHECK(c.apm_refused.empty());
	}
}

TEST_CASE("target method: commit where allowed and the provider grants FI_RMA_PMEM, before APM",
          "[unit][target_method]")
{
	auto in = apm_on_pmem();
	in.commit = true;
	in.auto_flush = true;
	auto c = choose_method(in, "tcp", true);
	CHECK(c.method == commit);
	CHECK(c.apm_refused.empty());
	// Without FI_RMA_PMEM (sockets), APM where durable, else GPSPM with the reason.
	CHECK(choose_method(in, "sockets", false).method == apm);
	in.auto_flush = false;
	c = choose_method(in, "sockets", false);
	CHECK(c.method == gpspm);
	CHECK_FALSE(c.apm_refused.empty());
	// Commit not allowed (no persist-commit, or a client older than 1.1): FI_RMA_PMEM alone
	// is not enough.
	in.commit = false;
	CHECK(choose_method(in, "tcp", true).method == gpspm);
}
