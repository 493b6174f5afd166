// SPDX-License-Identifier: BSD-3-Clause
// The fabric target of one session: listens where SSH arrived, accepts only connections that
// present the session's secret, and serves lane requests on a few worker threads.
#pragma once

#include "config.hpp"
#include "control/messages.hpp"
#include "fabric/mr_mode.hpp"
#include "fabric/spin_policy.hpp"
#include "lane_exec.hpp"
#include "target_method.hpp"

#include "rpmem/pool_stats.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace rpmemd
{

struct target_params {
	std::string address;   // numeric address to listen on (SSH_CONNECTION's server address)
	std::string providers; // client's preference: "tcp" or "verbs,tcp,sockets"
	// The ports the listener may take (port-range): the first free one; unset: ephemeral.
	std::optional<port_range> ports;
	persist_region *region = nullptr;
	std::uint32_t nlanes = 0; // requested by the client
	// What decides the persistence method besides the provider (target_method.hpp): GPSPM
	// is always served; the target announces commit where its provider grants FI_RMA_PMEM,
	// else APM where that is durable, and logs why APM, asked for, is not.
	method_inputs methods;
	unsigned nthreads = 0; // 0: about the number of cores
	rpmem::fabric::wait_mode wait = rpmem::fabric::wait_mode::adaptive; // how workers wait
	rpmem::fabric::mr_mode mr_mode = rpmem::fabric::mr_mode::automatic;
	// A connection to the fabric port that sent no connection request within this is closed
	// (daemon/port_guard.hpp).
	std::chrono::milliseconds auth_timeout{1000};
	// A receive or response the provider refuses this long (FI_EAGAIN: the client takes
	// nothing) fails the target; the session's heartbeat usually ends it sooner.
	std::chrono::milliseconds stall_timeout{60000};
};

/** Lane requests a target served: how many, how many refused (bad range, unknown lane...),
 *  bytes made durable, and how long each took to execute (validate and make durable: the
 *  pmem_persist or msync), in powers of two of nanoseconds. */
struct served_counts {
	std::uint64_t requests = 0;
	std::uint64_t refused = 0;
	std::uint64_t bytes = 0;
	std::array<std::uint64_t, 40> service_ns_log2{}; // [b]: requests of [2^b, 2^(b+1)) ns
	/** The bound below which a fraction q (0..1) of the requests executed; 0 if none (the
	 *  client's round-trip histogram rule: pool_stats). */
	std::uint64_t quantile_ns(double q) const noexcept
	{
		rpmem::pool_stats s;
		s.round_trips = requests;
		s.latency_ns_log2 = service_ns_log2;
		return s.quantile_ns(q);
	}
};

class target
{
public:
	virtual ~target() = default;
	/** What the client needs to connect (the create/open response's fabric part). */
	virtual const rpmem::control::fabric_params &params() const = 0;
	/** True once every endpoint the client announced has connected. */
	virtual bool connected() const = 0;
	/** True when a connection failed or was lost after connecting (the session is broken). */
	virtual bool failed() const = 0;
	/** Nanoseconds of the last lane request served (steady clock), 0 if none yet. */
	virtual std::int64_t last_activity() const = 0;
	/** What it has served so far (for the session-end log line). */
	virtual served_counts served() const = 0;
	/** Stops the workers, closes every connection and deregisters the pool's memory: nothing
	 * reaches the pool after it returns, so it can be closed. What is left (queues, the
	 * domain, the provider's threads) goes with the object. Idempotent. */
	virtual void stop() = 0;
};

/** Starts listening; throws rpmem::error (ENOMEDIUM: no provider; EADDRINUSE: no free port in
 *  port-range, which the client sees as a fatal connection error; others: fabric setup). */
std::unique_ptr<target> start_target(const target_params &params);

} // namespace rpmemd
