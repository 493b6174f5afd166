// SPDX-License-Identifier: BSD-3-Clause
// The calls an application makes on one remote pool (librpmem's rpmem_persist, rpmem_flush...,
// rpmem::pool's): PMDK's argument contract checked here, once, for every implementation, and
// each call counted for the pool's metrics when the pool is exported. Implemented by
// client::remote_pool (synchronous: durable on the replica when a call returns) and
// async::remote_writer (RPMEM_REPLICATION=async); librpmem's handle holds one, chosen at
// create/open, so no call asks which.
#pragma once

#include "client/stats_export.hpp"
#include "control/messages.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace rpmem::client
{

/** Flag values of the public API (librpmem.h). */
inline constexpr unsigned persist_relaxed = 1U << 0;
inline constexpr unsigned flush_relaxed = 1U << 0;
/** Bytes at the start of a pool that hold its header and are written only through attributes. */
inline constexpr std::size_t header_size = 4096;

class pool_calls
{
public:
	pool_calls() = default;
	pool_calls(const pool_calls &) = delete;
	pool_calls &operator=(const pool_calls &) = delete;
	virtual ~pool_calls();

	/** Durable on the replica when it returns. flags: persist_relaxed. */
	void persist(std::size_t offset, std::size_t length, unsigned lane, unsigned flags);
	/** Posts the write; flags == flush_relaxed defers durability to drain(). Without the
	 *  flag, a flush is a persist. */
	void flush(std::size_t offset, std::size_t length, unsigned lane, unsigned flags);
	/** Everything flushed on `lane` is durable when it returns. flags: 0. */
	void drain(unsigned lane, unsigned flags);
	void deep_persist(std::size_t offset, std::size_t length, unsigned lane);
	void read(void *buf, std::size_t offset, std::size_t length, unsigned lane);
	/** nullptr or all zeros: no attributes (a pool without headers). */
	void set_attr(const control::pool_attr *attr);
	/** Ends the session; the pool is unusable after. Throws what failed (the session ends
	 *  all the same). */
	void close();

	/** Reports this pool to `e` (the process's metrics file) until it closes, named as the
	 *  caller opened it; every call above is counted there. */
	void export_to(stats_exporter &e, const std::string &target, const std::string &descriptor);
	pool_export *exported() const { return export_.get(); }
	/** What the metrics file shows of this pool (target and descriptor left to export_to). */
	virtual pool_report report() const = 0;

protected:
	/** The contract's terms: the pool's size, the lanes an application may name, whether
	 *  the pool has a header (its first header_size bytes are written only as attributes). */
	struct shape {
		std::size_t size = 0;
		unsigned lanes = 0;
		bool headers = false;
	};
	virtual shape contract() const = 0;
	/** Throws when the pool cannot be used any more (its session was lost). */
	virtual void check_usable() const {}
	/** Checks a call's lane and range against contract() (check_usable() first). */
	void check(const char *what, std::size_t offset, std::size_t length, unsigned lane,
	           bool header_allowed) const;

	/** The calls, their arguments checked. */
	virtual void do_persist(std::size_t offset, std::size_t length, unsigned lane) = 0;
	virtual void do_flush(std::size_t offset, std::size_t length, unsigned lane) = 0;
	virtual void do_drain(unsigned lane) = 0;
	virtual void do_deep_persist(std::size_t offset, std::size_t length, unsigned lane) = 0;
	virtual void do_read(void *buf, std::size_t offset, std::size_t length, unsigned lane) = 0;
	virtual void do_set_attr(const control::pool_attr *attr) = 0;
	virtual void do_close() = 0;

	/** Unregisters from the metrics file with the final state; implementations call it from
	 *  their destructors, while what report() reads is still there. */
	void stop_export() noexcept { export_.reset(); }

private:
	std::unique_ptr<pool_export> export_; // null: no metrics file
};

} // namespace rpmem::client
