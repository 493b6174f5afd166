// SPDX-License-Identifier: BSD-3-Clause
// One rpmemd session: the control loop on the SSH channel (stdin/stdout), at most one pool.
#pragma once

#include "config.hpp"
#include "pool_store.hpp"
#include "target.hpp"

#include "wire/stream.hpp"

#include <functional>
#include <memory>

namespace rpmemd
{

/** Exit statuses (docs/design.md, PMDK §P1). */
inline constexpr int exit_ok = 0;
inline constexpr int exit_peer_gone = 1;
inline constexpr int exit_protocol = 255;

/**
 * Runs a session on `io` after the hello was sent: serves create/open, set_attr, ping and close
 * until the client closes (exit_ok), a create/open fails (exit_ok, after the error reply), the
 * client disappears or stays silent (no control message, no lane request) for longer than
 * cfg.heartbeat_timeout (exit_peer_gone), or breaks the protocol (exit_protocol; a request with
 * a valid frame header but a bad body is answered with status badproto first). Never throws.
 * `peer` names the client in logs; `listen_address` is where the fabric target listens.
 * `start` starts the fabric target of an opened pool: start_target in rpmemd; unit tests give
 * a fake (tests/unit/daemon_session_test.cpp), so the session is tested without libfabric.
 */
using target_factory = std::function<std::unique_ptr<target>(const target_params &)>;
int run_session(const config &cfg, pool_store &store, rpmem::byte_stream &io,
                const std::string &peer, const std::string &listen_address,
                const target_factory &start);

} // namespace rpmemd
