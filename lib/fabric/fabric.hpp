// SPDX-License-Identifier: BSD-3-Clause
// A fabric and one domain opened from an fi_info: the parent of every other object here (EQs
// hang off the fabric, CQs, MRs and endpoints off the domain). Destroy the children first —
// declare the fabric_domain before them — or fi_close fails with EBUSY and the objects leak.
#pragma once

#include "fabric/fid_owner.hpp"
#include "fabric/granted.hpp"
#include "fabric/info.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

namespace rpmem::fabric
{

class fabric_domain
{
public:
	/** fi_fabric(source->fabric_attr) + fi_domain(source). Throws rpmem::error: ENOTSUP when
	 *  the provider granted what rpmem cannot serve (granted::unsupported). */
	explicit fabric_domain(const info &source);

	fid_fabric *fabric() const noexcept { return fabric_.get(); }
	fid_domain *domain() const noexcept { return domain_.get(); }
	/** What the provider granted in the info the domain was opened with. */
	const fabric::granted &granted() const noexcept { return granted_; }
	const std::string &provider() const noexcept { return granted_.provider; }

private:
	fid_owner<fid_fabric> fabric_; // declared first: closed after the domain
	fid_owner<fid_domain> domain_;
	fabric::granted granted_;
};

} // namespace rpmem::fabric
