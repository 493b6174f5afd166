// SPDX-License-Identifier: BSD-3-Clause
// rpmem::pool: the public C++ face of client::remote_pool (whose calls count themselves in
// the metrics file: client::pool_calls).
#include "rpmem/pool.hpp"

#include "client/remote_pool.hpp"
#include "client/stats_export.hpp"
#include "cpp/options.hpp"

#include <fmt/format.h>

#include <cerrno>

namespace rpmem
{

namespace
{

client::remote_pool &live(const std::unique_ptr<client::remote_pool> &rp, const char *what)
{
	if (!rp)
		throw rpmem::error(EINVAL,
		                   fmt::format("rpmem::pool::{}: the pool was moved from", what));
	return *rp;
}

/** Reports the pool to the process's metrics file, if there is one. */
void maybe_export(client::remote_pool &rp, const std::string &target, const std::string &poolset)
{
	if (auto *e = client::stats_exporter::instance())
		rp.export_to(*e, target, poolset);
}

} // namespace

void pool::export_stats(const std::string &path, std::chrono::milliseconds interval)
{
	client::stats_exporter::configure(path, interval);
}

pool::pool(std::unique_ptr<client::remote_pool> rp, std::span<std::byte> memory,
           std::optional<pool_attr> attr)
    : rp_(std::move(rp)), memory_(memory), attr_(std::move(attr))
{
}

pool::pool(pool &&) noexcept = default;
pool &pool::operator=(pool &&) noexcept = default;
pool::~pool() = default; // remote_pool's destructor closes without throwing

pool pool::create(const std::string &target, const std::string &poolset,
                  std::span<std::byte> memory, const std::optional<pool_attr> &attr, unsigned lanes,
                  const connect_options &opts)
{
	unsigned n = lanes;
	auto rp = client::remote_pool::create(target, poolset, memory.data(), memory.size(), &n,
	                                      attr ? &*attr : nullptr, cpp::to_client(opts));
	maybe_export(*rp, target, poolset);
	return pool(std::move(rp), memory, attr);
}

pool pool::open(const std::string &target, const std::string &poolset, std::span<std::byte> memory,
                unsigned lanes, const connect_options &opts)
{
	unsigned n = lanes;
	pool_attr a;
	auto rp = client::remote_pool::open(target, poolset, memory.data(), memory.size(), &n, &a,
	                                    cpp::to_client(opts));
	std::optional<pool_attr> attr;
	if (!a.is_zero())
		attr = a;
	maybe_export(*rp, target, poolset);
	return pool(std::move(rp), memory, attr);
}

void pool::remove(const std::string &target, const std::string &poolset, remove_flags flags,
                  const connect_options &opts)
{
	client::remote_pool::remove(target, poolset, static_cast<int>(flags), cpp::to_client(opts));
}

void pool::persist(std::size_t offset, std::size_t length, unsigned lane, persist_flags flags)
{
	auto &rp = live(rp_, "persist");
	rp.persist(offset, length, lane, static_cast<unsigned>(flags));
}

void pool::flush(std::size_t offset, std::size_t length, unsigned lane)
{
	auto &rp = live(rp_, "flush");
	rp.flush(offset, length, lane, client::flush_relaxed);
}

void pool::drain(unsigned lane)
{
	auto &rp = live(rp_, "drain");
	rp.drain(lane, 0);
}

void pool::deep_persist(std::size_t offset, std::size_t length, unsigned lane)
{
	auto &rp = live(rp_, "deep_persist");
	rp.deep_persist(offset, length, lane);
}

void pool::read(std::span<std::byte> buf, std::size_t offset, unsigned lane)
{
	auto &rp = live(rp_, "read");
	rp.read(buf.data(), offset, buf.size(), lane);
}

void pool::set_attributes(const std::optional<pool_attr> &attr)
{
	auto &rp = live(rp_, "set_attributes");
	rp.set_attr(attr ? &*attr : nullptr);
	attr_ = attr;
}

const std::optional<pool_attr> &pool::attributes() const
{
	return attr_;
}

void pool::close()
{
	if (rp_)
		rp_->close();
}

unsigned pool::lanes() const
{
	return live(rp_, "lanes").nlanes();
}

pool_stats pool::stats(unsigned lane) const
{
	return live(rp_, "stats").stats(lane);
}

const std::string &pool::host() const
{
	return live(rp_, "host").host();
}

const char *pool::method() const
{
	return control::to_string(live(rp_, "method").method());
}

std::size_t pool::offset_of(std::span<const std::byte> range, const char *what) const
{
	auto *b = memory_.data();
	if (range.data() < b || range.data() + range.size() > b + memory_.size())
		throw rpmem::error(
		    EINVAL, fmt::format("rpmem::pool::{}: the range ({} bytes at {}) is not "
		                        "inside the pool's memory ({} bytes at {}): pass a "
		                        "span of memory() or an offset",
		                        what, range.size(), static_cast<const void *>(range.data()),
		                        memory_.size(), static_cast<const void *>(b)));
	return static_cast<std::size_t>(range.data() - b);
}

} // namespace rpmem
