// SPDX-License-Identifier: BSD-3-Clause
// What a provider granted, read back from the final fi_info. libfabric grants capabilities, it
// does not promise the ones asked for: the data path adapts to these values and never assumes
// one provider's behaviour (tcp and sockets grant mr_mode 0, verbs the hardware mode).
#pragma once

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace rpmem::fabric
{

struct granted {
	std::string provider;    // fabric_attr->prov_name: "verbs", "tcp", "sockets", ...
	std::string fabric_name; // fabric_attr->name, e.g. "127.0.0.1/32"
	std::string domain_name; // domain_attr->name, e.g. "lo"
	std::uint64_t caps = 0;  // info->caps
	std::uint64_t mode = 0;  // info->mode: obligations on the caller (FI_CONTEXT, ...)
	// domain_attr->mr_mode as FI_MR_* bits: API 1.4's FI_MR_BASIC reads as VIRT_ADDR |
	// ALLOCATED | PROV_KEY, FI_MR_SCALABLE as none, and mode FI_LOCAL_MR adds FI_MR_LOCAL.
	int mr_mode = 0;
	int mr_mode_granted = 0;     // domain_attr->mr_mode as the provider wrote it
	std::uint64_t msg_order = 0; // tx_attr->msg_order (FI_ORDER_* bits)
	std::size_t max_msg_size = 0;
	std::size_t inject_size = 0;
	std::size_t tx_size = 0;    // transmit queue depth of one endpoint
	std::size_t rx_size = 0;    // receive queue depth of one endpoint
	std::size_t tx_ctx_cnt = 0; // domain limits: endpoints, contexts, CQs
	std::size_t rx_ctx_cnt = 0;
	std::size_t cq_cnt = 0;
	std::size_t ep_cnt = 0;
	std::size_t cq_data_size = 0;
	std::uint32_t addr_format = 0; // FI_SOCKADDR, FI_SOCKADDR_IN, ...
	bool rma_pmem = false; // FI_RMA_PMEM: FI_COMMIT_COMPLETE writes are persistent at target
	// Transfers move on a thread of the provider's own, not only inside calls into it. Both
	// tcp and sockets grant data_progress FI_PROGRESS_AUTO, but only sockets keeps it with a
	// progress thread per domain (libfabric 1.17 sock_progress.c); tcp moves a target's RMA
	// only while the target's threads read or wait on its completion queues (tcpx_progress.c
	// has no thread). So this is known per provider: sockets.
	bool progress_thread = false;

	/** Remote addresses are virtual addresses (else offsets from the start of the region). */
	bool virt_addr() const noexcept { return mr_mode & FI_MR_VIRT_ADDR; }
	/** Local buffers of data transfers must be registered and their desc passed. */
	bool local_mr() const noexcept { return mr_mode & FI_MR_LOCAL; }
	/** The provider picks MR keys (else the requested key is the key). */
	bool prov_key() const noexcept { return mr_mode & FI_MR_PROV_KEY; }
	/** Each MR must be bound to an endpoint and enabled before use. */
	bool mr_endpoint() const noexcept { return mr_mode & FI_MR_ENDPOINT; }
	/**
	 * Why rpmem cannot use this provider, or empty. FI_MR_ENDPOINT: a region bound to one
	 * endpoint has a key for that endpoint only, while a pool has one remote key for all of a
	 * session's connections (the control protocol carries one) and the client's buffers serve
	 * every connection. No provider of libfabric 1.17 with FI_EP_MSG needs it; rpmem never
	 * asks for it, so such a provider is not offered, and one that grants it anyway is refused
	 * here (fabric_domain), not used wrongly.
	 */
	std::string unsupported() const;
	/** Every operation context must point to writable struct fi_context storage. */
	bool needs_context() const noexcept { return mode & FI_CONTEXT; }
	/**
	 * A send posted after a write is delivered after it (FI_ORDER_SAW). When false the data
	 * path must wait for the write's completion before it sends the persist message.
	 */
	bool send_after_write() const noexcept { return msg_order & FI_ORDER_SAW; }
	/** A read posted after a write observes it (FI_ORDER_RAW): what APM relies on. */
	bool read_after_write() const noexcept { return msg_order & FI_ORDER_RAW; }
	/**
	 * A write can carry remote CQ data that makes a completion at the target without taking
	 * one of its posted receives (cq_data_size > 0 and FI_RX_CQ_DATA not kept in mode: tcp;
	 * with verbs, write-with-immediate consumes a receive).
	 */
	bool remote_cq_data_free() const noexcept
	{
		return cq_data_size > 0 && (mode & FI_RX_CQ_DATA) == 0;
	}
	/**
	 * Whether RDMA writes the target sends no response for (APM, commit) should carry remote
	 * CQ data: only where it is free and the target's threads drive the provider's progress,
	 * so that the completion keeps the target polling for what follows (tcp: APM 16-256 KiB
	 * 1.85-2.39 -> 1.01-1.39 x its floor). Where the provider progresses on its own thread
	 * (sockets) the completion only wakes a worker that then takes the core that thread needs
	 * (measured: APM 64 B 40.9 -> 29.8 us without it, level with the write+read floor).
	 */
	bool announce_writes_pays() const noexcept
	{
		return remote_cq_data_free() && !progress_thread;
	}

	/**
	 * Receives one endpoint may keep posted: three quarters of rx_size (no limit when the
	 * provider reports none). A receive is re-posted as soon as its completion is read, which
	 * can be before the provider has recycled the entry behind it; libfabric 1.17's sockets
	 * provider then allocates one more entry and never frees it if it is still posted when
	 * the endpoint closes (LeakSanitizer: 312 bytes per connection with 256 receives against
	 * an rx size of 256). The free quarter keeps its pool from running dry.
	 */
	std::uint32_t posted_recv_limit() const noexcept
	{
		if (rx_size == 0)
			return UINT32_MAX;
		auto n = rx_size - rx_size / 4;
		return n > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(n);
	}

	/** One line for logs: "tcp fabric 127.0.0.1/32 domain lo mr_mode [] order [RAW SAW] ...".
	 */
	std::string describe() const;
};

/** FI_MR_* bits of a granted domain_attr->mr_mode and info->mode (see granted::mr_mode). */
int mr_mode_bits(int mr_mode, std::uint64_t mode);

/** Reads the granted attributes from one fi_info entry. */
granted read_granted(const fi_info &info);

} // namespace rpmem::fabric
