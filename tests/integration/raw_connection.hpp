// SPDX-License-Identifier: BSD-3-Clause
// One bare fabric connection to an rpmemd session, made with lib/fabric as data_path makes its
// own but presenting whatever connection data the test chooses: for tests that play a client
// which misbehaves or connects only in part.
#pragma once

#include "control/messages.hpp"
#include "fabric/cq.hpp"
#include "fabric/endpoint.hpp"
#include "fabric/eq.hpp"
#include "fabric/fabric.hpp"
#include "fabric/info.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>

namespace rpmem::test
{

struct raw_connection {
	/** An enabled endpoint (transmit and receive on `cq`) to the session rpmemd described. */
	explicit raw_connection(const control::fabric_params &f)
	    : source(make_info(f)), domain(source), eq(domain), cq(domain), ep(domain, source)
	{
		ep.bind(eq);
		ep.bind(cq, FI_TRANSMIT | FI_RECV);
		ep.enable();
	}

	/** Presents `data` and waits (at most 5 s) for rpmemd's answer; nullopt if none came. */
	std::optional<fabric::eq_event> connect(std::span<const std::uint8_t> data)
	{
		ep.connect(data);
		std::optional<fabric::eq_event> ev;
		for (int i = 0; i < 50 && !ev; ++i)
			ev = eq.read(std::chrono::milliseconds(100));
		return ev;
	}

	fabric::info source;
	fabric::fabric_domain domain;
	fabric::eq eq;
	fabric::cq cq;
	fabric::endpoint ep;

private:
	static fabric::info make_info(const control::fabric_params &f)
	{
		fabric::request req;
		req.provider = f.provider;
		return fabric::info::for_connect(f.address, f.port, req);
	}
};

} // namespace rpmem::test
