// SPDX-License-Identifier: BSD-3-Clause
// rpmem::replicated_pool: the master's local parts + local replicas (libpmem) + remote replicas
// (client::remote_pool each), with parallel fan-out (split-phase posts, no threads), an
// asynchronous mode and resync. This file: the handle, the data path calls, status, close;
// create/open are in replica_set.cpp, the rest is named in replicated_pool_impl.hpp.
#include "replication/replicated_pool_impl.hpp"

namespace rpmem
{

using namespace replication;

// ---------------------------------------------------------------------------------------------
// the handle

replicated_pool::replicated_pool(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
replicated_pool::replicated_pool(replicated_pool &&) noexcept = default;
replicated_pool &replicated_pool::operator=(replicated_pool &&o) noexcept
{
	if (this != &o) {
		if (impl_) {
			try {
				close();
			} catch (const std::exception &) {
			}
		}
		impl_ = std::move(o.impl_);
	}
	return *this;
}

replicated_pool::~replicated_pool()
{
	if (!impl_)
		return;
	try {
		close();
	} catch (const std::exception &) {
		// A destructor reports nothing; close() does.
	}
}

// ---------------------------------------------------------------------------------------------
// data path

void replicated_pool::impl::check_range(const char *what, std::size_t off, std::size_t len) const
{
	const std::size_t size = master->size();
	if (off < data_offset() || off > size || len > size - off)
		throw rpmem::error(
		    EINVAL, fmt::format("replicated_pool::{}: range [{}, +{}) is outside the "
		                        "pool's data [{}, {}): the first {} bytes hold the "
		                        "pool header",
		                        what, off, len, data_offset(), size, data_offset()));
}

std::byte *replicated_pool::addr() const
{
	return open_pool(impl_.get(), "addr").master->base();
}

std::size_t replicated_pool::size() const
{
	return open_pool(impl_.get(), "size").master->size();
}

std::span<std::byte> replicated_pool::data() const
{
	auto &d = open_pool(impl_.get(), "data");
	return {d.master->base() + data_offset(), d.master->size() - data_offset()};
}

void replicated_pool::persist(std::span<const std::byte> range)
{
	auto base = open_pool(impl_.get(), "persist").master->base();
	persist(static_cast<std::size_t>(range.data() - base), range.size());
}

void replicated_pool::flush(std::span<const std::byte> range)
{
	auto base = open_pool(impl_.get(), "flush").master->base();
	flush(static_cast<std::size_t>(range.data() - base), range.size());
}

void replicated_pool::persist(std::size_t offset, std::size_t length)
{
	auto &d = open_pool(impl_.get(), "persist");
	d.check_range("persist", offset, length);
	if (length == 0)
		return;
	d.master->persist(offset, length);
	for (auto &l : d.locals)
		l.map->copy_persist(d.master->base(), offset, length);
	d.replication->persist({offset, length});
	d.note_durable();
}

void replicated_pool::flush(std::size_t offset, std::size_t length)
{
	auto &d = open_pool(impl_.get(), "flush");
	d.check_range("flush", offset, length);
	if (length == 0)
		return;
	d.master->flush(offset, length);
	for (auto &l : d.locals)
		l.map->copy_flush(d.master->base(), offset, length);
	d.replication->flush({offset, length});
}

void replicated_pool::drain()
{
	auto &d = open_pool(impl_.get(), "drain");
	d.master->drain();
	for (auto &l : d.locals)
		l.map->drain();
	d.replication->drain();
	d.note_durable();
}

void replicated_pool::barrier()
{
	auto &d = open_pool(impl_.get(), "barrier");
	d.replication->barrier();
	d.note_durable();
}

replicated_pool::lag_info replicated_pool::lag() const
{
	return live(impl_.get(), "lag").replication->lag();
}

// ---------------------------------------------------------------------------------------------
// status, resync, close

std::vector<replicated_pool::replica_status> replicated_pool::replicas() const
{
	auto &d = live(impl_.get(), "replicas");
	std::vector<replica_status> out(d.ps.replicas.size());
	out[0] = {0, false, d.ps.replicas[0].parts[0].path, true, {}};
	std::lock_guard g(d.state_mu);
	for (const auto &l : d.locals)
		out[l.index] = {l.index, false, d.ps.replicas[l.index].parts[0].path, true, {}};
	for (const auto &r : d.remotes) {
		out[r.index] = {r.index, true, d.where(r), !r.lost, r.error};
		out[r.index].state = !r.lost ? "connected" : r.catching_up ? "catching_up" : "lost";
		out[r.index].bytes_to_go = r.lost ? r.bytes_to_go() : 0;
	}
	return out;
}

void replicated_pool::impl::start_export()
{
	auto *e = client::stats_exporter::instance();
	if (!e)
		return;
	const bool async = opts.replication == mode::asynchronous;
	for (std::size_t k = 0; k < remotes.size(); ++k) {
		// The last connection facts seen: a send or a resync may hold remote_mu through a
		// network timeout, and the report must not wait for it.
		struct seen {
			std::string provider, method;
			unsigned lanes = 0;
			pool_stats stats;
		};
		exports.push_back(std::make_unique<client::pool_export>(
		    *e, [this, k, async, last = seen{}]() mutable {
			    client::pool_report r;
			    const auto &rr = remotes[k];
			    r.target = rr.target;
			    r.descriptor = rr.descriptor;
			    r.replica = rr.index;
			    r.mode = async ? "async" : "sync";
			    if (async) { // the pool's bounds, whatever the replica's state
				    r.lag_bound_bytes = opts.max_lag_bytes;
				    r.lag_bound_seconds =
				        std::chrono::duration<double>(opts.max_lag_time).count();
			    }
			    bool lost = false;
			    {
				    std::lock_guard g(state_mu);
				    lost = rr.lost;
			    }
			    {
				    // resync replaces rp under remote_mu held exclusively.
				    std::shared_lock g(remote_mu, std::try_to_lock);
				    if (g.owns_lock() && rr.rp)
					    last = {rr.rp->fabric().provider,
					            control::to_string(rr.rp->method()),
					            rr.rp->nlanes(), rr.rp->stats(rr.rp->nlanes())};
			    }
			    r.provider = last.provider;
			    r.method = last.method;
			    r.lanes = last.lanes;
			    r.stats = last.stats;
			    if (lost) {
				    std::lock_guard g(state_mu);
				    r.state = rr.catching_up ? "catching_up" : "lost";
				    r.bytes_to_go = rr.bytes_to_go();
			    } else if (async) {
				    // Every replica in sync advances with the same rounds: the
				    // pool's lag.
				    const auto l = replication->lag();
				    r.lag_bytes = l.bytes;
				    r.lag_seconds = std::chrono::duration<double>(l.oldest).count();
			    }
			    return r;
		    }));
	}
}

void replicated_pool::impl::close_all()
{
	closed = true;
	std::exception_ptr first;
	for (auto &r : remotes) {
		if (!r.rp)
			continue;
		try {
			if (!r.lost)
				r.rp->close();
		} catch (...) {
			if (!first)
				first = std::current_exception();
		}
		r.rp.reset();
	}
	for (auto &l : locals)
		l.map.reset(); // their status stays for replicas()
	master.reset();
	if (first)
		std::rethrow_exception(first);
}

void replicated_pool::close()
{
	auto &d = live(impl_.get(), "close");
	if (d.closed)
		return;
	d.stop_healer(); // a catch-up under way stops at its next round: the replica stays marked
	std::exception_ptr finish_err;
	try {
		d.replication->finish();
	} catch (...) {
		finish_err = std::current_exception();
	}
	d.finish_export(); // the final reports, while the replicas' counters are there
	d.close_all();
	if (finish_err)
		std::rethrow_exception(finish_err);
}

} // namespace rpmem
