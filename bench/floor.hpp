// SPDX-License-Identifier: BSD-3-Clause
// The transport floor: raw libfabric (lib/fabric) on the same provider and addresses as the
// pool, against rpmem-floor on the replica node, with buffers on both sides as large as the pool
// that transfers advance through as the latency scenario advances through the pool (the same
// cache behaviour: an APM persist of 1 MiB took 247 us advancing through a 16 MiB pool and 344 us
// through a 256 MiB one here). What no persistence protocol over this transport can beat:
//   write_msg_reply  RDMA write of N bytes, a message, the peer's reply    (GPSPM's floor)
//   write_read       RDMA write of N bytes, an 8-byte RDMA read            (APM's floor)
//   commit_write     RDMA write of N bytes with FI_COMMIT_COMPLETE, its completion
//                                                                     (commit's floor)
//   send_reply       one message carrying N bytes, the peer's reply        (inline persists)
//   stream           RDMA writes of N bytes, `window` in flight            (throughput floor)
#pragma once

#include "common.hpp"

#include <memory>
#include <string>

namespace rpmem::bench
{

/** The rpmem-floor command for the replica node: --floor-cmd, else RPMEM_CMD's first entry
 *  with its rpmemd program replaced by rpmem-floor from the same directory (its environment
 *  assignments kept, its arguments dropped). */
std::string floor_command(const options &o);

class floor_link
{
public:
	/** Starts rpmem-floor over SSH and connects one endpoint to it. Throws rpmem::error. */
	floor_link(const options &o, const std::string &provider, std::size_t buffer,
	           std::size_t msg_max);
	~floor_link();
	floor_link(const floor_link &) = delete;
	floor_link &operator=(const floor_link &) = delete;

	/** One round trip each, µs. */
	double write_msg_reply(std::size_t size);
	double write_read(std::size_t size);
	/** Needs FI_RMA_PMEM (commit_supported()): the target provider flushes the write to the
	 * persistence domain before it acknowledges. */
	double commit_write(std::size_t size);
	bool commit_supported() const;
	double send_reply(std::size_t size);
	/** send_reply in two halves, to keep several links busy at once (fan-out floor). */
	void message_post(std::size_t size);
	void message_wait();
	/** MiB/s of writes of `size` bytes with `window` in flight for `seconds`, ended by a
	 *  message round trip (so every byte has arrived). */
	double stream(std::size_t size, unsigned window, double seconds);

	/** µs from starting ssh to rpmem-floor's ready line, and of the fabric connect. */
	double start_us() const { return start_us_; }
	double connect_us() const { return connect_us_; }
	const std::string &provider() const;
	std::size_t msg_max() const { return msg_max_; }

private:
	struct impl;
	std::unique_ptr<impl> impl_;
	double start_us_ = 0;
	double connect_us_ = 0;
	std::size_t msg_max_ = 0;
};

} // namespace rpmem::bench
