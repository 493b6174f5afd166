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

/**
 * The calls of librpmem on a remote pool written asynchronously. persist and flush check their
 * arguments, snapshot the range and return (persist waits while the lag is over its bounds);
 * drain waits for the lag bound only; read, deep_persist and set_attr wait until the replica
 * holds everything persisted before them; close waits for everything, then clears the
 * replica's "possibly behind" mark. Lanes are virtual: every range joins one global order, so
 * the lane an application uses changes nothing but the argument check. A replica's failure is
 * thrown by every later call (or, with keep_going, only by close).
 */
class remote_writer final : public client::pool_calls
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
	~remote_writer() override;

	// close(): everything persisted reaches the replica, its mark is cleared, the session
	// ends; it throws what failed, and the session ends anyway with the mark kept.
	progress status() const;
	/** Virtual lanes granted to the application. */
	unsigned nlanes() const { return cfg_.nlanes; }

	/** The remote pool's report, with the mode, the virtual lanes and the lag. */
	client::pool_report report() const override;

private:
	class one_replica;
	shape contract() const override;
	void do_persist(std::size_t offset, std::size_t length, unsigned lane) override;
	void do_flush(std::size_t offset, std::size_t length, unsigned lane) override;
	void do_drain(unsigned lane) override;
	void do_deep_persist(std::size_t offset, std::size_t length, unsigned lane) override;
	void do_read(void *buf, std::size_t offset, std::size_t length, unsigned lane) override;
	void do_set_attr(const control::pool_attr *attr) override;
	void do_close() override;
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
	/** keep_going: the first call that sees the replica lost logs it and rewrites the
	 *  metrics file (its state "lost") before it returns. */
	void note_loss();
	std::once_flag loss_noted_;
};

} // namespace rpmem::async
