// SPDX-License-Identifier: BSD-3-Clause
// One remote pool: the C++ core behind librpmem's C functions and rpmem::pool. Owns the control
// session (rpmemd over SSH) and the data path (lanes over libfabric). Errors: rpmem::error.
#pragma once

#include "client/control_session.hpp"
#include "client/data_path.hpp"
#include "client/env.hpp"
#include "client/pool_calls.hpp"
#include "control/messages.hpp"
#include "ssh/options.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rpmem::client
{

class data_path;

/** Flag values of rpmem_remove (librpmem.h). */
inline constexpr unsigned remove_force = 0x1;
inline constexpr unsigned remove_pool_set = 0x2;

/** How to reach the daemon. Defaults are PMDK's: the environment (RPMEM_CMD, RPMEM_SSH...). */
struct pool_options {
	std::string command;             // remote command; empty: the next RPMEM_CMD entry
	std::optional<ssh::options> ssh; // nullopt: ssh::options::from_environment()
	std::optional<settings> tuning;  // nullopt: process_settings()
};

/** The synchronous pool_calls: every call returns when the replica holds its bytes durably. */
class remote_pool final : public pool_calls
{
public:
	/**
	 * Creates the pool set `descriptor` on `target` and connects lanes for the local memory
	 * [addr, addr+size). *nlanes: requested in, granted out. attr == nullptr or all zeros:
	 * a pool without headers (the remote pool set must say OPTION NOHDRS).
	 */
	static std::unique_ptr<remote_pool> create(const std::string &target,
	                                           const std::string &descriptor, void *addr,
	                                           std::size_t size, unsigned *nlanes,
	                                           const control::pool_attr *attr,
	                                           const pool_options &opts = {});
	/** Opens an existing pool set; *attr_out (if given) receives its attributes. */
	static std::unique_ptr<remote_pool>
	open(const std::string &target, const std::string &descriptor, void *addr, std::size_t size,
	     unsigned *nlanes, control::pool_attr *attr_out, const pool_options &opts = {});
	/** Removes a pool set on target (flags: remove_force, remove_pool_set). */
	static void remove(const std::string &target, const std::string &descriptor, int flags,
	                   const pool_options &opts = {});

	~remote_pool() override; // closes without throwing if close() was not called

	// persist, flush, drain (one round trip whatever was flushed before), deep_persist, read,
	// set_attr and close (lanes shut down, the daemon told and waited for): pool_calls.

	/** Split phase: persist_post/drain_post send and return; complete(lane) waits. Lets one
	 * thread keep several replicas busy at once. Same checks as persist/drain. */
	void persist_post(std::size_t offset, std::size_t length, unsigned lane);
	void drain_post(unsigned lane);
	void complete(unsigned lane);
	/** A round sent while the next is built (data_path::drain_ahead); complete() waits. */
	void drain_ahead(unsigned lane);
	/** How ranges fill one lane request (see data_path::batch_cost). */
	const data_path &lanes() const { return *data_; }
	/** Snapshots: ranges may be sent from a second registered region (data_path). */
	void register_source(const void *addr, std::size_t size);
	/** A relaxed flush of [offset, offset+length) whose bytes are taken from src. */
	void flush_from(const void *src, std::size_t offset, std::size_t length, unsigned lane);
	/**
	 * The replica's checksums of the blocks of [offset, offset+length) (block: a power of two
	 * from 4 KiB to 64 MiB; the last block may be short), computed by rpmemd over its copy.
	 * ENOTSUP when rpmemd cannot (older than protocol 1.2, or block-checksums = no).
	 */
	std::vector<control::block_sum> checksums(std::size_t offset, std::size_t length,
	                                          std::uint32_t block);

	unsigned nlanes() const;
	/** Operations, bytes and round-trip latencies of one lane, or of all (lane == nlanes()). */
	lane_stats stats(unsigned lane) const;
	bool has_headers() const { return has_headers_; }
	control::persist_method method() const { return method_; }
	const std::string &host() const;
	const control::fabric_params &fabric() const { return fabric_; }
	/** The remote pool's size and whether rpmemd persists it with pmem_persist (else msync),
	 *  as rpmemd reported when the pool was created or opened. */
	std::uint64_t remote_size() const { return remote_size_; }
	bool remote_is_pmem() const { return remote_is_pmem_; }

	pool_report report() const override;

	/** Why the pool's session is gone, as its keep-alive saw it (nullopt: alive so far). */
	std::optional<session_lost> lost() const;
	/** Gives the session up without telling rpmemd (client::control_session::abandon): a
	 *  reconnect replaces it. Calls waiting on it fail; close() does nothing after. */
	void abandon() noexcept;
	/** Fails the data path from any thread (data_path::fail): the calls waiting on it throw
	 *  `why` now, and what the session's owner does next (abandon, close) is as for any
	 *  failure. */
	void give_up(int err, const std::string &why) noexcept
	{
		if (data_)
			data_->fail(err, why);
	}

private:
	shape contract() const override;
	/** The keep-alive's verdict: rpmemd or the link is gone. */
	void check_usable() const override;
	void do_persist(std::size_t offset, std::size_t length, unsigned lane) override;
	void do_flush(std::size_t offset, std::size_t length, unsigned lane) override;
	void do_drain(unsigned lane) override;
	void do_deep_persist(std::size_t offset, std::size_t length, unsigned lane) override;
	void do_read(void *buf, std::size_t offset, std::size_t length, unsigned lane) override;
	void do_set_attr(const control::pool_attr *attr) override;
	void do_close() override;

	remote_pool(std::unique_ptr<control_session> ctl, std::size_t size, bool has_headers);
	static std::unique_ptr<remote_pool>
	start(bool create, const std::string &target, const std::string &descriptor, void *addr,
	      std::size_t size, unsigned *nlanes, const control::pool_attr *attr,
	      control::pool_attr *attr_out, const pool_options &opts);

	// Declared in this order on purpose: data_ holds a liveness hook that reads ctl_ (see
	// start()), so data_ must be destroyed first.
	std::unique_ptr<control_session> ctl_;
	std::unique_ptr<data_path> data_;
	control::fabric_params fabric_;
	control::persist_method method_ = control::persist_method::gpspm;
	std::size_t size_;
	std::uint64_t remote_size_ = 0;
	bool remote_is_pmem_ = false;
	bool has_headers_;
	std::atomic<bool> closed_{false};
};

} // namespace rpmem::client
