// SPDX-License-Identifier: BSD-3-Clause
#include "replication/local_map.hpp"

#include "rpmem/error.hpp"

#include <fmt/format.h>
#include <libpmem.h>

#include <cerrno>
#include <cstring>

namespace rpmem::replication
{

local_map::local_map(pmdk::part_set parts)
    : parts_(std::make_unique<pmdk::part_set>(std::move(parts)))
{
}

local_map::~local_map() = default;

std::unique_ptr<local_map> local_map::create(const poolset::replica &r, std::size_t size)
{
	std::unique_ptr<local_map> l(
	    new local_map(pmdk::part_set::create(r.parts, r.parts.size(), pmdk::part_rules{})));
	try {
		l->map(r, size);
	} catch (...) {
		l->parts_->discard();
		throw;
	}
	return l;
}

std::unique_ptr<local_map> local_map::open(const poolset::replica &r, std::size_t size)
{
	std::unique_ptr<local_map> l(
	    new local_map(pmdk::part_set::open(r.parts, r.parts.size(), pmdk::part_rules{})));
	l->map(r, size);
	return l;
}

void local_map::map(const poolset::replica &r, std::size_t size)
{
	// Only as much of this replica as the master has: a replica may be larger.
	if (parts_->pool_size() < size)
		throw rpmem::error(EINVAL,
		                   fmt::format("the replica on line {} holds {} bytes, less "
		                               "than the master's {}: make its parts larger",
		                               r.line, parts_->pool_size(), size));
	map_ = parts_->map(size);
}

void local_map::write_header(std::size_t part, const header_fields &h)
{
	auto w = parts_->header(part, *map_);
	w.hdr() = pmdk::encode(h);
	w.persist();
}

header_fields local_map::read_header(std::size_t part) const
{
	const pmdk::pool_hdr img = parts_->read_header(part);
	if (auto why = pmdk::check_header_alone(img))
		throw rpmem::error(EINVAL,
		                   fmt::format("pool part {}: {}: it is not a part of a "
		                               "replicated pool (create the pool set first)",
		                               path(part), *why));
	return pmdk::decode(img);
}

void local_map::persist(std::size_t off, std::size_t len) const
{
	map_->persist(off, len);
}

void local_map::copy_persist(const std::byte *src, std::size_t off, std::size_t len) const
{
	if (is_pmem()) {
		pmem_memcpy_persist(base() + off, src + off, len);
		return;
	}
	std::memcpy(base() + off, src + off, len);
	persist(off, len);
}

void local_map::copy_flush(const std::byte *src, std::size_t off, std::size_t len) const
{
	if (is_pmem()) {
		pmem_memcpy_nodrain(base() + off, src + off, len);
		return;
	}
	std::memcpy(base() + off, src + off, len);
	persist(off, len);
}

void local_map::flush(std::size_t off, std::size_t len) const
{
	if (is_pmem())
		pmem_flush(base() + off, len);
	else
		persist(off, len);
}

void local_map::drain() const
{
	if (is_pmem())
		pmem_drain();
}

} // namespace rpmem::replication
