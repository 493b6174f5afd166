// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/page_buffer.hpp"

#include <rpmem/error.hpp>

#include <fmt/format.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace rpmem::fabric
{

std::size_t page_size() noexcept
{
	static const auto size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
	return size;
}

bool whole_pages(const void *addr, std::size_t len) noexcept
{
	const auto page = page_size();
	return reinterpret_cast<std::uintptr_t>(addr) % page == 0 && len % page == 0;
}

page_buffer::page_buffer(std::size_t bytes)
{
	const auto page = page_size();
	const std::size_t size = bytes == 0 ? page : (bytes + page - 1) / page * page;
	void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		throw rpmem::error(errno, fmt::format("cannot allocate {} bytes of registered "
		                                      "memory (mmap): out of memory",
		                                      size));
	data_ = static_cast<std::uint8_t *>(p);
	size_ = size;
}

page_buffer::~page_buffer()
{
	if (data_)
		::munmap(data_, size_);
}

page_buffer::page_buffer(page_buffer &&other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0))
{
}

page_buffer &page_buffer::operator=(page_buffer &&other) noexcept
{
	if (this != &other) {
		if (data_)
			::munmap(data_, size_);
		data_ = std::exchange(other.data_, nullptr);
		size_ = std::exchange(other.size_, 0);
	}
	return *this;
}

} // namespace rpmem::fabric
