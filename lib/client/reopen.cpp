// SPDX-License-Identifier: BSD-3-Clause
#include "client/reopen.hpp"

#include "pmdk/pool_header.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

namespace rpmem::client
{

std::unique_ptr<remote_pool> reopen(const pool_place &at, unsigned nlanes,
                                    const control::pool_attr *attr, bool mark, std::string *why)
{
	try {
		unsigned lanes = nlanes;
		control::pool_attr a;
		auto rp = remote_pool::open(at.target, at.descriptor, at.addr, at.size, &lanes,
		                            attr ? &a : nullptr, at.conn);
		if (lanes < nlanes) {
			*why = fmt::format("rpmemd granted {} lanes where the pool has {}", lanes,
			                   nlanes);
			return nullptr;
		}
		if (attr && (a.uuid != attr->uuid || a.poolset_uuid != attr->poolset_uuid)) {
			*why = "it holds another pool now (its UUIDs differ)";
			return nullptr;
		}
		if (attr && mark && !pmdk::marked_behind(a)) {
			const auto wire = pmdk::with_behind_mark(*attr, true);
			rp->set_attr(&wire);
		}
		return rp;
	} catch (const rpmem::error &e) {
		*why = e.message();
		return nullptr;
	}
}

} // namespace rpmem::client
