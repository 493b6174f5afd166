// SPDX-License-Identifier: BSD-3-Clause
// A listening FI_EP_MSG endpoint: connection requests arrive as FI_CONNREQ on the bound EQ; the
// owner accepts them (an endpoint opened from the event's info) or rejects them here.
#pragma once

#include "fabric/eq.hpp"
#include "fabric/fabric.hpp"
#include "fabric/fid_owner.hpp"
#include "fabric/info.hpp"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>

#include <cstdint>
#include <span>
#include <string>

namespace rpmem::fabric
{

/** A numeric socket address: "127.0.0.1" or "::1", and a port. */
struct socket_address {
	std::string host;
	std::uint16_t port = 0;
};

class passive_endpoint
{
public:
	/** fi_passive_ep from `source` (typically info::for_listen). Throws rpmem::error. */
	passive_endpoint(const fabric_domain &parent, const info &source);

	void bind(const eq &events);
	void listen();
	/** The bound address (fi_getname); after listen() the port is the one assigned. */
	socket_address name() const;
	/** Refuses a connection request; the peer sees FI_ECONNREFUSED with `private_data`. */
	void reject(const info &connreq, std::span<const std::uint8_t> private_data);

	fid_pep *get() const noexcept { return pep_.get(); }
	fid_t fid() const noexcept { return &pep_.get()->fid; }

private:
	fid_owner<fid_pep> pep_;
	std::string provider_;
};

} // namespace rpmem::fabric
