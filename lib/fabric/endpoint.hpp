// SPDX-License-Identifier: BSD-3-Clause
// An active FI_EP_MSG endpoint: one connection. Opened from the client's info::for_connect or
// from a FI_CONNREQ's info on the server; bound to an EQ and CQ(s), enabled, then connected or
// accepted. Posting never spins: a full queue is reported as post_status::again so the caller
// can drive progress (read its CQ) and retry; every other failure throws rpmem::error.
#pragma once

#include "fabric/cq.hpp"
#include "fabric/eq.hpp"
#include "fabric/fabric.hpp"
#include "fabric/fid_owner.hpp"
#include "fabric/info.hpp"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace rpmem::fabric
{

/** Result of posting an operation. */
enum class post_status {
	posted,
	again, // -FI_EAGAIN: the queue is full or progress is needed; read the CQ, then retry
};

/** Where an RMA operation lands at the peer: its remote_base() + offset, and its key. */
struct rma_target {
	std::uint64_t addr = 0;
	std::uint64_t key = 0;
};

class endpoint
{
public:
	/** fi_endpoint on the domain from `source`; keeps a copy of it. Throws rpmem::error. */
	endpoint(const fabric_domain &parent, const info &source);

	void bind(const eq &events);
	/** Binds a CQ for FI_TRANSMIT and/or FI_RECV, optionally | FI_SELECTIVE_COMPLETION. */
	void bind(const cq &completions, std::uint64_t flags);
	void enable();
	/** Connects to the info's dest_addr; FI_CONNECTED (or an error) follows on the EQ. */
	void connect(std::span<const std::uint8_t> private_data);
	/** Accepts the connection request this endpoint was opened from. */
	void accept(std::span<const std::uint8_t> private_data);
	/** fi_shutdown: the peer gets FI_SHUTDOWN. With the sockets provider a no-op: the
	 *  connection ends when the endpoint closes (see endpoint.cpp). */
	void shutdown();

	[[nodiscard]] post_status send(const void *buf, std::size_t len, void *desc, void *context);
	[[nodiscard]] post_status recv(void *buf, std::size_t len, void *desc, void *context);
	/** fi_inject: buf may be reused when it returns; no completion. len <= inject_size. */
	[[nodiscard]] post_status inject(const void *buf, std::size_t len);
	[[nodiscard]] post_status write(const void *buf, std::size_t len, void *desc,
	                                rma_target dst, void *context);
	/** fi_writemsg, for flags: FI_COMPLETION, FI_DELIVERY_COMPLETE, FI_COMMIT_COMPLETE,
	 * FI_REMOTE_CQ_DATA (then `data` is the remote CQ data). */
	[[nodiscard]] post_status writemsg(const void *buf, std::size_t len, void *desc,
	                                   rma_target dst, void *context, std::uint64_t flags,
	                                   std::uint64_t data = 0);
	[[nodiscard]] post_status read(void *buf, std::size_t len, void *desc, rma_target src,
	                               void *context);

	/** fi_readmsg, for flags: FI_COMPLETION (needed under FI_SELECTIVE_COMPLETION). */
	[[nodiscard]] post_status readmsg(void *buf, std::size_t len, void *desc, rma_target src,
	                                  void *context, std::uint64_t flags);

	/** Largest connection private data the provider carries (FI_OPT_CM_DATA_SIZE). */
	std::size_t cm_data_size() const;
	const info &source() const noexcept { return info_; }
	fid_ep *get() const noexcept { return ep_.get(); }
	fid_t fid() const noexcept { return &ep_.get()->fid; }
	const std::string &provider() const noexcept { return provider_; }

private:
	post_status posted(long ret, const char *op, std::size_t len, std::uint64_t addr) const;

	fid_owner<fid_ep> ep_;
	info info_;
	std::string provider_;
};

} // namespace rpmem::fabric
