// SPDX-License-Identifier: BSD-3-Clause
// A bidirectional byte stream carrying the control protocol: the SSH exec channel on the client,
// stdin/stdout in rpmemd. Implementations throw rpmem::error: ECONNRESET when the peer is gone
// (EOF, EPIPE), ETIMEDOUT when a read does not complete in time.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>

namespace rpmem
{

class byte_stream
{
public:
	virtual ~byte_stream() = default;
	/** Writes every byte or throws. */
	virtual void write_all(std::span<const std::uint8_t> data) = 0;
	/** Reads exactly data.size() bytes within timeout (negative timeout: wait forever). */
	virtual void read_exact(std::span<std::uint8_t> data,
	                        std::chrono::milliseconds timeout) = 0;
};

} // namespace rpmem
