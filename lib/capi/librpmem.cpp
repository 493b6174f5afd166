// SPDX-License-Identifier: BSD-3-Clause
// The C ABI of librpmem.so.1: a thin shim over rpmem::client::remote_pool. No exception crosses
// it; every failure sets errno and the calling thread's rpmem_errormsg(). No logic of its own
// beyond PMDK's argument conventions.
#include "rpmem/librpmem.h"

#include "client/log.hpp"
#include "client/remote_pool.hpp"
#include "rpmem/error.hpp"

#include <cerrno>
#include <cstring>
#include <new>
#include <string>

static_assert(sizeof(rpmem_pool_attr) == rpmem::control::pool_attr_size);
static_assert(offsetof(rpmem_pool_attr, user_flags) == 88);

struct rpmem_pool {
	std::unique_ptr<rpmem::client::remote_pool> pool;
};

namespace
{

using rpmem::client::remote_pool;
namespace ctl = rpmem::control;

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
		if (create) {
			ctl::pool_attr attr;
			if (in)
				attr = to_attr(*in);
			handle->pool = remote_pool::create(target, pool_set_name, pool_addr,
			                                   pool_size, nlanes, in ? &attr : nullptr);
		} else {
			ctl::pool_attr attr;
			handle->pool = remote_pool::open(target, pool_set_name, pool_addr,
			                                 pool_size, nlanes, out ? &attr : nullptr);
			if (out)
				from_attr(attr, *out);
		}
		rpmem::client::log(3, "{} {}:{} size {} lanes {}", what, target, pool_set_name,
		                   pool_size, *nlanes);
		result = handle.release();
		return 0;
	});
	return result;
}

bool check_handle(RPMEMpool *rpp)
{
	if (rpp && rpp->pool)
		return true;
	fail(EINVAL, "the pool handle is NULL");
	return false;
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
	if (!check_handle(rpp))
		return -1;
	return guarded([&] {
		ctl::pool_attr a;
		if (attr)
			a = to_attr(*attr);
		rpp->pool->set_attr(attr ? &a : nullptr);
		return 0;
	});
}

__attribute__((visibility("default"))) int rpmem_close(RPMEMpool *rpp)
{
	if (!rpp)
		return fail(EINVAL, "the pool handle is NULL");
	int ret = guarded([&] {
		rpp->pool->close();
		return 0;
	});
	int saved = errno;
	delete rpp;
	errno = saved;
	return ret;
}

__attribute__((visibility("default"))) int rpmem_flush(RPMEMpool *rpp, size_t offset, size_t length,
                                                       unsigned lane, unsigned flags)
{
	if (!check_handle(rpp))
		return -1;
	return guarded([&] {
		rpp->pool->flush(offset, length, lane, flags);
		return 0;
	});
}

__attribute__((visibility("default"))) int rpmem_drain(RPMEMpool *rpp, unsigned lane,
                                                       unsigned flags)
{
	if (!check_handle(rpp))
		return -1;
	return guarded([&] {
		rpp->pool->drain(lane, flags);
		return 0;
	});
}

__attribute__((visibility("default"))) int
rpmem_persist(RPMEMpool *rpp, size_t offset, size_t length, unsigned lane, unsigned flags)
{
	if (!check_handle(rpp))
		return -1;
	return guarded([&] {
		rpp->pool->persist(offset, length, lane, flags);
		return 0;
	});
}

__attribute__((visibility("default"))) int rpmem_deep_persist(RPMEMpool *rpp, size_t offset,
                                                              size_t length, unsigned lane)
{
	if (!check_handle(rpp))
		return -1;
	return guarded([&] {
		rpp->pool->deep_persist(offset, length, lane);
		return 0;
	});
}

__attribute__((visibility("default"))) int rpmem_read(RPMEMpool *rpp, void *buff, size_t offset,
                                                      size_t length, unsigned lane)
{
	if (!check_handle(rpp))
		return -1;
	return guarded([&] {
		rpp->pool->read(buff, offset, length, lane);
		return 0;
	});
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
