// SPDX-License-Identifier: BSD-3-Clause
// Contiguous mapping of a pool's parts (PMDK set.c util_replica_map_local) and its persistence.
#include "pmdk/pool_map.hpp"

#include "pmdk/bus_error.hpp"

#include <rpmem/error.hpp>

#include <fmt/format.h>
#include <libpmem.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace rpmem::pmdk
{
namespace
{

std::string_view usual_remedy(int e)
{
	switch (e) {
	case EACCES:
	case EPERM:
		return "check that the SSH user may write it and its directory";
	case EROFS:
		return "remount that file system read-write or keep the pool elsewhere";
	case ENOSPC:
	case EDQUOT:
		return "free space on that file system or make the part smaller in the pool set";
	case EMFILE:
	case ENFILE:
		return "raise the open file limit (ulimit -n) of the SSH user";
	case ENOMEM:
		return "raise ulimit -v or use a smaller pool";
	default:
		return {};
	}
}

// Transparent huge pages want 2 MiB aligned mappings; cheap to honour always. A Device DAX
// may want more.
constexpr std::uint64_t default_map_align = 2u << 20;

void *reserve(std::uint64_t size, std::uint64_t map_align)
{
	std::uint64_t len = size + (size >= map_align ? map_align : 0);
	void *p = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		throw rpmem::error(e, system_failure(e, fmt::format("cannot reserve {} bytes of "
		                                                    "address space for the pool",
		                                                    size)));
	}
	auto start = reinterpret_cast<std::uintptr_t>(p);
	auto aligned = len == size ? start : (start + map_align - 1) & ~(map_align - 1);
	if (aligned > start)
		munmap(p, aligned - start);
	if (start + len > aligned + size)
		munmap(reinterpret_cast<void *>(aligned + size), start + len - (aligned + size));
	return reinterpret_cast<void *>(aligned);
}

/** Maps one part at addr; returns whether MAP_SYNC was used. */
bool map_part(void *addr, const map_source &src, bool try_sync)
{
	constexpr int prot = PROT_READ | PROT_WRITE;
	auto off = static_cast<off_t>(src.offset);
	if (try_sync && !src.dax_alignment) { // a Device DAX is persistent memory without it
		void *p = mmap(addr, src.length, prot, MAP_SHARED_VALIDATE | MAP_SYNC | MAP_FIXED,
		               src.fd, off);
		if (p != MAP_FAILED)
			return true;
		// EOPNOTSUPP: not a DAX file system (EINVAL on kernels without MAP_SYNC).
		int e = errno;
		if (e != EOPNOTSUPP && e != EINVAL)
			throw rpmem::error(
			    e, system_failure(e, fmt::format("cannot map pool part {}", src.path)));
	}
	if (mmap(addr, src.length, prot, MAP_SHARED | MAP_FIXED, src.fd, off) == MAP_FAILED) {
		int e = errno;
		throw rpmem::error(
		    e, system_failure(e, fmt::format("cannot map pool part {} ({} "
		                                     "bytes at file offset {})",
		                                     src.path, src.length, src.offset)));
	}
	return false;
}

/** Throws for a persist call that failed with errno: the range may not be durable. */
[[noreturn]] void persist_failed(const char *call, std::uint64_t offset, std::uint64_t len)
{
	int e = errno;
	throw rpmem::error(
	    e,
	    system_failure(e, fmt::format("{} of pool range [{}, +{}) failed", call, offset, len),
	                   "the data may not be durable"));
}

} // namespace

std::string system_failure(int e, std::string_view what, std::string_view todo)
{
	if (todo.empty())
		todo = usual_remedy(e);
	return fmt::format("{}: {}{}{}", what, std::strerror(e), todo.empty() ? "" : "; ", todo);
}

std::uint64_t page_size() noexcept
{
	static const auto size = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
	return size;
}

extent part_extent(std::size_t i, std::uint64_t part_size, std::size_t nparts, std::size_t nhdrs)
{
	std::uint64_t off = i > 0 && nhdrs == nparts ? pool_hdr_size : 0;
	return {off, (part_size - off) & ~(page_size() - 1)};
}

pool_map::pool_map(std::span<const map_source> parts)
{
	for (const auto &p : parts)
		size_ += p.length;
	if (size_ == 0)
		throw rpmem::error(EINVAL, "cannot map a pool of size 0");
	std::uint64_t align = default_map_align;
	for (const auto &p : parts)
		align = std::max(align, p.dax_alignment);
	base_ = reserve(size_, align);
	try {
		auto *addr = static_cast<char *>(base_);
		for (std::size_t i = 0; i < parts.size(); ++i) {
			bool sync = map_part(addr, parts[i], i == 0 || map_sync_);
			if (i == 0)
				map_sync_ = sync;
			else if (sync != map_sync_)
				throw rpmem::error(
				    EINVAL, fmt::format("pool part {} is not on the same kind "
				                        "of file system (DAX or not) as part 0: "
				                        "put all parts on one kind",
				                        parts[i].path));
			ranges_.push_back(std::make_unique<mapped_range>(
			    addr, parts[i].length, parts[i].path, parts[i].offset));
			addr += parts[i].length;
		}
	} catch (...) {
		munmap(base_, size_);
		throw;
	}
	is_pmem_ = map_sync_ || parts[0].dax_alignment != 0 || pmem_is_pmem(base_, size_);
}

pool_map::~pool_map()
{
	munmap(base_, size_);
}

void *pool_map::at(std::uint64_t offset, std::uint64_t len) const
{
	if (offset > size_ || len > size_ - offset)
		throw rpmem::error(EINVAL, fmt::format("range [{}, +{}) lies outside the pool "
		                                       "({} bytes)",
		                                       offset, len, size_));
	return static_cast<char *>(base_) + offset;
}

void pool_map::persist(std::uint64_t offset, std::uint64_t len) const
{
	void *p = at(offset, len);
	if (len == 0)
		return;
	if (is_pmem_) {
		pmem_persist(p, len);
		return;
	}
	if (pmem_msync(p, len) != 0)
		persist_failed("msync", offset, len);
}

void pool_map::deep_persist(std::uint64_t offset, std::uint64_t len) const
{
	void *p = at(offset, len);
	if (len == 0)
		return;
	int rc = is_pmem_ ? pmem_deep_persist(p, len) : pmem_msync(p, len);
	if (rc != 0)
		persist_failed("deep persist", offset, len);
}

header_window::header_window(int fd, bool map_sync, bool is_pmem, const std::string &path,
                             std::uint64_t length)
    : length_(length), is_pmem_(is_pmem), path_(path)
{
	int flags = map_sync ? MAP_SHARED_VALIDATE | MAP_SYNC : MAP_SHARED;
	void *p = mmap(nullptr, length_, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		throw rpmem::error(
		    e, system_failure(e, fmt::format("cannot map the pool header of {}", path)));
	}
	hdr_ = static_cast<pool_hdr *>(p);
}

header_window::~header_window()
{
	munmap(hdr_, length_);
}

void header_window::persist() const
{
	if (is_pmem_) {
		pmem_persist(hdr_, sizeof(*hdr_));
		return;
	}
	if (pmem_msync(hdr_, sizeof(*hdr_)) != 0) {
		int e = errno;
		throw rpmem::error(e, system_failure(e, fmt::format("cannot write the pool header "
		                                                    "of {} to storage (msync)",
		                                                    path_)));
	}
}

} // namespace rpmem::pmdk
