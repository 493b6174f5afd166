// SPDX-License-Identifier: BSD-3-Clause
// One remote pool: the C++ core behind librpmem's C functions and rpmem::pool. Owns the control
// session (rpmemd over SSH) and the data path (lanes over libfabric). Errors: rpmem::error.
#pragma once

#include "client/data_path.hpp"
#include "client/env.hpp"
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

class control_session;
class data_path;
class stats_exporter;
class pool_export;

/** Flag values of the public API (librpmem.h). */
inline constexpr unsigned persist_relaxed = 1U << 0;
inline constexpr unsigned flush_relaxed = 1U << 0;
inline constexpr unsigned remove_force = 0x1;
inline constexpr unsigned remove_pool_set = 0x2;
/** Bytes at the start of a pool that hold its header and are written only through attributes. */
inline constexpr std::size_t header_size = 4096;

/** How to reach the daemon. Defaults are PMDK's: the environment (RPMEM_CMD, RPMEM_SSH...). */
struct pool_options {
	std::string command;             // remote command; empty: the next RPMEM_CMD entry
	std::optional<ssh::options> ssh; // nullopt: ssh::options::from_environment()
	std::optional<settings> tuning;  // nullopt: process_settings()
};

class remote_pool
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

	~remote_pool(); // closes without throwing if close() was not called
	remote_pool(const remote_pool &) = delete;
	remote_pool &operator=(const remote_pool &) = delete;

	void set_attr(const control::pool_attr *attr);
	/** Shuts the lanes down, tells the daemon, waits for it. The handle is unusable after. */
	void close();

	/** Durable on the replica when it returns. flags: persist_relaxed. */
	void persist(std::size_t offset, std::size_t length, unsigned lane, unsigned flags);
	/** Posts the write; flags == flush_relaxed defers durability to drain(). Without the
	 * flag, a flush is a persist. */
	void flush(std::size_t offset, std::size_t length, unsigned lane, unsigned flags);
	/** Everything flushed on `lane` is durable when it returns: one round trip. */
	void drain(unsigned lane, unsigned flags);
	void deep_persist(std::size_t offset, std::size_t length, unsigned lane);

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
	void read(void *buf, std::size_t offset, std::size_t length, unsigned lane);
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

	/** Reports this pool to `e` (the process's metrics file) until it closes, named as the
	 *  caller opened it. The caller counts failed and durable calls on exported(). */
	void export_to(stats_exporter &e, const std::string &target, const std::string &descriptor);
	pool_export *exported() const { return export_.get(); }

private:
	remote_pool(std::unique_ptr<control_session> ctl, std::size_t size, bool has_headers);
	static std::unique_ptr<remote_pool>
	start(bool create, const std::string &target, const std::string &descriptor, void *addr,
	      std::size_t size, unsigned *nlanes, const control::pool_attr *attr,
	      control::pool_attr *attr_out, const pool_options &opts);
	void check_range(const char *what, std::size_t offset, std::size_t length, unsigned lane,
	                 bool header_allowed) const;

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
	// Last: destroyed first, while what its report reads is still there.
	std::unique_ptr<pool_export> export_;
};

} // namespace rpmem::client
