// SPDX-License-Identifier: BSD-3-Clause
// The fabric target's listener: the first provider of the client's list that can listen on the
// address, and a port of the operator's port-range (a firewall between client and replica)
// with an error that says why none was free.
#pragma once

#include "config.hpp"

#include "fabric/eq.hpp"
#include "fabric/fabric.hpp"
#include "fabric/info.hpp"
#include "fabric/mr_mode.hpp"
#include "fabric/passive_endpoint.hpp"

#include <memory>
#include <string>

namespace rpmemd::fabric_detail
{

/** The first provider of the client's list (comma-separated) that can listen on `address`.
 *  Throws rpmem::error(ENOMEDIUM) with what each said. */
rpmem::fabric::info listen_info(const std::string &address, const std::string &providers,
                                rpmem::fabric::mr_mode mr);

/** A listener on `address` at the first port of `range` the provider takes, bound to `events`;
 *  its info goes to `info` (the sockets provider's listener refers to it). Throws
 *  rpmem::error(EADDRINUSE) naming the range when no port of it is free. */
std::unique_ptr<rpmem::fabric::passive_endpoint>
listen_in_range(const rpmem::fabric::fabric_domain &domain, const rpmem::fabric::eq &events,
                const std::string &address, const rpmem::fabric::request &req, port_range range,
                rpmem::fabric::info &info);

} // namespace rpmemd::fabric_detail
