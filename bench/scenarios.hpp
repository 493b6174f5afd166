// SPDX-License-Identifier: BSD-3-Clause
// The rpmem scenarios, each measured beside its transport floor in the same run. Ours and the
// floor alternate in `rounds` batches per point, so a load change on a shared machine hits both.
#pragma once

#include "common.hpp"

#include "client/remote_pool.hpp"

#include <memory>
#include <string>
#include <vector>

namespace rpmem::bench
{

class floor_link;

class scenarios
{
public:
	/** Maps o.pool_size bytes of local memory standing in for the pool. */
	scenarios(const options &o, std::string provider);
	~scenarios();
	scenarios(const scenarios &) = delete;
	scenarios &operator=(const scenarios &) = delete;

	/** Persist latency by size, single lane; floors: write+msg+reply, write+read, send+reply,
	 *  and streaming for sizes >= 64 KiB (persist bandwidth). Floor rows only if
	 * with_floor_rows.
	 */
	void latency(const std::string &method, floor_link &fl, bool with_floor_rows,
	             std::vector<row> &out);
	/** N relaxed flushes of 256 B + one drain against one 256 B persist. */
	void flush(floor_link &fl, std::vector<row> &out);
	/** T threads on T lanes, persists of each size; floor: streaming writes with a window. */
	void throughput(floor_link &fl, std::vector<row> &out);
	/** create/open broken down: ssh+exec+hello, the pool request, the fabric connect;
	 *  floor: starting rpmem-floor over ssh and connecting to it. */
	void startup(std::vector<row> &out);
	/** o.lanes_check lanes requested: lanes granted, connections, rpmemd threads. */
	void lanes(std::vector<row> &out);
	/** One 4 KiB persist posted to N pools (o.fanout_sets, one rpmemd each) and waited on
	 * together, as replicated_pool fans out, for N = 1 ... sets; floor: a 4 KiB message to
	 * N rpmem-floor peers, replies waited on together. */
	void fanout(std::vector<row> &out);

private:
	std::unique_ptr<client::remote_pool> connect(unsigned nlanes,
	                                             const std::string &method = "gpspm");
	client::pool_options pool_opts(const std::string &method) const;
	row base(const std::string &method, const std::string &scenario,
	         const std::string &param) const;

	options o_;
	std::string provider_;
	std::uint8_t *mem_ = nullptr;
};

} // namespace rpmem::bench
