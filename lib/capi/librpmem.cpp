// SPDX-License-Identifier: BSD-3-Clause
// The C ABI of librpmem.so.1: a thin shim over client::pool_calls, chosen once at create/open:
// rpmem::client::remote_pool, or, with RPMEM_REPLICATION=async, rpmem::async::remote_writer.
// No exception crosses it; every failure sets errno and the calling thread's rpmem_errormsg().
// No logic of its own beyond PMDK's conventions at the boundary and the choice of the mode.
#include "rpmem/librpmem.h"

#include "async/remote_writer.hpp"
#include "client/env.hpp"
#include "client/log.hpp"
#include "client/remote_pool.hpp"
#include "client/replica_sync.hpp"
#include "client/resilient_pool.hpp"
#include "client/stats_export.hpp"
#include "pmdk/pool_header.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <string>

namespace ctl = rpmem::control;

static_assert(sizeof(rpmem_pool_attr) == rpmem::control::pool_attr_size);
static_assert(offsetof(rpmem_pool_attr, user_flags) == 88);

/** The pool's calls, synchronous (client::remote_pool) or asynchronous
 *  (async::remote_writer, RPMEM_REPLICATION=async), chosen once at create/open; they check
 *  PMDK's argument contract and count themselves in the metrics file (RPMEM_STATS_FILE). */
struct rpmem_pool {
	std::unique_ptr<rpmem::client::pool_calls> calls;
};

namespace
{

using rpmem::client::remote_pool;

thread_local std::string last_error;

int fail(int err, const std::string &message)
{
	last_error = message;
	rpmem::client::log(1, "{}", message);
	errno = err;
	return -1;
}

/**
 * Runs f; turns any exception into errno + message. Returns -1 on failure, else f's value.
 * The message does not name the function: as with PMDK, the caller knows which call failed
 * (and prints it, as examples/01-c-abi.c does); the core's messages already say what failed.
 */
template <class F> auto guarded(F &&f) -> decltype(f())
{
	try {
		return f();
	} catch (const rpmem::error &e) {
		fail(e.errnum(), e.message());
	} catch (const std::bad_alloc &) {
		fail(ENOMEM, "out of memory");
	} catch (const std::exception &e) {
		fail(EINVAL, e.what());
	} catch (...) {
		fail(EINVAL, "unknown failure");
	}
	return decltype(f())(-1);
}

ctl::pool_attr to_attr(const rpmem_pool_attr &a)
{
	ctl::pool_attr r;
	std::memcpy(r.signature.data(), a.signature, sizeof a.signature);
	r.major = a.major;
	r.compat_features = a.compat_features;
	r.incompat_features = a.incompat_features;
	r.ro_compat_features = a.ro_compat_features;
	std::memcpy(r.poolset_uuid.data(), a.poolset_uuid, 16);
	std::memcpy(r.uuid.data(), a.uuid, 16);
	std::memcpy(r.next_uuid.data(), a.next_uuid, 16);
	std::memcpy(r.prev_uuid.data(), a.prev_uuid, 16);
	std::memcpy(r.user_flags.data(), a.user_flags, 16);
	return r;
}

void from_attr(const ctl::pool_attr &r, rpmem_pool_attr &a)
{
	std::memcpy(a.signature, r.signature.data(), sizeof a.signature);
	a.major = r.major;
	a.compat_features = r.compat_features;
	a.incompat_features = r.incompat_features;
	a.ro_compat_features = r.ro_compat_features;
	std::memcpy(a.poolset_uuid, r.poolset_uuid.data(), 16);
	std::memcpy(a.uuid, r.uuid.data(), 16);
	std::memcpy(a.next_uuid, r.next_uuid.data(), 16);
	std::memcpy(a.prev_uuid, r.prev_uuid.data(), 16);
	std::memcpy(a.user_flags, r.user_flags.data(), 16);
}

/** A replica whose writer did not close it cleanly while it may have been behind (written
 *  asynchronously, or gone on without under RPMEM_ON_OUTAGE=continue) may lack the master's
 *  last persists: asynchronous mode opens it under RPMEM_ASYNC_ON_FAILURE=fail, or for a
 *  caller that only probes it (client::probe_bytes), only once it is resynced or promoted. */
void refuse_if_behind(const ctl::pool_attr &a, const char *target, const char *descriptor)
{
	if (rpmem::pmdk::marked_rebuilding(a))
		throw rpmem::error(
		    ESTALE,
		    fmt::format("the replica {} on {} was being caught up from its master when its "
		                "writer stopped (asynchronous replication, back from an outage): "
		                "its blocks come from different moments, so it holds no consistent "
		                "pool (its pool header is marked so). Bring it in line from the "
		                "master with `rpmem sync POOLSET`",
		                descriptor, target));
	if (rpmem::pmdk::marked_behind(a))
		throw rpmem::error(
		    ESTALE,
		    fmt::format("the replica {} on {} may be behind its master: it was written "
		                "asynchronously (RPMEM_REPLICATION=async) and its writer did not "
		                "close it cleanly, so it can lack the last persists (its pool "
		                "header is marked so). Bring it up to date with `rpmem sync "
		                "POOLSET`, or, if the master is lost, make it the master with "
		                "`rpmem promote --force`",
		                descriptor, target));
}

/** RPMEM_REPLICATION=async: one connected lane behind as many virtual lanes as asked for;
 *  a replica with headers is marked "possibly behind" until a clean close. */
std::unique_ptr<rpmem::client::pool_calls>
start_async(bool create, const char *target, const char *descriptor, void *addr, size_t size,
            unsigned *nlanes, const rpmem_pool_attr *in, rpmem_pool_attr *out)
{
	const auto &s = rpmem::client::process_settings();
	unsigned one = 1;
	ctl::pool_attr attr;
	std::unique_ptr<remote_pool> rp;
	rpmem::client::pool_options conn;
	conn.command = rpmem::client::next_command(); // a reconnect goes to the same rpmemd
	const auto command = conn.command;
	if (create) {
		if (in)
			attr = to_attr(*in);
		const bool headers = in && !attr.is_zero();
		const auto wire = rpmem::pmdk::with_behind_mark(attr, headers);
		rp = remote_pool::create(target, descriptor, addr, size, &one,
		                         headers ? &wire : nullptr, conn);
	} else {
		rp = remote_pool::open(target, descriptor, addr, size, &one, out ? &attr : nullptr,
		                       conn);
		const bool not_whole = rpmem::pmdk::marked_rebuilding(attr);
		const bool marked = rpmem::pmdk::marked_behind(attr) || not_whole;
		// Under fail, a replica its last writer left marked is refused (PMDK's strictness);
		// under continue it is brought in line here, as the synchronous mode does.
		if (!s.async_keep_going || size <= rpmem::client::probe_bytes)
			refuse_if_behind(attr, target, descriptor);
		const auto clean = rpmem::pmdk::with_rebuilding_mark(
		    rpmem::pmdk::with_behind_mark(attr, false), false);
		if (rp->has_headers()) {
			const auto wire = rpmem::pmdk::with_behind_mark(attr, true);
			rp->set_attr(&wire);
		}
		if (marked)
			rpmem::client::bring_in_line(*rp, static_cast<const std::uint8_t *>(addr),
			                             size, clean, not_whole,
			                             fmt::format("{}:{}", target, descriptor));
		attr = clean;
		if (out)
			from_attr(attr, *out);
	}
	rpmem::async::remote_writer::config c;
	c.place = {target, descriptor, addr, size, {}};
	c.place.conn.command = command; // every session to the same rpmemd
	c.reconnect_delay = s.reconnect_delay;
	c.reconnect_timeout = s.reconnect_timeout;
	c.catch_up_hold_bytes = s.catch_up_hold_bytes;
	c.lag.max_lag_bytes = s.async_max_lag_bytes;
	c.lag.max_lag_time = s.async_max_lag_time;
	c.keep_going = s.async_keep_going;
	// Under continue a replica too slow to keep the lag bound is dropped after RPMEM_TIMEOUT
	// more, and caught up once it keeps up; under fail the calls go at its pace.
	if (c.keep_going)
		c.lag.congestion = s.op_timeout;
	c.nlanes = std::max(1u, std::min<unsigned>(*nlanes, s.max_nlanes));
	c.marked = rp->has_headers();
	*nlanes = c.nlanes;
	return std::make_unique<rpmem::async::remote_writer>(
	    std::move(rp), static_cast<const std::byte *>(addr), size, attr, c);
}

/** Synchronous (the default): a pool that reconnects by itself and, under
 *  RPMEM_ON_OUTAGE=continue, goes on without a replica that stays away
 *  (client/resilient_pool.hpp). */
std::unique_ptr<rpmem::client::pool_calls>
start_sync(bool create, const char *target, const char *descriptor, void *addr, size_t size,
           unsigned *nlanes, const rpmem_pool_attr *in, rpmem_pool_attr *out)
{
	using rpmem::client::resilient_pool;
	const auto &s = rpmem::client::process_settings();
	resilient_pool::config c;
	c.target = target;
	c.descriptor = descriptor;
	c.addr = addr;
	c.size = size;
	c.conn.command = rpmem::client::next_command(); // every session to the same rpmemd
	c.reconnect_delay = s.reconnect_delay;
	c.reconnect_timeout = s.reconnect_timeout;
	c.keep_going = s.outage_continue;
	c.call_timeout = s.call_timeout;
	c.catch_up_hold_bytes = s.catch_up_hold_bytes;
	ctl::pool_attr attr;
	if (create) {
		if (in)
			attr = to_attr(*in);
		return resilient_pool::create(c, nlanes, in ? &attr : nullptr);
	}
	auto p = resilient_pool::open(c, nlanes, out ? &attr : nullptr);
	if (out)
		from_attr(attr, *out);
	return p;
}

RPMEMpool *start(bool create, const char *target, const char *pool_set_name, void *pool_addr,
                 size_t pool_size, unsigned *nlanes, const rpmem_pool_attr *in,
                 rpmem_pool_attr *out)
{
	const char *what = create ? "rpmem_create" : "rpmem_open";
	if (!target || !pool_set_name) {
		fail(EINVAL, "target and pool set name must not be NULL");
		return nullptr;
	}
	RPMEMpool *result = nullptr;
	guarded([&]() -> int {
		auto handle = std::make_unique<rpmem_pool>();
		const bool async = rpmem::client::process_settings().async;
		if (!nlanes)
			throw rpmem::error(EINVAL,
			                   "nlanes is NULL: pass the number of lanes wanted");
		if (*nlanes == 0)
			throw rpmem::error(EINVAL, "*nlanes is 0: ask for at least one lane");
		handle->calls = async ? start_async(create, target, pool_set_name, pool_addr,
		                                    pool_size, nlanes, in, out)
		                      : start_sync(create, target, pool_set_name, pool_addr,
		                                   pool_size, nlanes, in, out);
		rpmem::client::log(3, "{} {}:{} size {} lanes {}{}", what, target, pool_set_name,
		                   pool_size, *nlanes, async ? ", replicated asynchronously" : "");
		if (auto *e = rpmem::client::stats_exporter::instance())
			handle->calls->export_to(*e, target, pool_set_name);
		result = handle.release();
		return 0;
	});
	return result;
}

/** f(the pool's calls), guarded: any failure becomes errno and the thread's message. */
template <class F> int on_pool(RPMEMpool *rpp, F &&f)
{
	if (!rpp || !rpp->calls)
		return fail(EINVAL, "the pool handle is NULL");
	return guarded([&] {
		f(*rpp->calls);
		return 0;
	});
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) RPMEMpool *
rpmem_create(const char *target, const char *pool_set_name, void *pool_addr, size_t pool_size,
             unsigned *nlanes, const struct rpmem_pool_attr *create_attr)
{
	return start(true, target, pool_set_name, pool_addr, pool_size, nlanes, create_attr,
	             nullptr);
}

__attribute__((visibility("default"))) RPMEMpool *
rpmem_open(const char *target, const char *pool_set_name, void *pool_addr, size_t pool_size,
           unsigned *nlanes, struct rpmem_pool_attr *open_attr)
{
	return start(false, target, pool_set_name, pool_addr, pool_size, nlanes, nullptr,
	             open_attr);
}

__attribute__((visibility("default"))) int rpmem_set_attr(RPMEMpool *rpp,
                                                          const struct rpmem_pool_attr *attr)
{
	ctl::pool_attr a;
	if (attr)
		a = to_attr(*attr);
	return on_pool(rpp, [&](auto &p) { p.set_attr(attr ? &a : nullptr); });
}

__attribute__((visibility("default"))) int rpmem_close(RPMEMpool *rpp)
{
	if (!rpp)
		return fail(EINVAL, "the pool handle is NULL");
	int ret = on_pool(rpp, [](auto &p) { p.close(); });
	int saved = errno;
	delete rpp;
	errno = saved;
	return ret;
}

__attribute__((visibility("default"))) int rpmem_flush(RPMEMpool *rpp, size_t offset, size_t length,
                                                       unsigned lane, unsigned flags)
{
	return on_pool(rpp, [&](auto &p) { p.flush(offset, length, lane, flags); });
}

__attribute__((visibility("default"))) int rpmem_drain(RPMEMpool *rpp, unsigned lane,
                                                       unsigned flags)
{
	return on_pool(rpp, [&](auto &p) { p.drain(lane, flags); });
}

__attribute__((visibility("default"))) int
rpmem_persist(RPMEMpool *rpp, size_t offset, size_t length, unsigned lane, unsigned flags)
{
	return on_pool(rpp, [&](auto &p) { p.persist(offset, length, lane, flags); });
}

__attribute__((visibility("default"))) int rpmem_deep_persist(RPMEMpool *rpp, size_t offset,
                                                              size_t length, unsigned lane)
{
	return on_pool(rpp, [&](auto &p) { p.deep_persist(offset, length, lane); });
}

__attribute__((visibility("default"))) int rpmem_read(RPMEMpool *rpp, void *buff, size_t offset,
                                                      size_t length, unsigned lane)
{
	return on_pool(rpp, [&](auto &p) { p.read(buff, offset, length, lane); });
}

__attribute__((visibility("default"))) int rpmem_remove(const char *target, const char *pool_set,
                                                        int flags)
{
	if (!target || !pool_set)
		return fail(EINVAL, "target and pool set name must not be NULL");
	return guarded([&] {
		remote_pool::remove(target, pool_set, flags);
		return 0;
	});
}

__attribute__((visibility("default"))) const char *rpmem_check_version(unsigned major_required,
                                                                       unsigned minor_required)
{
	if (major_required != RPMEM_MAJOR_VERSION) {
		last_error = "librpmem major version mismatch (need " +
		             std::to_string(major_required) + ", found " +
		             std::to_string(RPMEM_MAJOR_VERSION) + ")";
		return last_error.c_str();
	}
	if (minor_required > RPMEM_MINOR_VERSION) {
		last_error = "librpmem minor version mismatch (need " +
		             std::to_string(minor_required) + ", found " +
		             std::to_string(RPMEM_MINOR_VERSION) + ")";
		return last_error.c_str();
	}
	return nullptr;
}

__attribute__((visibility("default"))) const char *rpmem_errormsg(void)
{
	return last_error.c_str();
}

} // extern "C"
