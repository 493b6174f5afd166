// SPDX-License-Identifier: BSD-3-Clause
// librpmem's asynchronous replication (see remote_writer.hpp).
#include "async/remote_writer.hpp"

#include "async/round_plan.hpp"
#include "client/log.hpp"
#include "pmdk/pool_header.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>

namespace rpmem::async
{

namespace
{

/** Ranges sent to the replica at most before one drain. */
constexpr std::size_t ranges_per_drain = 1024;

double ms(clock_type::duration d)
{
	return std::chrono::duration<double, std::milli>(d).count();
}

} // namespace

/** Sends the pipeline's batches to the one replica on lane 0, in rounds of relaxed flushes
 *  and a drain (a round never lets a later range overtake an earlier one: round_plan.hpp).
 *  Once a batch failed, later batches are dropped (the failure is kept by the pipeline). */
class remote_writer::one_replica final : public sink
{
public:
	explicit one_replica(client::remote_pool &rp) : rp_(rp) {}

	void send(const std::vector<piece> &batch, const staging_ring &ring) override
	{
		std::lock_guard g(mu);
		if (failed_)
			return;
		try {
			if (!registered_) {
				rp_.register_source(ring.base(), ring.capacity());
				registered_ = true;
			}
			const client::data_path *lanes[] = {&rp_.lanes()};
			for (std::size_t from = 0, to = 0; from < batch.size(); from = to) {
				to = round_end(lanes, batch.size(), from, ranges_per_drain,
				               [&](std::size_t i) { return batch[i].r.length; });
				for (std::size_t k = from; k < to; ++k)
					rp_.flush_from(batch[k].src, batch[k].r.offset,
					               batch[k].r.length, 0);
				// rpmemd applies this round while the next one is built.
				rp_.drain_ahead(0);
			}
			rp_.complete(0);
		} catch (...) {
			failed_ = true;
			throw;
		}
	}

	std::mutex mu; // the remote pool's lane 0: the replicator or a call after a barrier

private:
	client::remote_pool &rp_;
	bool registered_ = false;
	bool failed_ = false;
};

remote_writer::remote_writer(std::unique_ptr<client::remote_pool> rp, const std::byte *pool,
                             std::size_t size, const control::pool_attr &attr, const config &c)
    : rp_(std::move(rp)), sink_(std::make_unique<one_replica>(*rp_)), pool_(pool), size_(size),
      attr_(attr), cfg_(c)
{
	cfg_.lag.fail_on_error = !c.keep_going;
	pipe_ = std::make_unique<pipeline>(cfg_.lag, *sink_);
}

remote_writer::~remote_writer()
{
	stop_export(); // while what its report reads is still here
	// Stops the replicator before the sink and the remote pool it uses go.
	pipe_.reset();
}

client::pool_calls::shape remote_writer::contract() const
{
	return {size_, cfg_.nlanes, rp_->has_headers()};
}

client::pool_report remote_writer::report() const
{
	auto r = rp_->report();
	r.mode = "async";
	r.lanes = cfg_.nlanes;
	const auto p = pipe_->status();
	r.lag_bytes = p.lag_bytes;
	r.lag_seconds = std::chrono::duration<double>(p.oldest).count();
	r.throttled = p.lag_waits + p.room_waits;
	r.lag_bound_bytes = cfg_.lag.max_lag_bytes;
	r.lag_bound_seconds = std::chrono::duration<double>(cfg_.lag.max_lag_time).count();
	// Under keep_going the calls go on without the replica: it is lost, not failed (a call
	// that fails marks the pool failed itself: pool_export).
	if (pipe_->failed())
		r.state = cfg_.keep_going ? "lost" : "failed";
	return r;
}

void remote_writer::note_loss()
{
	if (!cfg_.keep_going || !pipe_->failed())
		return;
	// Once, by the first call that sees it; one that sees it meanwhile waits until the log
	// and the metrics file say so.
	std::call_once(loss_noted_, [this] {
		log_summary("the replica was lost; going on without it "
		            "(RPMEM_ASYNC_ON_FAILURE=continue)");
		if (auto *e = exported())
			e->state_changed();
	});
}

void remote_writer::do_persist(std::size_t offset, std::size_t length, unsigned)
{
	pipe_->persist({offset, length}, pool_ + offset);
	note_loss();
}

void remote_writer::do_flush(std::size_t offset, std::size_t length, unsigned)
{
	pipe_->snapshot({offset, length}, pool_ + offset); // drain() waits for the lag bound
	note_loss();
}

void remote_writer::do_drain(unsigned)
{
	pipe_->wait_for_lag();
	note_loss();
}

template <class F> void remote_writer::after_barrier(F &&f)
{
	pipe_->barrier();
	if (auto e = pipe_->error())
		std::rethrow_exception(e); // keep_going: the replica is gone all the same
	std::lock_guard g(sink_->mu);
	f(*rp_);
}

void remote_writer::do_deep_persist(std::size_t offset, std::size_t length, unsigned)
{
	// In order: everything persisted before, then this range, deeply.
	after_barrier([&](client::remote_pool &rp) { rp.deep_persist(offset, length, 0); });
}

void remote_writer::do_read(void *buf, std::size_t offset, std::size_t length, unsigned)
{
	after_barrier([&](client::remote_pool &rp) { rp.read(buf, offset, length, 0); });
}

void remote_writer::do_set_attr(const control::pool_attr *attr)
{
	after_barrier([&](client::remote_pool &rp) {
		if (!attr || attr->is_zero()) {
			rp.set_attr(attr);
			attr_ = control::pool_attr{};
			return;
		}
		const auto wire = pmdk::with_behind_mark(*attr, cfg_.marked);
		rp.set_attr(&wire);
		attr_ = *attr;
	});
}

void remote_writer::do_close()
{
	try {
		pipe_->finish();
		if (auto e = pipe_->error())
			std::rethrow_exception(e);
		if (cfg_.marked) {
			std::lock_guard g(sink_->mu);
			const auto clean = pmdk::with_behind_mark(attr_, false);
			rp_->set_attr(&clean);
		}
	} catch (...) {
		log_summary("closing with the replica behind (its header stays marked)");
		try {
			rp_->close();
		} catch (const std::exception &) {
			// The first failure is the one to report.
		}
		throw;
	}
	rp_->close();
	log_summary("closed, the replica in sync");
}

progress remote_writer::status() const
{
	return pipe_->status();
}

void remote_writer::log_summary(const char *how)
{
	const auto p = pipe_->status();
	const int level = pipe_->error() ? 1 : 3;
	client::log(level,
	            "asynchronous replication to {}: {}; {} of {} persists replicated in {} "
	            "batches, lag now {} bytes, at most {} bytes, longest wait for the lag "
	            "bound {:.1f} ms; {} persists waited for room (the replica took them more "
	            "slowly than they came), the longest {:.1f} ms",
	            rp_->host(), how, p.replicated, p.enqueued, p.batches, p.lag_bytes,
	            p.max_lag_bytes, ms(p.max_wait), p.room_waits, ms(p.max_room_wait));
}

} // namespace rpmem::async
