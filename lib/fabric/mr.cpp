// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/mr.hpp"

#include "fabric/error.hpp"
#include "fabric/page_buffer.hpp"

#include <fmt/format.h>

#include <atomic>

namespace rpmem::fabric
{
namespace
{

/**
 * A key no other region of this process uses, for providers that take the requested key as the
 * key (no FI_MR_PROV_KEY): unique per process is unique per domain.
 */
std::uint64_t next_key() noexcept
{
	static std::atomic<std::uint64_t> counter{1};
	return counter.fetch_add(1, std::memory_order_relaxed);
}

} // namespace

memory_region::memory_region(const fabric_domain &parent, void *addr, std::size_t len,
                             std::uint64_t access)
    : addr_(addr), len_(len), mr_mode_(parent.granted().mr_mode), provider_(parent.provider())
{
	if (!whole_pages(addr, len))
		throw rpmem::error(
		    EINVAL, fmt::format("fi_mr_reg({}, {} bytes) refused: a registration must "
		                        "cover whole pages ({} bytes each), or a process "
		                        "forked under RDMAV_FORK_SAFE loses the rest of its "
		                        "first and last page (register a page_buffer)",
		                        addr, len, page_size()));
	const std::uint64_t requested_key = parent.granted().prov_key() ? 0 : next_key();
	const int ret =
	    fi_mr_reg(parent.domain(), addr, len, access, 0, requested_key, 0, mr_.out(), nullptr);
	if (ret != 0)
		throw_call_error(
		    ret, fmt::format("fi_mr_reg({}, {} bytes)", addr, len), provider_,
		    "RDMA providers pin what they register: check RLIMIT_MEMLOCK "
		    "(ulimit -l), and that the memory is not a filesystem-DAX "
		    "mapping, which kernels refuse to pin for RDMA (use Device DAX, or "
		    "FI_VERBS_USE_ODP=1 where the card pages on demand: "
		    "docs/hardware.md)");
	key_ = fi_mr_key(mr_.get());
}

std::uint64_t memory_region::remote_base() const noexcept
{
	return (mr_mode_ & FI_MR_VIRT_ADDR) ? reinterpret_cast<std::uintptr_t>(addr_) : 0;
}

} // namespace rpmem::fabric
