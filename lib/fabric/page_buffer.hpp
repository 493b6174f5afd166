// SPDX-License-Identifier: BSD-3-Clause
// Memory for registration: whole pages of their own, zeroed. A registration must cover whole
// pages (memory_region refuses anything else): under RDMAV_FORK_SAFE or ibv_fork_init the
// verbs provider marks registered pages MADV_DONTFORK, and a forked child would then lose
// whatever else shared those pages (fi_verbs(7)); a std::vector shares its pages with the heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace rpmem::fabric
{

/** The system page size. */
std::size_t page_size() noexcept;

/** True when [addr, addr + len) starts and ends on page boundaries. */
bool whole_pages(const void *addr, std::size_t len) noexcept;

class page_buffer
{
public:
	page_buffer() noexcept = default;
	/** At least `bytes` (rounded up to whole pages, at least one), zeroed. Throws
	 *  rpmem::error (ENOMEM) naming the size. */
	explicit page_buffer(std::size_t bytes);
	~page_buffer();
	page_buffer(page_buffer &&other) noexcept;
	page_buffer &operator=(page_buffer &&other) noexcept;
	page_buffer(const page_buffer &) = delete;
	page_buffer &operator=(const page_buffer &) = delete;

	std::uint8_t *data() const noexcept { return data_; }
	/** Whole pages: what to register. */
	std::size_t size() const noexcept { return size_; }
	std::span<std::uint8_t> bytes() const noexcept { return {data_, size_}; }
	std::uint8_t *begin() const noexcept { return data_; }
	std::uint8_t *end() const noexcept { return data_ + size_; }
	std::uint8_t &operator[](std::size_t i) const noexcept { return data_[i]; }
	/** The memory as `n` objects of type T (trivial types only). */
	template <class T> T *as() const noexcept { return reinterpret_cast<T *>(data_); }

private:
	std::uint8_t *data_ = nullptr;
	std::size_t size_ = 0;
};

} // namespace rpmem::fabric
