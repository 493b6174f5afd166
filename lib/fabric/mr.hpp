// SPDX-License-Identifier: BSD-3-Clause
// A registered memory region. Hides the provider's MR mode from the data path: key() is the
// key the peer must use, remote_base() the address it must use for byte 0 of the region (the
// virtual address under FI_MR_VIRT_ADDR, 0 when the provider takes offsets, as tcp and sockets).
#pragma once

#include "fabric/fabric.hpp"
#include "fabric/fid_owner.hpp"

#include <rdma/fi_domain.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace rpmem::fabric
{

class memory_region
{
public:
	/**
	 * fi_mr_reg over [addr, addr + len) with `access` (FI_SEND | FI_RECV | FI_READ | FI_WRITE |
	 * FI_REMOTE_READ | FI_REMOTE_WRITE). Without FI_MR_PROV_KEY the key is one no other region
	 * of the process uses. Throws rpmem::error: EINVAL when the range is not whole pages
	 * (page_buffer.hpp says why).
	 */
	memory_region(const fabric_domain &parent, void *addr, std::size_t len,
	              std::uint64_t access);

	std::uint64_t key() const noexcept { return key_; }
	/** Local descriptor to pass with buffers inside this region (needed under FI_MR_LOCAL). */
	void *desc() const noexcept { return fi_mr_desc(mr_.get()); }
	/** The remote address of byte 0 of the region, for the peer's RMA operations. */
	std::uint64_t remote_base() const noexcept;
	void *addr() const noexcept { return addr_; }
	std::size_t length() const noexcept { return len_; }
	fid_mr *get() const noexcept { return mr_.get(); }

private:
	fid_owner<fid_mr> mr_;
	void *addr_ = nullptr;
	std::size_t len_ = 0;
	std::uint64_t key_ = 0;
	int mr_mode_ = 0;
	std::string provider_;
};

} // namespace rpmem::fabric
