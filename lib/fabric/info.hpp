// SPDX-License-Identifier: BSD-3-Clause
// fi_getinfo for rpmem's one kind of endpoint — FI_EP_MSG with FI_MSG | FI_RMA — and an owning
// handle for the resulting fi_info. The hints ask for what the persistence protocol wants and
// fall back to less; callers read back what was granted (granted.hpp) instead of assuming it.
#pragma once

#include "fabric/granted.hpp"
#include "fabric/mr_mode.hpp"

#include <rpmem/error.hpp>

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace rpmem::fabric
{

/** libfabric API version requested: 1.10 has every feature used here and 1.17 serves it. */
inline constexpr std::uint32_t api_version = FI_VERSION(1, 10);
/** The version of PMDK's librpmem, whose FI_MR_BASIC and FI_MR_SCALABLE need it. */
inline constexpr std::uint32_t legacy_api_version = FI_VERSION(1, 4);

/** What the caller asks of a provider beyond the fixed hints (FI_EP_MSG, FI_MSG | FI_RMA). */
struct request {
	std::string provider; // exact provider name; empty: any
	// Queue depths (queue_sizing.hpp); 0: the provider's default. Where the provider's
	// maximum is lower, the deepest it grants down to its default: read back granted().
	std::size_t tx_size = 0;                         // transmit queue depth
	std::size_t rx_size = 0;                         // receive queue depth
	fabric::mr_mode mr = fabric::mr_mode::automatic; // see mr_mode.hpp
};

/**
 * Owns one fi_info entry (never a list). Hints: FI_EP_MSG, caps FI_MSG | FI_RMA (+ FI_RMA_PMEM
 * when offered), tx msg_order FI_ORDER_RAW | FI_ORDER_SAW (dropped when a provider cannot give
 * them: check granted().send_after_write()), mode FI_CONTEXT | FI_RX_CQ_DATA, FI_THREAD_SAFE,
 * FI_SOCKADDR, and the request's MR mode: automatic asks API 1.10 for mr_mode LOCAL |
 * VIRT_ADDR | ALLOCATED | PROV_KEY, never ENDPOINT (granted.hpp: unsupported()); basic and
 * scalable ask API 1.4 for FI_MR_BASIC or FI_MR_SCALABLE (+ mode FI_LOCAL_MR), as PMDK's
 * librpmem did.
 */
class info
{
public:
	info() noexcept = default;
	/** Takes ownership of `owned`, which must be a single entry (owned->next == nullptr). */
	explicit info(fi_info *owned) noexcept : info_(owned) {}
	~info();
	info(info &&other) noexcept;
	info &operator=(info &&other) noexcept;
	info(const info &) = delete;
	info &operator=(const info &) = delete;

	/**
	 * fi_getinfo(api_version, node, service, flags, hints): the first entry of the request's
	 * provider. Empty node/service pass NULL. Throws rpmem::error (errno ENODATA when no
	 * provider matches) naming node, service and provider.
	 */
	static info query(const std::string &node, const std::string &service, std::uint64_t flags,
	                  const request &req);
	/** Info for a passive endpoint listening on `node` (a numeric address), ephemeral port. */
	static info for_listen(const std::string &node, const request &req);
	/** Info for an active endpoint that connects to node:port (dest_addr set). */
	static info for_connect(const std::string &node, std::uint16_t port, const request &req);

	/** A deep copy (fi_dupinfo). */
	info clone() const;
	fi_info *get() const noexcept { return info_; }
	fi_info *operator->() const noexcept { return info_; }
	explicit operator bool() const noexcept { return info_ != nullptr; }
	/** Gives up ownership (e.g. to hand it to libfabric). */
	fi_info *release() noexcept;

	fabric::granted granted() const { return read_granted(*info_); }
	std::string provider() const;

private:
	fi_info *info_ = nullptr;
};

} // namespace rpmem::fabric
