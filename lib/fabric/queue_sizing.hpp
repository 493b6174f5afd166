// SPDX-License-Identifier: BSD-3-Clause
// How deep an endpoint's queues and how large a completion queue must be, for what the caller
// keeps in flight: one rule for the client's connections and rpmemd's workers. Pure (no
// libfabric): unit-tested in tests/unit/queue_sizing_test.cpp with the verbs provider's numbers.
//
// Why a rule at all: libfabric 1.17's verbs provider lends each completion queue's entries out
// as credits (prov/verbs/src/verbs_cq.c: credits = CQ size). Binding an endpoint to a CQ for
// receives reserves rx_size credits, or none when fewer are left (its receives can then overrun
// the CQ: verbs_ep.c vrb_ep_bind); every send, inject, write and read takes one credit and one of
// the endpoint's tx_size send credits until its completion is read, signalled or not, and is
// refused with FI_EAGAIN without them (verbs_ep.c vrb_post_send). verbs' default tx and rx sizes
// are 384 (fi_verbs.c). A CQ no larger than the receive reservations of its endpoints leaves no
// transmit credit: every post is refused for ever. tcp and sockets keep no such accounts, so
// only this rule keeps a configuration that works here from hanging on RDMA hardware.
#pragma once

#include <cstddef>

namespace rpmem::fabric
{

/** What one completion queue serves: its endpoints (each bound to it for transmits and
 *  receives) and what each keeps in flight. */
struct queue_demand {
	std::size_t endpoints = 1;
	std::size_t receives = 0;  // receives one endpoint keeps posted
	std::size_t transmits = 0; // sends, injects, writes and reads one endpoint has in flight
	// Completions per endpoint the peer causes beyond its receives (remote CQ data of writes
	// where the provider delivers it without a receive: tcp).
	std::size_t remote_events = 0;
};

/** Queue depths to ask each endpoint for (tx_attr->size, rx_attr->size). */
struct endpoint_sizes {
	std::size_t tx_size = 0;
	std::size_t rx_size = 0;
};

/**
 * The depths to ask for: room for every transmit in flight, and for the receives with a
 * quarter of the receive queue kept free (granted::posted_recv_limit: an endpoint keeps at
 * most three quarters of rx_size posted). At least 1 each: 0 would ask for the provider's
 * default, which is not what the CQ is sized for.
 */
endpoint_sizes ask_sizes(const queue_demand &d);

/**
 * Entries of the completion queue for endpoints granted `granted` (the sizes the provider
 * granted, read back: it may grant other than asked): every receive and transmit slot of every
 * endpoint, plus the remote events.
 */
std::size_t cq_entries(const queue_demand &d, const endpoint_sizes &granted);

/** libfabric 1.17 verbs' credit accounts of one CQ (see the top of this file). */
struct verbs_credits {
	std::size_t transmit = 0;   // credits left for transmits after the reservations
	std::size_t unreserved = 0; // endpoints whose receives found no reservation (overrun)
	std::size_t needed = 0;     // transmits the endpoints may have in flight together
	/** Every receive is reserved and every transmit slot has a credit. */
	bool sound() const noexcept { return unreserved == 0 && transmit >= needed; }
	/** Nothing can ever be posted: every send is refused with FI_EAGAIN. */
	bool stalls() const noexcept { return transmit == 0; }
};

/** verbs' default tx and rx size (fi_verbs.c: def_tx_size, def_rx_size), taken when 0 is asked. */
inline constexpr std::size_t verbs_default_size = 384;

/** The credits verbs would leave on a CQ of `cq_size` with `endpoints` bound to it, each of
 *  queue sizes `sizes` (0: verbs' default). */
verbs_credits verbs_credit_check(std::size_t cq_size, std::size_t endpoints, endpoint_sizes sizes);

} // namespace rpmem::fabric
