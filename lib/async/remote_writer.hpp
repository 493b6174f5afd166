// SPDX-License-Identifier: BSD-3-Clause
// librpmem's asynchronous replication (RPMEM_REPLICATION=async): one remote pool written through
// the pipeline, so rpmem_persist returns once the range is snapshotted and the replica holds a
// prefix of the persists at every moment.
#pragma once

#include "async/pipeline.hpp"
#include "client/remote_pool.hpp"
#include "control/messages.hpp"

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

namespace rpmem::async
{

/** attr with rpmem's "possibly behind" compat bit set or cleared (pmdk::feat_compat_rpmem_behind):
 *  a replica written asynchronously carries it until its writer closes cleanly. */
control::pool_attr marked_behind(control::pool_attr a, bool behind);
bool is_marked_behind(const control::pool_attr &a);

/**
 * The calls of librpmem on a remote pool written asynchronously. persist and flush check their
 * arguments, snapshot the range and return (persist waits while the lag is over its bounds);
 * drain waits for the lag bound only; read, deep_persist and set_attr wait until the replica
 * holds everything persisted before them; close waits for everything, then clears the
 * replica's "possibly behind" mark. Lanes are virtual: every range joins one global order, so
 * the lane an application uses changes nothing but the argument check. A replica's failure is
 * thrown by every later call (or, with keep_going, only by close).
 */
class remote_writer
{
public:
	struct config {
		bounds lag;              // max_lag_bytes, max_lag_time
		bool keep_going = false; // RPMEM_ASYNC_ON_FAILURE=continue
		unsigned nlanes = 1;     // virtual lanes granted to the application
		bool marked = false;     // the replica's header is marked behind (headers only)
	};
	/** rp: the remote pool, connected with one lane; pool: its local memory; attr: the
	 *  replica's attributes, already marked behind by the caller when it has headers. */
	remote_writer(std::unique_ptr<client::remote_pool> rp, const std::byte *pool,
	              std::size_t size, const control::pool_attr &attr, const config &c);
	~remote_writer();
	remote_writer(const remote_writer &) = delete;
	remote_writer &operator=(const remote_writer &) = delete;

	void persist(std::size_t offset, std::size_t length, unsigned lane, unsigned flags);
	void flush(std::size_t offset, std::size_t length, unsigned lane, unsigned flags);
	void drain(unsigned lane, unsigned flags);
	void deep_persist(std::size_t offset, std::size_t length, unsigned lane);
	void read(void *buf, std::size_t offset, std::size_t length, unsigned lane);
	void set_attr(const control::pool_attr *attr);
	/** Everything persisted reaches the replica, its mark is cleared, the session ends.
	 *  Throws what failed; the session ends anyway and the mark stays. */
	void close();
	progress status() const;
	/** The remote pool underneath (its statistics; it stays valid after close). */
	const client::remote_pool &remote() const { return *rp_; }
	/** Virtual lanes granted to the application. */
	unsigned nlanes() const { return cfg_.nlanes; }

private:
	class one_replica;
	void check(const char *what, std::size_t offset, std::size_t length, unsigned lane,
	           bool header_allowed) const;
	/** Waits for the replica to hold everything, then runs f(remote pool) with the lane. */
	template <class F> void after_barrier(F &&f);
	void log_summary(const char *how);

	std::unique_ptr<client::remote_pool> rp_;
	std::unique_ptr<one_replica> sink_;
	const std::byte *pool_; // the application's memory: range offsets index it
	std::size_t size_;
	control::pool_attr attr_; // as the application set it (the mark added on the wire)
	config cfg_;
	std::unique_ptr<pipeline> pipe_;
	bool lost_said_ = false; // keep_going: the loss was logged
};

} // namespace rpmem::async
