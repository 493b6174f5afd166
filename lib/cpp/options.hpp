// SPDX-License-Identifier: BSD-3-Clause
// The conversion of the public C++ API's connect_options to the client's options.
#pragma once

#include "client/remote_pool.hpp"
#include "rpmem/pool.hpp"

namespace rpmem::cpp
{

/** The client's options for connect_options: empty fields fall back to the environment. */
client::pool_options to_client(const connect_options &o);

} // namespace rpmem::cpp
