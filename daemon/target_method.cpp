// SPDX-License-Identifier: BSD-3-Clause
#include "target_method.hpp"

#include <fmt/format.h>

namespace rpmemd
{

namespace
{

namespace ctl = rpmem::control;

/** Why APM would not be durable here; empty when it would be. */
std::string apm_refusal(const method_inputs &in, std::string_view provider)
{
	if (!in.pmem)
		return "the pool is not on persistent memory (pmem_is_pmem() is 0): nothing is "
		       "durable before rpmemd msyncs it";
	if (in.auto_flush)
		return {};
	if (!nic_writes(provider))
		return fmt::format(
		    "over {} the replica's CPU copies each write into its caches, and libpmem's "
		    "pmem_has_auto_flush() reports no platform that flushes them on power loss "
		    "(eADR){}",
		    provider,
		    in.nic_writes_durable ? "; nic-writes-durable speaks for RDMA NICs only" : "");
	if (in.nic_writes_durable)
		return {};
	return fmt::format(
	    "over {} the NIC's writes are durable only where they bypass the CPU caches (DDIO "
	    "off for its root port) or the platform flushes the caches on power loss (eADR, "
	    "which libpmem's pmem_has_auto_flush() does not report here): set "
	    "nic-writes-durable = yes where one of them holds (rpmemd(1))",
	    provider);
}

} // namespace

bool nic_writes(std::string_view provider)
{
	return provider == "verbs";
}

method_choice choose_method(const method_inputs &in, std::string_view provider, bool rma_pmem)
{
	if (in.commit && rma_pmem)
		return {ctl::persist_method::commit, {}};
	if (!in.apm)
		return {ctl::persist_method::gpspm, {}};
	auto why = apm_refusal(in, provider);
	if (why.empty())
		return {ctl::persist_method::apm, {}};
	return {ctl::persist_method::gpspm, std::move(why)};
}

} // namespace rpmemd
