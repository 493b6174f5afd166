// SPDX-License-Identifier: BSD-3-Clause
// The data path of one remote pool: lanes multiplexed over a few fabric connections.
//
// A lane is an ordering domain, not a connection: lane l travels on connection l % E. Each lane
// has one message slot (one request in flight); a connection carries up to `queue_depth`
// requests at once (credits). Completions are reaped by whichever waiting thread holds the
// connection's completion queue (leader/follower): a single thread never hands off to another.
#pragma once

#include "control/messages.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace rpmem::client
{

struct settings;

class data_path
{
public:
	/** Connects every endpoint the daemon announced, presenting the session's secret. */
	data_path(const control::fabric_params &fabric, const std::string &host, void *pool_addr,
	          std::size_t pool_size, std::uint32_t nlanes, const settings &s);
	~data_path();
	data_path(const data_path &) = delete;
	data_path &operator=(const data_path &) = delete;

	std::uint32_t nlanes() const;

	/** Durable when it returns; !relaxed keeps aligned 8-byte stores untorn on the replica. */
	void persist(std::uint64_t offset, std::uint64_t length, unsigned lane, bool relaxed);
	/** Posts the write and returns; drain(lane) makes it durable. */
	void flush(std::uint64_t offset, std::uint64_t length, unsigned lane);
	void drain(unsigned lane);
	void deep_persist(std::uint64_t offset, std::uint64_t length, unsigned lane);
	void read(void *buf, std::uint64_t offset, std::uint64_t length, unsigned lane);

	/** Disconnects every endpoint; later calls fail with ECONNRESET. Idempotent. */
	void shutdown();

private:
	struct impl;
	std::unique_ptr<impl> impl_;
};

} // namespace rpmem::client
