// SPDX-License-Identifier: BSD-3-Clause
// librpmem's asynchronous replication (see remote_writer.hpp): the calls and the replicator's
// sink; the outage side is remote_writer_heal.cpp.
#include "async/remote_writer.hpp"
#include "async/remote_writer_sink.hpp"

#include "async/round_plan.hpp"

#include "client/exit_guard.hpp"
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

double ms(clock_type::duration d)
{
	return std::chrono::duration<double, std::milli>(d).count();
}

/** A failure that is about the call, not the replica: the session is fine. */
bool about_the_call(const rpmem::error &e)
{
	return e.errnum() == EINVAL;
}

/** Ranges sent to the replica at most before one drain. */
constexpr std::size_t ranges_per_drain = 1024;

} // namespace

void remote_writer::one_replica::send(const std::vector<piece> &batch, const staging_ring &ring)
{
	std::lock_guard g(mu);
	auto record = [&] {
		for (const auto &p : batch)
			w_.dirty_.mark(p.r.offset, p.r.length);
	};
	if (w_.state_.load() != state::in_sync) {
		record();
		return;
	}
	const auto epoch = w_.epoch_.load();
	auto &rp = *w_.rp_;
	try {
		if (registered_ != epoch) { // a new session registers the ring anew
			rp.register_source(ring.base(), ring.capacity());
			registered_ = epoch;
		}
		const client::data_path *lanes[] = {&rp.lanes()};
		for (std::size_t from = 0, to = 0; from < batch.size(); from = to) {
			to = round_end(lanes, batch.size(), from, ranges_per_drain,
			               [&](std::size_t i) { return batch[i].r.length; });
			for (std::size_t k = from; k < to; ++k)
				rp.flush_from(batch[k].src, batch[k].r.offset, batch[k].r.length,
				              0);
			// rpmemd applies this round while the next one is built.
			rp.drain_ahead(0);
		}
		rp.complete(0);
	} catch (const rpmem::error &e) {
		// Some rounds of it may have landed: all of it moves again, from the master.
		record();
		w_.connection_failed(epoch, e);
	}
}

bool remote_writer::one_replica::congested(clock_type::duration sending)
{
	std::lock_guard r(w_.rp_mu_); // rp_ is not swapped meanwhile
	// Away already (the batch is only recorded), or dropped already: in sync and slow
	// only until the replicator sees the session it gave up fail.
	if (w_.state_.load() != state::in_sync || w_.slow_.load())
		return false;
	w_.slow_.store(true);
	w_.rp_->give_up(ETIMEDOUT, too_slow(sending, w_.cfg_.lag.congestion));
	return true;
}

remote_writer::remote_writer(std::unique_ptr<client::remote_pool> rp, const std::byte *pool,
                             std::size_t size, const control::pool_attr &attr, const config &c)
    : rp_(std::move(rp)), sink_(std::make_unique<one_replica>(*this)), pool_(pool), size_(size),
      headers_(rp_->has_headers()), attr_(attr), cfg_(c),
      dirty_(size, client::dirty_map::block_for(size))
{
	// The sink records what it cannot send, and the policy decides once the outage lasted:
	// no batch failure reaches the calls through the pipeline.
	cfg_.lag.fail_on_error = true;
	pipe_ = std::make_unique<pipeline>(cfg_.lag, *sink_);
	client::exit_guard::install();
	healer_ = std::thread([this] { heal_loop(); });
}

remote_writer::~remote_writer()
{
	{
		std::lock_guard l(mu_);
		stop_ = true;
	}
	cv_.notify_all();
	if (healer_.joinable())
		healer_.join();
	stop_export(); // while what its report reads is still here
	// Stops the replicator before the sink and the remote pool it uses go.
	pipe_.reset();
}

client::pool_calls::shape remote_writer::contract() const
{
	return {size_, cfg_.nlanes, headers_};
}

client::pool_report remote_writer::report() const
{
	client::pool_report r;
	{
		std::lock_guard g(rp_mu_);
		r = rp_->report();
		r.stats += earlier_; // counters: the pool's, not one session's
	}
	r.mode = "async";
	r.lanes = cfg_.nlanes;
	const auto p = pipe_->status();
	r.lag_bytes = p.lag_bytes;
	r.lag_seconds = std::chrono::duration<double>(p.oldest).count();
	r.throttled = p.lag_waits + p.room_waits;
	r.lag_bound_bytes = cfg_.lag.max_lag_bytes;
	r.lag_bound_seconds = std::chrono::duration<double>(cfg_.lag.max_lag_time).count();
	const auto st = current();
	r.state = st == state::in_sync ? "connected" : client::name(st);
	if (pipe_->failed())
		r.state = "failed";
	r.bytes_to_go = bytes_to_go();
	return r;
}

void remote_writer::throw_if_failed() const
{
	if (state_.load() == state::failed) {
		std::lock_guard l(mu_);
		throw *failure_;
	}
	if (pipe_->failed())
		std::rethrow_exception(pipe_->error());
}

bool remote_writer::recorded_while_away(std::size_t offset, std::size_t length)
{
	if (state_.load() == state::in_sync)
		return false;
	client::call_gate::pass in(gate_);
	if (state_.load() == state::in_sync)
		return false; // back: the pipeline again, after everything the last round moved
	dirty_.mark(offset, length);
	return true;
}

void remote_writer::do_persist(std::size_t offset, std::size_t length, unsigned)
{
	throw_if_failed();
	if (!recorded_while_away(offset, length))
		pipe_->persist({offset, length}, pool_ + offset);
}

void remote_writer::do_flush(std::size_t offset, std::size_t length, unsigned)
{
	throw_if_failed();
	if (!recorded_while_away(offset, length))
		pipe_->snapshot({offset, length},
		                pool_ + offset); // drain() waits for the lag bound
}

void remote_writer::do_drain(unsigned)
{
	throw_if_failed();
	pipe_->wait_for_lag();
}

template <class F, class A> bool remote_writer::after_barrier(F &&f, A &&away)
{
	throw_if_failed();
	pipe_->barrier();
	std::lock_guard g(sink_->mu);
	if (state_.load() == state::in_sync) {
		const auto epoch = epoch_.load();
		try {
			f(*rp_);
			return true;
		} catch (const rpmem::error &e) {
			if (about_the_call(e))
				throw;
			connection_failed(epoch, e);
		}
	}
	// Under the replicator's lock, as the replicator records: the catch-up's last round
	// takes what is recorded before it, with this lock, and then the replica is in sync.
	away();
	return false;
}

void remote_writer::do_deep_persist(std::size_t offset, std::size_t length, unsigned)
{
	// In order: everything persisted before, then this range, deeply. A replica away gets
	// it with its catch-up.
	after_barrier([&](client::remote_pool &rp) { rp.deep_persist(offset, length, 0); },
	              [&] { dirty_.mark(offset, length); });
	throw_if_failed();
}

void remote_writer::do_read(void *buf, std::size_t offset, std::size_t length, unsigned)
{
	if (after_barrier([&](client::remote_pool &rp) { rp.read(buf, offset, length, 0); }, [] {}))
		return;
	throw_if_failed();
	std::lock_guard l(mu_);
	throw rpmem::error(ENODATA,
	                   fmt::format("{}:{}: the replica is {} ({}): it cannot be read until it "
	                               "has caught up",
	                               cfg_.place.target, cfg_.place.descriptor,
	                               client::name(state_.load()), cause_));
}

void remote_writer::do_set_attr(const control::pool_attr *attr)
{
	const auto a = attr ? *attr : control::pool_attr{};
	// Kept with the replicator held, either way: a replica away gets the attributes when
	// its catch-up's last round (which holds it) sets them.
	auto keep = [&] {
		std::lock_guard l(mu_);
		attr_ = a;
	};
	after_barrier(
	    [&](client::remote_pool &rp) {
		    const auto wire = pmdk::with_behind_mark(a, cfg_.marked);
		    rp.set_attr(a.is_zero() ? nullptr : &wire);
		    keep();
	    },
	    keep);
}

void remote_writer::do_close()
{
	closing_.store(true); // a held catch-up round now holds no call: it is waited for
	try {
		{
			// A replica being reconnected or caught up is waited for, as the
			// synchronous pool's close does (client::wait_for_progress): a clean close
			// then leaves it current and unmarked. One lost stays lost. The healer ends
			// before the pipeline does: its last round needs the pipeline's thread.
			std::unique_lock l(mu_);
			client::wait_for_progress(l, cv_, cfg_.reconnect_timeout, caught_up_,
			                          [&] { return state_.load(); });
			stop_ = true;
		}
		cv_.notify_all();
		healer_.join();
		pipe_->finish();
		if (auto e = pipe_->error())
			std::rethrow_exception(e);
		const auto st = state_.load();
		if (st != state::in_sync) {
			std::lock_guard l(mu_);
			if (st == state::failed)
				throw *failure_;
			throw rpmem::error(
			    EIO,
			    fmt::format("{}:{}: closed with the replica {} ({} bytes behind; {})",
			                cfg_.place.target, cfg_.place.descriptor, client::name(st),
			                bytes_to_go(), cause_));
		}
		if (cfg_.marked) {
			std::lock_guard g(sink_->mu);
			const auto clean = pmdk::with_behind_mark(attr_, false);
			rp_->set_attr(&clean);
		}
	} catch (...) {
		log_summary("closing with the replica behind (its header stays marked; `rpmem sync "
		            "POOLSET` brings it back)");
		rp_->abandon();
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
	const int level = pipe_->error() || state_.load() != state::in_sync ? 1 : 3;
	client::log(level,
	            "asynchronous replication to {}: {}; {} of {} persists replicated in {} "
	            "batches, lag now {} bytes, at most {} bytes, longest wait for the lag "
	            "bound {:.1f} ms; {} persists waited for room (the replica took them more "
	            "slowly than they came), the longest {:.1f} ms",
	            cfg_.place.target, how, p.replicated, p.enqueued, p.batches, p.lag_bytes,
	            p.max_lag_bytes, ms(p.max_wait), p.room_waits, ms(p.max_room_wait));
}

} // namespace rpmem::async
