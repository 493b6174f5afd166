// SPDX-License-Identifier: BSD-3-Clause
// Whether a registration can pin what it covers: RDMA providers (verbs) pin every registered
// page for as long as the region lives, within RLIMIT_MEMLOCK unless the process has
// CAP_IPC_LOCK, and a pool is registered whole. Checked before the pool is registered, so a
// pool too large for the limit is refused with what to do, not with the provider's ENOMEM.
// Pure (no libfabric): unit-tested in tests/unit/pinning_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rpmem::fabric
{

struct pin_limits {
	bool provider_pins = false; // the provider pins registered pages (provider_pins())
	bool on_demand = false;     // FI_VERBS_USE_ODP=1: pages are faulted in, never pinned
	bool unlimited = false;     // CAP_IPC_LOCK: the limit does not apply
	std::uint64_t memlock = UINT64_MAX; // RLIMIT_MEMLOCK's soft limit (RLIM_INFINITY: max)
};

/** Providers that pin what they register: verbs (InfiniBand, RoCE, iWARP) and efa; tcp, sockets
 *  and shm do not. */
bool provider_pins(std::string_view provider);

/**
 * Why registering `bytes` for `what` (e.g. "the 64 GiB pool") cannot work under `l`, with what
 * to do; nullopt when it can.
 */
std::optional<std::string> pinning_refusal(const pin_limits &l, std::uint64_t bytes,
                                           std::string_view what);

/** This process's limits, for `provider`: RLIMIT_MEMLOCK, CAP_IPC_LOCK (/proc/self/status) and
 *  FI_VERBS_USE_ODP from the environment. */
pin_limits current_pin_limits(std::string_view provider);

} // namespace rpmem::fabric
