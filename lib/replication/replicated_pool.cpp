// SPDX-License-Identifier: BSD-3-Clause
// rpmem::replicated_pool: the master's local parts + local replicas (libpmem) + remote replicas
// (client::remote_pool each), with parallel fan-out (split-phase posts, no threads), an
// asynchronous mode and resync.
#include "rpmem/replicated_pool.hpp"

#include "client/control_session.hpp"
#include "client/env.hpp"
#include "client/remote_pool.hpp"
#include "poolset/poolset.hpp"
#include "replication/local_map.hpp"
#include "replication/options.hpp"
#include "replication/pool_header.hpp"
#include "replication/round_plan.hpp"
#include "replication/staging_ring.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

namespace rpmem
{

using namespace replication;
using clock_type = std::chrono::steady_clock;

namespace
{

/** Bytes copied per step by resync (one flush + drain per replica per chunk). */
constexpr std::size_t resync_chunk = 4u << 20;
/** Ranges the replicator flushes to a replica at most before it drains them. */
constexpr std::size_t ranges_per_drain = 32;
/** Lanes asked of every remote replica: each thread persists on a lane of its own (while there
 * are no more threads than lanes), so the fan-outs of different threads proceed at once. */
constexpr unsigned lanes_per_replica = 16;

int errnum_of(std::exception_ptr e, std::string *msg)
{
	try {
		std::rethrow_exception(e);
	} catch (const rpmem::error &x) {
		*msg = x.message();
		return x.errnum() ? x.errnum() : EIO;
	} catch (const std::exception &x) {
		*msg = x.what();
		return EIO;
	}
}

struct range {
	std::size_t offset;
	std::size_t length;
};

} // namespace

struct remote_replica {
	std::size_t index = 0;
	std::string target;
	std::string descriptor;
	client::pool_options conn;
	control::pool_attr attr; // what create() wrote / open() found: used to re-create
	std::unique_ptr<client::remote_pool> rp;
	const client::remote_pool *staged_on = nullptr; // rp that has the staging ring registered
	unsigned lanes = 0;                             // granted to rp
	bool lost = false;
	std::string error;
};

struct local_copy {
	std::size_t index = 0;
	std::unique_ptr<local_replica> map;
	bool lost = false;
	std::string error;
};

struct replicated_pool::impl {
	poolset::poolset ps;
	options opts;
	std::unique_ptr<local_replica> master;
	std::vector<local_copy> locals;
	staging_ring staging; // asynchronous mode; outlives the remote pools registered with it
	std::vector<remote_replica> remotes;
	// Remote operations: fan-outs hold it shared and their lane's mutex (a lane has one user
	// at a time); resync, the replicator and close hold it exclusively.
	std::shared_mutex remote_mu;
	unsigned nlanes = 1; // lanes of every connected remote replica (the fewest granted)
	std::unique_ptr<std::mutex[]> lane_mu{new std::mutex[lanes_per_replica]};
	mutable std::mutex state_mu; // lost / error fields, for replicas() and callbacks
	bool closed = false;

	// Asynchronous mode: entries persisted locally, not yet on the replicas.
	struct entry {
		range r;
		clock_type::time_point when;
		std::size_t stage;  // where its snapshot is in `staging`
		std::size_t charge; // ring bytes it holds
	};
	mutable std::mutex q_mu;
	std::condition_variable work_cv; // the replicator has something to do
	std::condition_variable done_cv; // the replicator finished a batch
	std::deque<entry> queue;         // [0, in_flight) are being replicated
	std::size_t in_flight = 0;
	std::size_t lag_bytes = 0;
	std::uint64_t enqueued = 0;   // entries ever queued
	std::uint64_t replicated = 0; // entries ever replicated (a prefix of enqueued)
	std::exception_ptr async_error;
	bool stop = false;
	std::vector<range> flushed; // asynchronous flush() ranges waiting for drain()
	std::thread replicator;

	bool asynchronous() const { return opts.replication == mode::asynchronous; }
	/** The calling thread's number for this pool, fixed while it keeps using the pool: its
	 * lane. Numbered per pool, so a pool's first threads take its first lanes whatever
	 * other pools the process has (lanes beyond the first connections' cost more where
	 * rpmemd runs several workers: docs/performance.md, replicated_pool threads). */
	unsigned thread_slot()
	{
		thread_local struct {
			const impl *pool = nullptr;
			unsigned slot = 0;
		} mine;
		if (mine.pool != this)
			mine = {this, next_slot.fetch_add(1, std::memory_order_relaxed)};
		return mine.slot;
	}
	std::atomic<unsigned> next_slot{0};
	/** nlanes: the fewest lanes a connected remote replica was granted (with remote_mu held
	 * exclusively, or before the pool is shared). */
	void count_lanes()
	{
		nlanes = lanes_per_replica;
		for (const auto &r : remotes)
			if (r.rp)
				nlanes = std::min(nlanes, std::max(r.lanes, 1u));
	}
	void check_range(const char *what, std::size_t off, std::size_t len) const;
	void start_async();
	void stop_async();
	void replicate_loop();
	void enqueue(range r);
	/** A snapshot on its way to the replicas. */
	struct piece {
		range r;
		const std::byte *src;
	};
	void enqueue_chunk(range r, std::unique_lock<std::mutex> &lk);
	void wait_barrier();
	void rethrow_async_error();

	/** Runs op on every remote replica in sync, all at once; applies the failure policy. */
	void remote_all(const char *what, const std::function<void(remote_replica &)> &post,
	                const std::function<void(remote_replica &)> &complete);
	/** Marks a replica lost; on_replica_lost hears of it from notify_lost(). */
	void mark_lost(std::size_t index, const std::string &why, bool remote);
	/** Calls on_replica_lost for every replica lost since the last call. Called with no lock
	 * held, so the callback may call the pool (see on_replica_lost). */
	void notify_lost();
	/** Runs f with remote_mu held exclusively, then notify_lost(), then rethrows what f
	 * threw. */
	template <class F> void with_remotes(F &&f);
	/** Runs f(lane) on the calling thread's lane (remote_mu shared, the lane's mutex held),
	 * then notify_lost(), then rethrows what f threw. */
	template <class F> void with_lane(F &&f);
	bool active(const remote_replica &r) const
	{
		std::lock_guard g(state_mu);
		return !r.lost && r.rp;
	}
	std::vector<replica_status> lost_unreported; // under state_mu
	[[noreturn]] void fail_lost(const char *what, std::size_t index, int err,
	                            const std::string &why) const;
	void check_not_lost(const char *what) const;
	std::string where(const remote_replica &r) const
	{
		return fmt::format("{}:{}", r.target, r.descriptor);
	}
	void close_all();
	/** After the last barrier: every remote replica in sync holds everything. */
	void clear_behind_marks();
};

namespace
{

poolset::poolset load(const std::string &path)
{
	poolset::poolset ps;
	try {
		ps = poolset::parse_file(path);
	} catch (const poolset::parse_error &e) {
		throw rpmem::error(EINVAL, e.what());
	}
	if (ps.opts.single_header || ps.opts.no_headers)
		throw rpmem::error(ENOTSUP,
		                   fmt::format("{}: OPTION {} is not supported by "
		                               "rpmem::replicated_pool: remove the line",
		                               path, ps.opts.no_headers ? "NOHDRS" : "SINGLEHDR"));
	if (ps.replicas.empty() || ps.replicas[0].is_remote())
		throw rpmem::error(EINVAL,
		                   fmt::format("{}: the first replica (the master) must be "
		                               "local: list its parts before any REPLICA line",
		                               path));
	return ps;
}

/** Each remote replica's connection options, RPMEM_CMD entries taken in replica order. */
client::pool_options remote_options(const replicated_pool::options &o, std::size_t index,
                                    const poolset::replica &r)
{
	connect_options c = o.remote_for ? o.remote_for(index, r.target, r.descriptor) : o.remote;
	auto out = to_client(c);
	if (out.command.empty())
		out.command = client::next_command();
	return out;
}

/** attr with the "possibly behind" mark set or cleared (feat_compat_behind). */
control::pool_attr marked_behind(control::pool_attr a, bool behind)
{
	if (behind)
		a.compat_features |= feat_compat_behind;
	else
		a.compat_features &= ~feat_compat_behind;
	return a;
}

/** Starts fn(i) for every i on its own thread (connecting replicas costs an SSH handshake
 * each) and rethrows the first failure once all are done. */
void for_each_parallel(std::size_t n, const std::function<void(std::size_t)> &fn,
                       std::vector<std::exception_ptr> &errors)
{
	errors.assign(n, nullptr);
	std::vector<std::thread> t;
	for (std::size_t i = 0; i < n; ++i)
		t.emplace_back([&, i] {
			try {
				fn(i);
			} catch (...) {
				errors[i] = std::current_exception();
			}
		});
	for (auto &th : t)
		th.join();
}

} // namespace

namespace
{

/** The state of a pool handle; a moved-from handle has none and every call on it throws. */
replicated_pool::impl &live(replicated_pool::impl *p, const char *what)
{
	if (!p)
		throw rpmem::error(EINVAL,
		                   fmt::format("replicated_pool::{}: this replicated_pool "
		                               "was moved from: use the one it was moved to",
		                               what));
	return *p;
}

/** live(), and the pool not closed. */
replicated_pool::impl &open_pool(replicated_pool::impl *p, const char *what)
{
	auto &d = live(p, what);
	if (d.closed)
		throw rpmem::error(EINVAL,
		                   fmt::format("replicated_pool::{}: the pool is closed", what));
	return d;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// create / open

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

replicated_pool replicated_pool::create(const std::string &poolset_path)
{
	return create(poolset_path, options{});
}

replicated_pool replicated_pool::open(const std::string &poolset_path)
{
	return open(poolset_path, options{});
}

replicated_pool replicated_pool::create(const std::string &poolset_path, const options &opts)
{
	auto p = std::make_unique<impl>();
	p->ps = load(poolset_path);
	p->opts = opts;
	auto &ps = p->ps;
	const std::size_t size = ps.pool_size(0);
	const std::size_t nrep = ps.replicas.size();

	// UUIDs: one pool set UUID; each replica's part UUIDs (a remote replica: its part 0's).
	const uuid poolset_uuid = generate_uuid();
	std::vector<std::vector<uuid>> part_uuids(nrep);
	for (std::size_t r = 0; r < nrep; ++r) {
		std::size_t n = ps.replicas[r].is_remote() ? 1 : ps.replicas[r].parts.size();
		for (std::size_t i = 0; i < n; ++i)
			part_uuids[r].push_back(generate_uuid());
	}
	const auto arch = host_arch_flags();
	auto fields = [&](std::size_t r, std::size_t part) {
		header_fields h;
		h.signature = opts.signature;
		h.major = opts.major;
		h.incompat = feat_incompat_cksum_2k;
		h.poolset = poolset_uuid;
		const auto &parts = part_uuids[r];
		h.self = parts[part];
		h.prev_part = parts[(part + parts.size() - 1) % parts.size()];
		h.next_part = parts[(part + 1) % parts.size()];
		h.prev_repl = part_uuids[(r + nrep - 1) % nrep][0];
		h.next_repl = part_uuids[(r + 1) % nrep][0];
		h.crtime = static_cast<std::uint64_t>(time(nullptr));
		h.arch = arch;
		return h;
	};

	// Local replicas: create parts, write headers. On failure remove what was created.
	std::vector<std::string> created;
	try {
		for (std::size_t r = 0; r < nrep; ++r) {
			const auto &rep = ps.replicas[r];
			if (rep.is_remote())
				continue;
			if (r > 0 && ps.pool_size(r) < size)
				throw rpmem::error(
				    EINVAL,
				    fmt::format("{}:{}: replica {} holds {} bytes, less "
				                "than the master's {}: make its parts "
				                "larger",
				                poolset_path, rep.line, r, ps.pool_size(r), size));
			for (const auto &part : rep.parts)
				if (access(part.path.c_str(), F_OK) != 0)
					created.push_back(part.path);
			auto m = local_replica::create(rep, size);
			for (std::size_t i = 0; i < m->parts(); ++i)
				m->write_header(i, fields(r, i));
			if (r == 0)
				p->master = std::move(m);
			else
				p->locals.push_back({r, std::move(m), false, {}});
		}
		for (std::size_t r = 1; r < nrep; ++r) {
			const auto &rep = ps.replicas[r];
			if (!rep.is_remote())
				continue;
			remote_replica rr;
			rr.index = r;
			rr.target = rep.target;
			rr.descriptor = rep.descriptor;
			rr.conn = remote_options(opts, r, rep);
			auto h = fields(r, 0);
			rr.attr.signature = h.signature;
			rr.attr.major = h.major;
			rr.attr.incompat_features = h.incompat;
			rr.attr.poolset_uuid = h.poolset;
			rr.attr.uuid = h.self;
			rr.attr.prev_uuid = h.prev_repl;
			rr.attr.next_uuid = h.next_repl;
			rr.attr.user_flags = h.arch;
			p->remotes.push_back(std::move(rr));
		}
		std::vector<std::exception_ptr> errors;
		for_each_parallel(
		    p->remotes.size(),
		    [&](std::size_t i) {
			    auto &rr = p->remotes[i];
			    rr.lanes = lanes_per_replica;
			    // Written asynchronously, a replica is marked possibly behind
			    // until a clean close.
			    const auto attr = marked_behind(rr.attr, p->asynchronous());
			    rr.rp = client::remote_pool::create(rr.target, rr.descriptor,
			                                        p->master->base(), size, &rr.lanes,
			                                        &attr, rr.conn);
		    },
		    errors);
		for (std::size_t i = 0; i < errors.size(); ++i) {
			if (!errors[i])
				continue;
			std::string msg;
			int err = errnum_of(errors[i], &msg);
			// Replicas created meanwhile are removed: a half-created pool set is none.
			for (auto &rr : p->remotes) {
				if (!rr.rp)
					continue;
				rr.rp.reset();
				try {
					client::remote_pool::remove(rr.target, rr.descriptor, 0,
					                            rr.conn);
				} catch (const std::exception &) {
				}
			}
			throw rpmem::error(err,
			                   fmt::format("{}: cannot create remote replica {} ({}): "
			                               "{}",
			                               poolset_path, p->remotes[i].index,
			                               p->where(p->remotes[i]), msg));
		}
	} catch (...) {
		p->master.reset();
		p->locals.clear();
		for (const auto &f : created)
			unlink(f.c_str());
		throw;
	}
	p->count_lanes();
	if (opts.replication == mode::asynchronous)
		p->start_async();
	return replicated_pool(std::move(p));
}

replicated_pool replicated_pool::open(const std::string &poolset_path, const options &opts)
{
	auto p = std::make_unique<impl>();
	p->ps = load(poolset_path);
	p->opts = opts;
	auto &ps = p->ps;
	const std::size_t size = ps.pool_size(0);

	p->master = local_replica::open(ps.replicas[0], size);
	const header_fields master_hdr = p->master->read_header(0);
	auto check = [&](const header_fields &h, const std::string &what) {
		if (h.signature != opts.signature)
			throw rpmem::error(
			    EINVAL, fmt::format("{}: its pool signature '{}' is not '{}': it is "
			                        "not a pool of this application (check "
			                        "options::signature)",
			                        what,
			                        std::string(h.signature.data(),
			                                    strnlen(h.signature.data(), 8)),
			                        std::string(opts.signature.data(),
			                                    strnlen(opts.signature.data(), 8))));
		if (h.major != opts.major)
			throw rpmem::error(EINVAL,
			                   fmt::format("{}: pool format version {} is not the "
			                               "expected {} (options::major)",
			                               what, h.major, opts.major));
		if (h.poolset != master_hdr.poolset)
			throw rpmem::error(
			    EINVAL, fmt::format("{}: its pool set UUID {} differs from the "
			                        "master's {}: it belongs to another pool set",
			                        what, uuid_string(h.poolset),
			                        uuid_string(master_hdr.poolset)));
		if (h.incompat & feat_incompat_singlehdr)
			throw rpmem::error(ENOTSUP, fmt::format("{}: the SINGLEHDR feature is not "
			                                        "supported",
			                                        what));
	};
	for (std::size_t i = 0; i < p->master->parts(); ++i)
		check(p->master->read_header(i), "pool part " + p->master->path(i));

	for (std::size_t r = 1; r < ps.replicas.size(); ++r) {
		const auto &rep = ps.replicas[r];
		if (rep.is_remote()) {
			remote_replica rr;
			rr.index = r;
			rr.target = rep.target;
			rr.descriptor = rep.descriptor;
			rr.conn = remote_options(opts, r, rep);
			p->remotes.push_back(std::move(rr));
			continue;
		}
		if (ps.pool_size(r) < size)
			throw rpmem::error(EINVAL,
			                   fmt::format("{}:{}: replica {} is smaller than the "
			                               "master",
			                               poolset_path, rep.line, r));
		auto m = local_replica::open(rep, size);
		for (std::size_t i = 0; i < m->parts(); ++i)
			check(m->read_header(i), "pool part " + m->path(i));
		p->locals.push_back({r, std::move(m), false, {}});
	}

	std::vector<std::exception_ptr> errors;
	for_each_parallel(
	    p->remotes.size(),
	    [&](std::size_t i) {
		    auto &rr = p->remotes[i];
		    rr.lanes = lanes_per_replica;
		    control::pool_attr a;
		    rr.rp = client::remote_pool::open(rr.target, rr.descriptor, p->master->base(),
		                                      size, &rr.lanes, &a, rr.conn);
		    if (a.is_zero())
			    throw rpmem::error(EINVAL,
			                       "the remote pool has no header (OPTION "
			                       "NOHDRS?): it is not a replica of this pool");
		    header_fields h;
		    h.signature = a.signature;
		    h.major = a.major;
		    h.incompat = a.incompat_features;
		    h.poolset = a.poolset_uuid;
		    check(h, "remote replica " + p->where(rr));
		    if (a.compat_features & feat_compat_behind)
			    throw rpmem::error(
			        ESTALE, "it may be behind the master: it was written "
			                "asynchronously and its writer did not close the pool "
			                "cleanly, so it can lack the master's last persists "
			                "(its pool header is marked so)");
		    rr.attr = a;
		    if (p->asynchronous()) {
			    const auto behind = marked_behind(a, true);
			    rr.rp->set_attr(&behind);
		    }
	    },
	    errors);
	for (std::size_t i = 0; i < errors.size(); ++i) {
		if (!errors[i])
			continue;
		std::string msg;
		int err = errnum_of(errors[i], &msg);
		auto &rr = p->remotes[i];
		if (opts.on_failure == failure_policy::degrade) {
			// Keep going without it; resync() re-creates it from the master.
			rr.rp.reset();
			rr.attr = {};
			p->mark_lost(rr.index, msg, true);
			continue;
		}
		throw rpmem::error(err, fmt::format("{}: cannot open remote replica {} ({}): {} "
		                                    "(open with failure_policy::degrade to go on "
		                                    "without it, then resync({}))",
		                                    poolset_path, rr.index, p->where(rr), msg,
		                                    rr.index));
	}
	p->count_lanes();
	if (opts.replication == mode::asynchronous)
		p->start_async();
	p->notify_lost();
	return replicated_pool(std::move(p));
}

// ---------------------------------------------------------------------------------------------
// failure policy

void replicated_pool::impl::mark_lost(std::size_t index, const std::string &why, bool remote)
{
	// The lower layer's advice (close the pool and open it again) is not this pool's remedy.
	std::string reason = why;
	const std::string remedy = fmt::format("resync({}) brings it back", index);
	if (auto at = reason.find(client::reopen_advice); at != std::string::npos)
		reason.replace(at, std::strlen(client::reopen_advice),
		               "the replica is unusable: " + remedy);
	else
		reason += " (" + remedy + ")";
	std::lock_guard g(state_mu);
	if (remote) {
		for (auto &r : remotes)
			if (r.index == index && !r.lost) {
				r.lost = true;
				r.error = reason;
				lost_unreported.push_back({index, true, where(r), false, reason});
			}
	} else {
		for (auto &l : locals)
			if (l.index == index && !l.lost) {
				l.lost = true;
				l.error = reason;
				lost_unreported.push_back(
				    {index, false, l.map->path(0), false, reason});
			}
	}
}

void replicated_pool::impl::notify_lost()
{
	std::vector<replica_status> lost;
	{
		std::lock_guard g(state_mu);
		lost.swap(lost_unreported);
	}
	if (opts.on_replica_lost)
		for (const auto &st : lost)
			opts.on_replica_lost(st);
}

template <class F> void replicated_pool::impl::with_remotes(F &&f)
{
	std::exception_ptr err;
	{
		std::unique_lock g(remote_mu);
		try {
			f();
		} catch (...) {
			err = std::current_exception();
		}
	}
	notify_lost();
	if (err)
		std::rethrow_exception(err);
}

template <class F> void replicated_pool::impl::with_lane(F &&f)
{
	std::exception_ptr err;
	{
		std::shared_lock g(remote_mu);
		const unsigned lane = thread_slot() % nlanes;
		std::lock_guard l(lane_mu[lane]);
		try {
			f(lane);
		} catch (...) {
			err = std::current_exception();
		}
	}
	notify_lost();
	if (err)
		std::rethrow_exception(err);
}

void replicated_pool::impl::fail_lost(const char *what, std::size_t index, int err,
                                      const std::string &why) const
{
	throw rpmem::error(err, fmt::format("{}: replica {} is lost ({}): the pool set is not "
	                                    "fully replicated; bring the replica back and call "
	                                    "resync({}), or use failure_policy::degrade",
	                                    what, index, why, index));
}

void replicated_pool::impl::check_not_lost(const char *what) const
{
	if (opts.on_failure == failure_policy::degrade)
		return;
	std::lock_guard g(state_mu);
	for (const auto &r : remotes)
		if (r.lost)
			fail_lost(what, r.index, EIO, r.error);
}

/**
 * Fan-out without threads: post(r) sends to every replica in sync, then complete(r) waits for
 * each in turn. The replicas work in parallel, so the call costs the slowest one, not the sum.
 */
void replicated_pool::impl::remote_all(const char *what,
                                       const std::function<void(remote_replica &)> &post,
                                       const std::function<void(remote_replica &)> &complete)
{
	if (remotes.empty())
		return;
	std::vector<bool> active(remotes.size());
	{
		std::lock_guard g(state_mu);
		for (std::size_t i = 0; i < remotes.size(); ++i)
			active[i] = !remotes[i].lost && remotes[i].rp;
	}
	std::vector<std::exception_ptr> errors(remotes.size());
	for (auto step : {&post, &complete}) {
		for (std::size_t i = 0; i < remotes.size(); ++i) {
			if (!active[i] || errors[i])
				continue;
			try {
				(*step)(remotes[i]);
			} catch (...) {
				errors[i] = std::current_exception();
			}
		}
	}
	std::size_t failed = remotes.size();
	int failed_err = 0;
	std::string failed_msg;
	for (std::size_t i = 0; i < errors.size(); ++i) {
		if (!errors[i])
			continue;
		std::string msg;
		int err = errnum_of(errors[i], &msg);
		mark_lost(remotes[i].index, msg, true);
		if (failed == remotes.size()) {
			failed = i;
			failed_err = err;
			failed_msg = msg;
		}
	}
	if (failed != remotes.size() && opts.on_failure == failure_policy::fail)
		throw rpmem::error(failed_err,
		                   fmt::format("{}: remote replica {} ({}) failed: {}: the data is "
		                               "durable on the master but not on every replica; "
		                               "bring the replica back and call resync({}), or use "
		                               "failure_policy::degrade",
		                               what, remotes[failed].index, where(remotes[failed]),
		                               failed_msg, remotes[failed].index));
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
		if (!l.lost)
			l.map->copy_persist(d.master->base(), offset, length);
	if (d.opts.replication == mode::asynchronous) {
		d.enqueue({offset, length});
		return;
	}
	// The replicas still in sync get the range even when the call is going to fail because
	// one is lost: then resync() of the lost one is all it takes to be whole again.
	d.with_lane([&](unsigned lane) {
		d.remote_all(
		    "replicated_pool::persist",
		    [&](remote_replica &r) { r.rp->persist_post(offset, length, lane); },
		    [&](remote_replica &r) { r.rp->complete(lane); });
		d.check_not_lost("replicated_pool::persist");
	});
}

void replicated_pool::flush(std::size_t offset, std::size_t length)
{
	auto &d = open_pool(impl_.get(), "flush");
	d.check_range("flush", offset, length);
	if (length == 0)
		return;
	d.master->flush(offset, length);
	for (auto &l : d.locals)
		if (!l.lost)
			l.map->copy_flush(d.master->base(), offset, length);
	if (d.opts.replication == mode::asynchronous) {
		std::lock_guard g(d.q_mu);
		d.flushed.push_back({offset, length});
		return;
	}
	// Posting a write returns at once. On the thread's lane: its drain() drains it.
	d.with_lane([&](unsigned lane) {
		for (auto &r : d.remotes) {
			if (!d.active(r))
				continue;
			try {
				r.rp->flush(offset, length, lane, client::flush_relaxed);
			} catch (const std::exception &) {
				// The drain that follows reports it through the failure policy.
			}
		}
	});
}

void replicated_pool::drain()
{
	auto &d = open_pool(impl_.get(), "drain");
	d.master->drain();
	for (auto &l : d.locals)
		if (!l.lost)
			l.map->drain();
	if (d.opts.replication == mode::asynchronous) {
		std::vector<range> f;
		{
			std::lock_guard g(d.q_mu);
			f.swap(d.flushed);
		}
		for (auto &r : f)
			d.enqueue(r);
		return;
	}
	d.with_lane([&](unsigned lane) {
		d.remote_all(
		    "replicated_pool::drain", [&](remote_replica &r) { r.rp->drain_post(lane); },
		    [&](remote_replica &r) { r.rp->complete(lane); });
		d.check_not_lost("replicated_pool::drain");
	});
}

// ---------------------------------------------------------------------------------------------
// asynchronous mode

void replicated_pool::impl::start_async()
{
	// Room for max_lag_bytes of snapshots, and for a few chunks when the bound is tiny.
	staging.init(std::max<std::size_t>(opts.max_lag_bytes, 4u << 20));
	replicator = std::thread([this] { replicate_loop(); });
}

void replicated_pool::impl::stop_async()
{
	if (!replicator.joinable())
		return;
	{
		std::lock_guard g(q_mu);
		stop = true;
	}
	work_cv.notify_all();
	replicator.join();
}

void replicated_pool::impl::rethrow_async_error()
{
	if (async_error && opts.on_failure == failure_policy::fail)
		std::rethrow_exception(async_error);
}

/** Snapshots r into the staging ring (in chunks if it is large) and queues it; then holds the
 * caller while the lag is over its bounds. */
void replicated_pool::impl::enqueue(range r)
{
	std::unique_lock lk(q_mu);
	rethrow_async_error();
	const std::size_t chunk = staging.max_chunk();
	for (std::size_t done = 0; done < r.length; done += chunk)
		enqueue_chunk({r.offset + done, std::min(chunk, r.length - done)}, lk);
	auto now = clock_type::now();
	// Bounded lag: wait while too many bytes, or too old ones, are not replicated yet.
	while (!async_error && !queue.empty() &&
	       (lag_bytes > opts.max_lag_bytes || now - queue.front().when > opts.max_lag_time)) {
		done_cv.wait_for(lk, std::chrono::milliseconds(10));
		now = clock_type::now();
	}
	rethrow_async_error();
}

void replicated_pool::impl::enqueue_chunk(range r, std::unique_lock<std::mutex> &lk)
{
	std::size_t pos = 0, charge = 0;
	while (!staging.alloc(r.length, &pos, &charge)) {
		// Full: the replicator frees the oldest snapshots as the replicas take them.
		work_cv.notify_one();
		done_cv.wait(lk);
		rethrow_async_error();
	}
	// The caller just persisted the range and does not write it until persist returns.
	std::memcpy(staging.base() + pos, master->base() + r.offset, r.length);
	queue.push_back({r, clock_type::now(), pos, charge});
	++enqueued;
	lag_bytes += r.length;
	if (queue.size() == 1 || in_flight == 0)
		work_cv.notify_one();
}

void replicated_pool::impl::replicate_loop()
{
	std::vector<piece> batch;
	for (;;) {
		std::size_t n;
		{
			std::unique_lock lk(q_mu);
			work_cv.wait(lk, [&] { return stop || !queue.empty(); });
			if (queue.empty())
				return; // stop, and nothing left
			n = queue.size();
			in_flight = n;
			batch.clear();
			// In persist order (a replica holds a prefix of the persists); a range
			// continuing the previous one, in the pool and in the ring, joins it.
			for (std::size_t i = 0; i < n; ++i) {
				const auto &e = queue[i];
				const std::byte *src = staging.base() + e.stage;
				if (!batch.empty()) {
					auto &b = batch.back();
					if (b.r.offset + b.r.length == e.r.offset &&
					    b.src + b.r.length == src) {
						b.r.length += e.r.length;
						continue;
					}
				}
				batch.push_back({e.r, src});
			}
		}
		std::exception_ptr err;
		{
			std::unique_lock g(remote_mu);
			try {
				// Rounds of relaxed flushes that fit one lane request, then a
				// drain, posted to every replica before waiting on any: one round
				// trip per round, all replicas in parallel. (A flush that
				// overflowed the request would send it and wait, one replica after
				// the other.)
				const client::data_path *lanes = nullptr;
				for (auto &r : remotes)
					if (!lanes && r.rp && !r.lost)
						lanes = &r.rp->lanes();
				for (std::size_t from = 0, to = 0; lanes && from < batch.size();
				     from = to) {
					to = round_end(
					    *lanes, batch.size(), from, ranges_per_drain,
					    [&](std::size_t i) { return batch[i].r.length; });
					remote_all(
					    "asynchronous replication",
					    [&](remote_replica &r) {
						    if (r.staged_on != r.rp.get()) {
							    r.rp->register_source(
							        staging.base(), staging.capacity());
							    r.staged_on = r.rp.get();
						    }
						    for (std::size_t k = from; k < to; ++k)
							    r.rp->flush_from(batch[k].src,
							                     batch[k].r.offset,
							                     batch[k].r.length, 0);
						    r.rp->drain_post(0);
					    },
					    [](remote_replica &r) { r.rp->complete(0); });
				}
			} catch (...) {
				err = std::current_exception();
			}
		}
		notify_lost();
		{
			std::lock_guard lk(q_mu);
			for (std::size_t i = 0; i < n; ++i) {
				lag_bytes -= queue.front().r.length;
				staging.release(queue.front().charge);
				queue.pop_front();
			}
			in_flight = 0;
			replicated += n;
			if (err && !async_error)
				async_error = err;
		}
		done_cv.notify_all();
	}
}

void replicated_pool::impl::wait_barrier()
{
	std::unique_lock lk(q_mu);
	const std::uint64_t target = enqueued;
	work_cv.notify_one();
	done_cv.wait(lk, [&] { return replicated >= target || !replicator.joinable(); });
	rethrow_async_error();
}

void replicated_pool::barrier()
{
	auto &d = open_pool(impl_.get(), "barrier");
	if (d.opts.replication == mode::asynchronous) {
		d.wait_barrier();
		return;
	}
	d.with_lane([&](unsigned) { d.check_not_lost("replicated_pool::barrier"); });
}

replicated_pool::lag_info replicated_pool::lag() const
{
	auto &d = live(impl_.get(), "lag");
	std::lock_guard g(d.q_mu);
	lag_info l;
	l.bytes = d.lag_bytes;
	l.ranges = d.queue.size();
	if (!d.queue.empty())
		l.oldest = clock_type::now() - d.queue.front().when;
	return l;
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
		out[l.index] = {l.index, false, d.ps.replicas[l.index].parts[0].path, !l.lost,
		                l.error};
	for (const auto &r : d.remotes)
		out[r.index] = {r.index, true, d.where(r), !r.lost, r.error};
	return out;
}

void replicated_pool::resync(std::size_t index,
                             const std::function<void(std::size_t, std::size_t)> &progress)
{
	auto &d = open_pool(impl_.get(), "resync");
	if (index == 0 || index >= d.ps.replicas.size())
		throw rpmem::error(EINVAL,
		                   fmt::format("replicated_pool::resync: no replica {}: give "
		                               "1..{} (0 is the master)",
		                               index, d.ps.replicas.size() - 1));
	const std::size_t size = d.master->size();
	const std::size_t total = size - data_offset();
	std::unique_lock g(d.remote_mu); // no remote operation meanwhile

	for (auto &l : d.locals) {
		if (l.index != index)
			continue;
		for (std::size_t off = data_offset(); off < size; off += resync_chunk) {
			std::size_t n = std::min(resync_chunk, size - off);
			l.map->copy_persist(d.master->base(), off, n);
			if (progress)
				progress(off + n - data_offset(), total);
		}
		std::lock_guard s(d.state_mu);
		l.lost = false;
		l.error.clear();
		return;
	}

	auto it = std::find_if(d.remotes.begin(), d.remotes.end(),
	                       [&](const remote_replica &r) { return r.index == index; });
	auto &r = *it;
	const std::string what =
	    fmt::format("replicated_pool::resync: remote replica {} ({})", index, d.where(r));
	if (r.rp) {
		try {
			r.rp->close();
		} catch (const std::exception &) {
			// It is being replaced: how its old session ended does not matter.
		}
		r.rp.reset();
	}
	r.staged_on = nullptr; // a new remote pool registers the staging ring again
	unsigned lanes = lanes_per_replica;
	try {
		control::pool_attr a;
		r.rp = client::remote_pool::open(r.target, r.descriptor, d.master->base(), size,
		                                 &lanes, &a, r.conn);
		if (a.poolset_uuid != r.attr.poolset_uuid && !r.attr.is_zero())
			throw rpmem::error(EINVAL,
			                   "it holds another pool set (its pool set UUID "
			                   "differs): remove it so resync can re-create it");
		if (r.attr.is_zero())
			r.attr = marked_behind(a, false);
	} catch (const rpmem::error &open_err) {
		if (r.rp) {
			r.rp.reset();
			throw rpmem::error(open_err.errnum(), what + ": " + open_err.message());
		}
		// Gone (or never created): re-create it with the header it should have.
		if (r.attr.is_zero()) {
			header_fields h = d.master->read_header(0);
			r.attr.signature = h.signature;
			r.attr.major = h.major;
			r.attr.incompat_features = h.incompat;
			r.attr.poolset_uuid = h.poolset;
			r.attr.uuid = generate_uuid();
			r.attr.user_flags = h.arch;
		}
		try {
			lanes = lanes_per_replica;
			// Marked behind until the copy is complete.
			const auto attr = marked_behind(r.attr, true);
			r.rp = client::remote_pool::create(r.target, r.descriptor, d.master->base(),
			                                   size, &lanes, &attr, r.conn);
		} catch (const rpmem::error &create_err) {
			throw rpmem::error(
			    create_err.errnum(),
			    fmt::format("{}: cannot open it ({}) nor re-create it ({})", what,
			                open_err.message(), create_err.message()));
		}
	}
	try {
		// Marked behind while the copy runs: an interrupted resync leaves it so.
		const auto copying = marked_behind(r.attr, true);
		r.rp->set_attr(&copying);
		for (std::size_t off = data_offset(); off < size; off += resync_chunk) {
			std::size_t n = std::min(resync_chunk, size - off);
			r.rp->flush(off, n, 0, client::flush_relaxed);
			r.rp->drain(0, 0);
			if (progress)
				progress(off + n - data_offset(), total);
		}
		// Whole now; asynchronous replication keeps the mark until a clean close.
		const auto done = marked_behind(r.attr, d.asynchronous());
		r.rp->set_attr(&done);
		r.lanes = lanes;
		d.count_lanes();
	} catch (const rpmem::error &e) {
		throw rpmem::error(e.errnum(), fmt::format("{}: copying the master failed: {}: "
		                                           "call resync({}) again",
		                                           what, e.message(), index));
	}
	{
		std::lock_guard s(d.state_mu);
		r.lost = false;
		r.error.clear();
		if (std::any_of(d.remotes.begin(), d.remotes.end(),
		                [](const remote_replica &x) { return x.lost; }))
			return;
	}
	std::lock_guard q(d.q_mu);
	d.async_error = nullptr; // every replica is back: asynchronous replication goes on
}

void replicated_pool::impl::clear_behind_marks()
{
	// A replica whose mark stays (lost, or this fails) is reported behind by the next open.
	for (auto &r : remotes) {
		if (r.lost || !r.rp)
			continue;
		try {
			const auto clean = marked_behind(r.attr, false);
			r.rp->set_attr(&clean);
		} catch (const rpmem::error &e) {
			mark_lost(r.index, e.message(), true);
		}
	}
	notify_lost();
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
	std::exception_ptr barrier_err;
	if (d.opts.replication == mode::asynchronous) {
		try {
			d.wait_barrier();
		} catch (...) {
			barrier_err = std::current_exception();
		}
		d.stop_async();
		if (!barrier_err)
			d.clear_behind_marks();
	}
	d.close_all();
	if (barrier_err)
		std::rethrow_exception(barrier_err);
}

} // namespace rpmem
