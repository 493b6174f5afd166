// SPDX-License-Identifier: BSD-3-Clause
// How a thread waits on an EQ or CQ. Blocking by default (docs/design.md, decision 14): polling
// collapses on small machines; `none` is for callers that spin on dedicated cores.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include <chrono>
#include <cstdint>

namespace rpmem::fabric
{

enum class wait_object {
	none,   // non-blocking reads only (spinning)
	unspec, // the provider's choice; sread blocks
	fd,     // a file descriptor (wait_fd()) the caller may put into its own poll set
};

inline fi_wait_obj to_fi(wait_object w) noexcept
{
	switch (w) {
	case wait_object::none:
		return FI_WAIT_NONE;
	case wait_object::fd:
		return FI_WAIT_FD;
	default:
		return FI_WAIT_UNSPEC;
	}
}

/** A timeout in libfabric's int milliseconds: negative waits forever, huge values saturate. */
inline int to_fi_timeout(std::chrono::milliseconds timeout) noexcept
{
	if (timeout.count() < 0)
		return -1;
	return timeout.count() > INT32_MAX ? INT32_MAX : static_cast<int>(timeout.count());
}

} // namespace rpmem::fabric
