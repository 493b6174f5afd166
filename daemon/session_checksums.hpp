// SPDX-License-Identifier: BSD-3-Clause
// A session's answer to a checksum request: the block checksums of a range of the open pool,
// streamed to the client in bounded messages (docs/protocol.md, checksum).
#pragma once

#include "config.hpp"
#include "lane_exec.hpp"
#include "pool_store.hpp"

#include "control/messages.hpp"
#include "wire/stream.hpp"

#include <cstdint>
#include <string>

namespace rpmemd
{

/** Bytes hashed per checksum_resp at most: each answer comes within a fraction of a second
 *  from memory, and within the client's per-message timeout (RPMEM_CONTROL_TIMEOUT, 10 s) even from
 * a page-cache-cold file read at 10 MB/s, whatever the block size. */
inline constexpr std::uint64_t checksum_bytes_per_message = 64u << 20;

/**
 * Answers a checksum request: the blocks' sums in order, in messages of at most
 * max_checksums_per_message sums and checksum_bytes_per_message bytes hashed, or one
 * failure. The pool's bytes are what persists made durable: the client sends no data
 * meanwhile (its resync holds every writer). `p` and `region` are the session's open pool and
 * the part the client registered, nullptr when no pool is open; `peer` names the client in logs.
 */
void send_checksums(rpmem::byte_stream &io, const std::string &peer, const config &cfg,
                    const pool *p, persist_region *region,
                    const rpmem::control::checksum_request &req);

} // namespace rpmemd
