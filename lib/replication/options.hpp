// SPDX-License-Identifier: BSD-3-Clause
// Conversions between the public C++ API types and the client's internal ones.
#pragma once

#include "client/remote_pool.hpp"
#include "rpmem/pool.hpp"

namespace rpmem::replication
{

/** The client's options for connect_options: empty fields fall back to the environment. */
client::pool_options to_client(const connect_options &o);

control::pool_attr to_control(const pool_attr &a);
pool_attr from_control(const control::pool_attr &a);

} // namespace rpmem::replication
