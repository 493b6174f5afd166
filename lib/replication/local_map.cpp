// SPDX-License-Identifier: BSD-3-Clause
#include "replication/local_map.hpp"

#include "pmdk/part_file.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>
#include <libpmem.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rpmem::replication
{

namespace
{

[[noreturn]] void fail(int err, const std::string &what)
{
	throw rpmem::error(err, fmt::format("{}: {}", what, std::strerror(err)));
}

} // namespace

local_map::~local_map() = default;

std::unique_ptr<local_map> local_map::create(const poolset::replica &r, std::size_t size)
{
	std::unique_ptr<local_map> l(new local_map);
	for (const auto &p : r.parts) {
		l->fds_.push_back(pmdk::create_part(p.path, p.size));
		l->paths_.push_back(p.path);
	}
	l->map(r, size);
	return l;
}

std::unique_ptr<local_map> local_map::open(const poolset::replica &r, std::size_t size)
{
	std::unique_ptr<local_map> l(new local_map);
	for (const auto &p : r.parts) {
		l->fds_.push_back(pmdk::open_part(p.path));
		l->paths_.push_back(p.path);
		struct stat st {
		};
		if (fstat(l->fds_.back().get(), &st) != 0)
			fail(errno, fmt::format("cannot stat pool part {}", p.path));
		if (static_cast<std::uint64_t>(st.st_size) < p.size)
			throw rpmem::error(EINVAL,
			                   fmt::format("pool part {} has {} bytes but the pool "
			                               "set says {}: fix the size on line {}",
			                               p.path, st.st_size, p.size, p.line));
	}
	l->map(r, size);
	return l;
}

void local_map::map(const poolset::replica &r, std::size_t size)
{
	// Only as much of this replica as the master has: a replica may be larger.
	std::vector<pmdk::map_source> sources;
	std::size_t at = 0;
	for (std::size_t i = 0; i < r.parts.size() && at < size; ++i) {
		auto [off, len] =
		    pmdk::part_extent(i, r.parts[i].size, r.parts.size(), r.parts.size());
		len = std::min<std::uint64_t>(len, size - at);
		sources.push_back(
		    {.fd = fds_[i].get(), .offset = off, .length = len, .path = r.parts[i].path});
		at += len;
	}
	if (at < size)
		throw rpmem::error(EINVAL,
		                   fmt::format("the replica on line {} holds {} bytes, less "
		                               "than the master's {}: make its parts larger",
		                               r.line, at, size));
	map_ = std::make_unique<pmdk::pool_map>(sources);
}

void local_map::write_header(std::size_t part, const header_fields &h)
{
	if (part == 0) {
		auto hdr = pmdk::encode(h);
		std::memcpy(base(), &hdr, sizeof(hdr));
		persist(0, sizeof(hdr));
		return;
	}
	auto img = pmdk::encode(h);
	if (pwrite(fds_[part].get(), &img, sizeof(img), 0) != static_cast<ssize_t>(sizeof(img)) ||
	    fsync(fds_[part].get()) != 0)
		fail(errno, fmt::format("cannot write the pool header of {}", paths_[part]));
}

header_fields local_map::read_header(std::size_t part) const
{
	pmdk::pool_hdr img;
	if (part == 0)
		std::memcpy(&img, base(), sizeof(img));
	else if (pread(fds_[part].get(), &img, sizeof(img), 0) != static_cast<ssize_t>(sizeof(img)))
		fail(errno ? errno : EIO,
		     fmt::format("cannot read the pool header of {}", paths_[part]));
	if (auto why = pmdk::check_header_alone(img))
		throw rpmem::error(EINVAL,
		                   fmt::format("pool part {}: {}: it is not a part of a "
		                               "replicated pool (create the pool set first)",
		                               paths_[part], *why));
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
