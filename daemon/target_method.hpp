// SPDX-License-Identifier: BSD-3-Clause
// Which persistence method a session's fabric target announces (docs/design.md, decision 7).
//
// GPSPM is always served: rpmemd makes each range durable itself. The others skip that step, so
// they are offered only where the step is not needed:
//   commit  the provider flushes the CPU caches over each write before it completes
//           (FI_RMA_PMEM, tcp) and the pool is on persistent memory;
//   APM     the RDMA read behind the writes proves only that they are visible, so the writes
//           must already be durable when visible: on a provider whose "RDMA writes" the
//           replica's CPU copies (tcp, sockets), only where the platform flushes its caches on
//           power loss (eADR: libpmem's pmem_has_auto_flush()); on RDMA hardware (verbs), also
//           where the operator asserts that the NIC's writes bypass the caches (DDIO off) with
//           nic-writes-durable, which no software on the host can check.
// Pure: unit-tested without libfabric (tests/unit/target_method_test.cpp).
#pragma once

#include "control/messages.hpp"

#include <string>
#include <string_view>

namespace rpmemd
{

/** What decides the method besides the provider. */
struct method_inputs {
	bool commit = false;     // persist-commit, the pool on pmem, a client of protocol 1.1+
	bool apm = false;        // persist-apm: the operator asks for APM
	bool pmem = false;       // the pool is persistent memory (pmem_is_pmem)
	bool auto_flush = false; // pmem_has_auto_flush() == 1: caches flushed on power loss
	bool nic_writes_durable = false; // nic-writes-durable: the operator's word for RDMA NICs
};

struct method_choice {
	rpmem::control::persist_method method = rpmem::control::persist_method::gpspm;
	// Why APM, asked for, is not offered (one line for the log); empty when it is, when it was
	// not asked for, or when commit was chosen before it.
	std::string apm_refused;
};

/** Whether `provider`'s RDMA writes are made by a NIC into the replica's memory (verbs), rather
 *  than copied there by the replica's CPU (tcp, sockets, and any provider not known to be
 *  RDMA hardware). */
bool nic_writes(std::string_view provider);

/** The method to announce for a target on `provider`, which grants FI_RMA_PMEM or not. */
method_choice choose_method(const method_inputs &in, std::string_view provider, bool rma_pmem);

} // namespace rpmemd
