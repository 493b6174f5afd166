// SPDX-License-Identifier: BSD-3-Clause
// Choosing the libfabric provider for a target node, before anything is started over SSH.
//
// Candidates, in order: verbs (RDMA hardware), tcp, sockets — the first that fi_getinfo can serve
// for FI_EP_MSG with FI_MSG | FI_RMA to the node wins. Environment:
//   RPMEM_PROVIDER=<name>   only <name> is tried (any provider name; the RPMEM_ENABLE_* are
//   ignored) RPMEM_ENABLE_VERBS=0    removes verbs; as in PMDK, a value that is not an integer
//   removes it too RPMEM_ENABLE_SOCKETS=0  removes sockets. Unlike PMDK, sockets is allowed by
//   default: it is only
//                           reached when tcp cannot serve, and failing with ENOMEDIUM then helps
//                           nobody. PMDK's RPMEM_ENABLE_SOCKETS=1 is accepted and changes nothing;
//                           a value that is not an integer is ignored (noted in the reason).
#pragma once

#include "fabric/env.hpp"
#include "fabric/granted.hpp"

#include <rpmem/error.hpp>

#include <string>

namespace rpmem::fabric
{

struct provider_choice {
	std::string name;   // "verbs", "tcp", "sockets" or the forced RPMEM_PROVIDER
	granted probe;      // what the provider offers towards the node (tx_size: max queue depth)
	std::string reason; // why this one, for logs: skipped candidates and the overrides seen
};

/**
 * Selects the provider for `node` (host name or address). Throws rpmem::error(ENOMEDIUM,
 * "no libfabric provider can reach <node>: tried verbs, tcp, sockets; <why each failed>; ...").
 */
provider_choice select_provider(const std::string &node, const env &environment = process_env());

} // namespace rpmem::fabric
