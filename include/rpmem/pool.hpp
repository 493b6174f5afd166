// SPDX-License-Identifier: BSD-3-Clause
// rpmem::pool — one remote pool, the C++ counterpart of RPMEMpool (librpmem.h).
//
// The application owns the local memory (page aligned, e.g. a pmem mapping); rpmem::pool
// replicates ranges of it to a pool set on a remote node, where rpmemd was started over SSH.
// Offsets are relative to the start of that memory. When the pool was created with
// attributes, its first 4 KiB (pool::header_size) hold the remote pool header: write them only
// through set_attributes().
//
//   std::vector<std::byte> ... // or a pmem mapping, page aligned
//   auto p = rpmem::pool::create("node2", "pool.set", memory, attributes);
//   std::memcpy(memory.data() + 4096, "hello", 6);
//   p.persist(4096, 6);        // durable on node2 when it returns
//
// Every failure throws rpmem::error (errno + a message saying what failed, where, what to do).
// The destructor closes the pool and never throws; call close() to see close errors.
#pragma once

#include "rpmem/error.hpp"
#include "rpmem/export.hpp"
#include "rpmem/pool_attr.hpp"
#include "rpmem/pool_stats.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rpmem
{

namespace client
{
class remote_pool;
}

/**
 * How to reach rpmemd. Every field left empty/zero falls back to the environment PMDK's
 * librpmem reads (RPMEM_CMD, RPMEM_SSH, RPMEM_SSH_CONFIG, RPMEM_SSH_KNOWN_HOSTS,
 * RPMEM_SSH_IDENTITY, RPMEM_PROVIDER, RPMEM_TIMEOUT, ...).
 */
struct connect_options {
	std::string command;                     // remote command line; empty: next RPMEM_CMD entry
	std::string ssh_config;                  // OpenSSH config file (ssh -F)
	std::string known_hosts;                 // known_hosts file (strict host key checking)
	std::vector<std::string> identity_files; // private keys to try, in order
	std::string ssh_program;                 // run this ssh-compatible program (RPMEM_SSH)
	std::string provider;                    // "tcp", "verbs", "sockets" (RPMEM_PROVIDER)
	std::chrono::milliseconds timeout{0};    // data-path silence bound (RPMEM_TIMEOUT)
};

/** Flags of persist(): relaxed (PMDK: 8-byte aligned stores may tear on the replica) is
 *  accepted and changes nothing: a relaxed persist is made exactly as any other. */
enum class persist_flags : unsigned { none = 0, relaxed = 1 };

/** Flags of remove(). */
enum class remove_flags : int { none = 0, force = 0x1, pool_set = 0x2 };
inline remove_flags operator|(remove_flags a, remove_flags b)
{
	return static_cast<remove_flags>(static_cast<int>(a) | static_cast<int>(b));
}

class RPMEM_API pool
{
public:
	/** Bytes at the start of a pool with attributes that hold the remote header. */
	static constexpr std::size_t header_size = 4096;

	/**
	 * Creates the pool set `poolset` (a name under rpmemd's --poolset-dir) on `target`
	 * ([user@]host[:port]) for the local memory `memory` (page aligned, a multiple of the
	 * page size). attr == nullopt: a pool without a header (the remote pool set must say
	 * OPTION NOHDRS). lanes: how many lanes to ask for (at least 1); lanes() says how many
	 * were granted. Throws rpmem::error.
	 */
	static pool create(const std::string &target, const std::string &poolset,
	                   std::span<std::byte> memory, const std::optional<pool_attr> &attr,
	                   unsigned lanes = 1, const connect_options &opts = {});
	static pool create(const std::string &target, const std::string &poolset, void *addr,
	                   std::size_t size, const std::optional<pool_attr> &attr,
	                   unsigned lanes = 1, const connect_options &opts = {});
	/** Opens an existing pool set; attributes() returns what its header holds. */
	static pool open(const std::string &target, const std::string &poolset,
	                 std::span<std::byte> memory, unsigned lanes = 1,
	                 const connect_options &opts = {});
	static pool open(const std::string &target, const std::string &poolset, void *addr,
	                 std::size_t size, unsigned lanes = 1, const connect_options &opts = {});
	/**
	 * Metrics for every pool of the process opened from now on (rpmem::pool and
	 * rpmem::replicated_pool), as RPMEM_STATS_FILE does for librpmem: written to `path`
	 * atomically every `interval` and when a pool closes; Prometheus text format (the
	 * textfile collector's *.prom), JSON if path ends in ".json". Schema: librpmem(7),
	 * METRICS. One file per process: throws rpmem::error EBUSY if the process reports to
	 * another already (RPMEM_STATS_FILE included), EINVAL for an interval under 100 ms.
	 */
	static void export_stats(const std::string &path,
	                         std::chrono::milliseconds interval = std::chrono::seconds(10));
	/** Removes a pool set on target (rpmem_remove). */
	static void remove(const std::string &target, const std::string &poolset,
	                   remove_flags flags = remove_flags::none,
	                   const connect_options &opts = {});

	pool(pool &&) noexcept;
	pool &operator=(pool &&) noexcept;
	pool(const pool &) = delete;
	pool &operator=(const pool &) = delete;
	/** Closes the pool if close() was not called; never throws. */
	~pool();

	/** [offset, offset+length) is durable on the remote pool when it returns. */
	void persist(std::size_t offset, std::size_t length, unsigned lane = 0,
	             persist_flags flags = persist_flags::none);
	/** The same for a range inside memory(). */
	void persist(std::span<const std::byte> range, unsigned lane = 0,
	             persist_flags flags = persist_flags::none);
	/** Posts the write of the range and returns; drain(lane) makes every range flushed on
	 * the lane durable with one round trip. */
	void flush(std::size_t offset, std::size_t length, unsigned lane = 0);
	void flush(std::span<const std::byte> range, unsigned lane = 0);
	void drain(unsigned lane = 0);
	/** Persist that also flushes the replica's caches where they are not persistent. */
	void deep_persist(std::size_t offset, std::size_t length, unsigned lane = 0);
	/** Reads [offset, offset+buf.size()) of the remote pool into buf, which may lie anywhere.
	 * Where the provider needs registered buffers (verbs), a buf outside memory() is read
	 * through pages registered for the call (up to 4 MiB at a time), then copied. */
	void read(std::span<std::byte> buf, std::size_t offset, unsigned lane = 0);

	/** Rewrites the remote header's attributes (rpmem_set_attr). */
	void set_attributes(const std::optional<pool_attr> &attr);
	/** The attributes the remote header held when the pool was opened or created. */
	const std::optional<pool_attr> &attributes() const;

	/** Closes the session; the pool is unusable afterwards. Idempotent. */
	void close();

	unsigned lanes() const;
	/** Counters of one lane, or of all lanes with lane == lanes(). Safe to call while other
	 * threads use the pool (values are then approximate). */
	pool_stats stats(unsigned lane) const;
	pool_stats stats() const { return stats(lanes()); }
	std::span<std::byte> memory() const { return memory_; }
	/** The host the pool lives on, as SSH resolved it. */
	const std::string &host() const;
	/** The remote persistence method: "gpspm" (message), "apm" (RDMA read) or "commit"
	 * (commit-complete writes). */
	const char *method() const;

private:
	pool(std::unique_ptr<client::remote_pool> rp, std::span<std::byte> memory,
	     std::optional<pool_attr> attr);
	std::size_t offset_of(std::span<const std::byte> range, const char *what) const;

	std::unique_ptr<client::remote_pool> rp_;
	std::span<std::byte> memory_;
	std::optional<pool_attr> attr_;
};

inline pool pool::create(const std::string &target, const std::string &poolset, void *addr,
                         std::size_t size, const std::optional<pool_attr> &attr, unsigned lanes,
                         const connect_options &opts)
{
	return create(target, poolset, std::span<std::byte>(static_cast<std::byte *>(addr), size),
	              attr, lanes, opts);
}

inline pool pool::open(const std::string &target, const std::string &poolset, void *addr,
                       std::size_t size, unsigned lanes, const connect_options &opts)
{
	return open(target, poolset, std::span<std::byte>(static_cast<std::byte *>(addr), size),
	            lanes, opts);
}

inline void pool::persist(std::span<const std::byte> range, unsigned lane, persist_flags flags)
{
	persist(offset_of(range, "persist"), range.size(), lane, flags);
}

inline void pool::flush(std::span<const std::byte> range, unsigned lane)
{
	flush(offset_of(range, "flush"), range.size(), lane);
}

} // namespace rpmem
