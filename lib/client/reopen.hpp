// SPDX-License-Identifier: BSD-3-Clause
// A new session to a pool whose session died: the one reconnect step of librpmem's synchronous
// pool (resilient_pool) and of its asynchronous writer (async::remote_writer).
#pragma once

#include "client/remote_pool.hpp"
#include "control/messages.hpp"

#include <memory>
#include <string>

namespace rpmem::client
{

/** Where a pool is and the local memory its sessions connect. */
struct pool_place {
	std::string target, descriptor;
	void *addr = nullptr;
	std::size_t size = 0;
	pool_options conn;
};

/**
 * Opens `at` again with `nlanes` lanes. When `attr` is given (a pool with headers), the pool
 * must be the same one (its UUIDs those of *attr), and `mark` marks it "possibly behind"
 * unless it is already. Returns the session, or nullptr with the reason in *why.
 */
std::unique_ptr<remote_pool> reopen(const pool_place &at, unsigned nlanes,
                                    const control::pool_attr *attr, bool mark, std::string *why);

} // namespace rpmem::client
