// SPDX-License-Identifier: BSD-3-Clause
#include "client/pool_calls.hpp"

#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <cerrno>

namespace rpmem::client
{

namespace
{

/** f(), counted in the pool's metrics when it is exported: a failure (one that is not about
 *  the arguments marks the pool failed), and when a durable call returned. */
template <class F> void counted(pool_export *e, bool durable, F &&f)
{
	if (!e) {
		f();
		return;
	}
	try {
		f();
	} catch (const rpmem::error &x) {
		e->error(x.errnum() != EINVAL);
		throw;
	}
	if (durable)
		e->durable();
}

void check_flags(const char *what, unsigned flags, unsigned allowed)
{
	if (flags & ~allowed)
		throw rpmem::error(
		    EINVAL, allowed ? fmt::format("{}: unknown flags {:#x}", what, flags)
		                    : fmt::format("{}: flags must be 0, not {:#x}", what, flags));
}

} // namespace

pool_calls::~pool_calls() = default;

void pool_calls::check(const char *what, std::size_t offset, std::size_t length, unsigned lane,
                       bool header_allowed) const
{
	check_usable();
	const auto c = contract();
	if (lane >= c.lanes)
		throw rpmem::error(EINVAL, fmt::format("{}: lane {} is out of range: the pool "
		                                       "has {} lanes",
		                                       what, lane, c.lanes));
	if (offset > c.size || length > c.size - offset)
		throw rpmem::error(EINVAL, fmt::format("{}: range [{}, +{}) is outside the "
		                                       "{}-byte pool",
		                                       what, offset, length, c.size));
	if (!header_allowed && c.headers && offset < header_size)
		throw rpmem::error(EINVAL, fmt::format("{}: offset {} is inside the pool header "
		                                       "(first {} bytes); use rpmem_set_attr",
		                                       what, offset, header_size));
}

void pool_calls::persist(std::size_t offset, std::size_t length, unsigned lane, unsigned flags)
{
	counted(export_.get(), true, [&] {
		check_flags("persist", flags, persist_relaxed);
		check("persist", offset, length, lane, false);
		do_persist(offset, length, lane);
	});
}

void pool_calls::flush(std::size_t offset, std::size_t length, unsigned lane, unsigned flags)
{
	counted(export_.get(), false, [&] {
		check_flags("flush", flags, flush_relaxed);
		check("flush", offset, length, lane, false);
		if (flags & flush_relaxed)
			do_flush(offset, length, lane);
		else
			do_persist(offset, length, lane);
	});
}

void pool_calls::drain(unsigned lane, unsigned flags)
{
	counted(export_.get(), true, [&] {
		check_flags("drain", flags, 0);
		check("drain", 0, 0, lane, true);
		do_drain(lane);
	});
}

void pool_calls::deep_persist(std::size_t offset, std::size_t length, unsigned lane)
{
	counted(export_.get(), true, [&] {
		check("deep_persist", offset, length, lane, false);
		do_deep_persist(offset, length, lane);
	});
}

void pool_calls::read(void *buf, std::size_t offset, std::size_t length, unsigned lane)
{
	counted(export_.get(), false, [&] {
		if (!buf && length)
			throw rpmem::error(EINVAL, "read: buffer is NULL");
		check("read", offset, length, lane, true);
		do_read(buf, offset, length, lane);
	});
}

void pool_calls::set_attr(const control::pool_attr *attr)
{
	counted(export_.get(), false, [&] {
		check_usable();
		do_set_attr(attr);
	});
}

void pool_calls::close()
{
	try {
		do_close();
	} catch (const rpmem::error &e) {
		if (export_) {
			export_->error(e.errnum() != EINVAL);
			export_->finish("failed");
		}
		throw;
	}
	if (export_)
		export_->finish("closed");
}

void pool_calls::export_to(stats_exporter &e, const std::string &target,
                           const std::string &descriptor)
{
	export_ = std::make_unique<pool_export>(e, [this, target, descriptor] {
		auto r = report();
		r.target = target;
		r.descriptor = descriptor;
		return r;
	});
}

} // namespace rpmem::client
