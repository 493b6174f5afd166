// SPDX-License-Identifier: BSD-3-Clause
// The data path as a composition: connections (connection.hpp) carry lanes (lane.hpp) whose
// requests are built in their lane batch (lane_batch.hpp) and made durable by the persistence
// method rpmemd chose (persist_method.hpp). data_path_setup.cpp connects them; this file holds
// the public calls.
#include "client/data_path_impl.hpp"

#include "lane/lane_msg.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

namespace rpmem::client
{

namespace fab = rpmem::fabric;
namespace ln = rpmem::lane;

data_path::data_path(const control::fabric_params &fabric, const std::string &host, void *pool_addr,
                     std::size_t pool_size, std::uint32_t nlanes, const settings &s)
{
	try {
		impl_ = std::make_unique<impl>(fabric, host, pool_addr, pool_size, nlanes, s);
	} catch (const rpmem::error &e) {
		// The fabric layer's own errors (out of descriptors, memory registration) do not
		// know which replica they were for.
		if (e.message().starts_with(host + ":"))
			throw;
		throw rpmem::error(e.errnum(),
		                   fmt::format("{}: connecting the pool's {} lanes "
		                               "over {} fabric connection(s): {}",
		                               host, nlanes, fabric.nendpoints, e.message()));
	}
}

data_path::~data_path() = default;

void data_path::set_liveness(std::function<std::chrono::steady_clock::time_point()> heard)
{
	impl_->live.heard = std::move(heard);
}

std::uint32_t data_path::nlanes() const
{
	return impl_->nlanes;
}

void data_path::persist(std::uint64_t offset, std::uint64_t length, unsigned lane)
{
	persist(offset, length, lane, true);
}

void data_path::persist_post(std::uint64_t offset, std::uint64_t length, unsigned lane)
{
	persist(offset, length, lane, false);
}

void data_path::persist(std::uint64_t offset, std::uint64_t length, unsigned lane, bool wait_now)
{
	auto &d = *impl_;
	auto &l = d.use(lane);
	if (length == 0)
		return;
	// Small ranges travel inline (the daemon stores aligned words whole); large ones are
	// written zero-copy. A relaxed persist may tear, so it takes the same path: inline is
	// cheaper.
	auto start = std::chrono::steady_clock::now();
	d.method->persist(l, {offset, length}, wait_now);
	lane_counters::bump(l.counters.persists);
	lane_counters::bump(l.counters.bytes_persisted, length);
	if (wait_now)
		l.counters.round_trip(start);
}

void data_path::flush(std::uint64_t offset, std::uint64_t length, unsigned lane)
{
	auto &d = *impl_;
	if (!length)
		return;
	auto &l = d.use(lane);
	d.method->flush(l, {offset, length}, d.pool + offset, d.res.pool_desc);
	lane_counters::bump(l.counters.flushes);
	lane_counters::bump(l.counters.bytes_persisted, length);
}

void data_path::flush_from(const void *src, std::uint64_t offset, std::uint64_t length,
                           unsigned lane)
{
	auto &d = *impl_;
	if (!length)
		return;
	auto *p = static_cast<const std::uint8_t *>(src);
	if (!d.src_mr || p < d.src_base || length > d.src_size ||
	    p - d.src_base > static_cast<std::ptrdiff_t>(d.src_size - length))
		throw rpmem::error(EINVAL,
		                   fmt::format("{}: flush source [{}, +{}) is not inside the "
		                               "registered source region",
		                               d.host, src, length));
	// Inline bytes join the batch being built while drain_ahead's request is in flight;
	// anything else waits for it.
	auto &l = d.lanes[lane].ahead && d.lanes[lane].batch.travels_inline(length) ? d.lanes[lane]
	                                                                            : d.use(lane);
	d.method->flush(l, {offset, length}, p, d.src_mr->desc());
	lane_counters::bump(l.counters.flushes);
	lane_counters::bump(l.counters.bytes_persisted, length);
}

void data_path::drain(unsigned lane)
{
	drain(lane, true);
}

void data_path::drain_post(unsigned lane)
{
	drain(lane, false);
}

void data_path::drain_ahead(unsigned lane)
{
	auto &d = *impl_;
	auto &l = d.lanes[lane];
	if (l.posted)
		d.use(lane);
	l.conn->check_broken();
	if (l.batch.empty())
		return;
	// Only a batch of inline ranges, and only with nothing else in flight: an RDMA write
	// must not land before an earlier request is applied, and a write's completion would
	// be counted as the request's.
	if (!l.spare_slot || l.batch.last_written() ||
	    (!l.ahead && l.sync.outstanding.load(std::memory_order_acquire) != 0)) {
		drain(lane, false); // as drain_post: the next call on the lane completes it
		return;
	}
	d.method->send_ahead(l);
	l.ahead = true;
	lane_counters::bump(l.counters.drains);
	// The request before this one used the slot the lane builds in next: it must be done.
	// rpmemd answers a lane's requests in order (one worker per connection).
	l.conn->wait(l.sync, 1);
}

void data_path::drain(unsigned lane, bool wait_now)
{
	auto &d = *impl_;
	auto &l = d.use(lane);
	l.conn->check_broken();
	if (!d.method->pending(l))
		return;
	auto start = std::chrono::steady_clock::now();
	d.method->drain(l, wait_now);
	lane_counters::bump(l.counters.drains);
	if (wait_now)
		l.counters.round_trip(start);
}

void data_path::complete(unsigned lane)
{
	auto &l = impl_->lanes[lane];
	if (l.posted || l.ahead)
		impl_->use(lane);
	else
		l.conn->check_broken();
}

void data_path::deep_persist(std::uint64_t offset, std::uint64_t length, unsigned lane)
{
	auto &d = *impl_;
	auto &l = d.use(lane);
	auto start = std::chrono::steady_clock::now();
	d.method->deep_persist(l, {offset, length});
	lane_counters::bump(l.counters.deep_persists);
	lane_counters::bump(l.counters.bytes_persisted, length);
	l.counters.round_trip(start);
}

void data_path::read(void *buf, std::uint64_t offset, std::uint64_t length, unsigned lane)
{
	auto &d = *impl_;
	auto &l = d.use(lane);
	if (length == 0)
		return;
	auto *p = static_cast<std::uint8_t *>(buf);
	auto start = std::chrono::steady_clock::now();
	if (!d.local_mr) {
		d.method->read(l, buf, {offset, length}, nullptr, true);
	} else if (p >= d.pool && p + length <= d.pool + d.pool_size) {
		d.method->read(l, buf, {offset, length}, d.res.pool_desc, true);
	} else {
		// The provider needs a local descriptor: read through whole pages registered for
		// this read (rpmem_read is rare: pool recovery, pmempool sync). The caller's buffer
		// is not registered: it shares its pages with whatever else the heap put there.
		constexpr std::uint64_t bounce_max = 4 << 20;
		fab::page_buffer bounce(std::min(length, bounce_max));
		fab::memory_region mr(*d.domain, bounce.data(), bounce.size(), FI_READ);
		for (std::uint64_t done = 0; done < length;) {
			const auto n = std::min<std::uint64_t>(length - done, bounce.size());
			d.method->read(l, bounce.data(), {offset + done, n}, mr.desc(), true);
			std::memcpy(p + done, bounce.data(), n);
			done += n;
		}
	}
	lane_counters::bump(l.counters.reads);
	lane_counters::bump(l.counters.bytes_read, length);
	l.counters.round_trip(start);
}

std::size_t data_path::batch_cost(std::uint64_t length) const
{
	return impl_->lanes[0].batch.cost(length);
}

std::size_t data_path::batch_capacity() const
{
	return impl_->payload_max;
}

bool data_path::travels_inline(std::uint64_t length) const
{
	return impl_->lanes[0].batch.travels_inline(length);
}

bool data_path::sends_ahead(unsigned lane) const
{
	return lane < impl_->nlanes && impl_->lanes[lane].spare_slot;
}

void data_path::register_source(const void *addr, std::size_t size)
{
	auto &d = *impl_;
	if (d.src_mr)
		throw rpmem::error(
		    EBUSY, fmt::format("{}: a source region is already registered", d.host));
	d.src_mr = std::make_unique<fab::memory_region>(*d.domain, const_cast<void *>(addr), size,
	                                                FI_WRITE | FI_SEND);
	d.src_base = static_cast<const std::uint8_t *>(addr);
	d.src_size = size;
}

lane_stats data_path::stats(unsigned lane) const
{
	auto &d = *impl_;
	if (lane < d.nlanes)
		return d.lanes[lane].counters.snapshot();
	lane_stats total;
	for (const auto &l : d.lanes)
		total += l.counters.snapshot();
	return total;
}

void data_path::shutdown()
{
	impl_->shutdown();
}

void data_path::fail(int err, const std::string &why) noexcept
{
	try {
		impl_->health.fail(err, why);
	} catch (...) {
		// Out of memory for the reason: the path stays as it is, and the caller's bound
		// is not kept this time.
	}
}

} // namespace rpmem::client
