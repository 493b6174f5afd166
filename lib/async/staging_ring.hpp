// SPDX-License-Identifier: BSD-3-Clause
// The staging ring of asynchronous replication (see the class comment).
#pragma once

#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstddef>
#include <sys/mman.h>
#include <unistd.h>

namespace rpmem::async
{

/**
 * Asynchronous mode's snapshots: every persisted range is copied here when persist() returns,
 * and the replicator sends the copy, never the live pool. A range the application rewrites
 * meanwhile cannot reach a replica torn or ahead of the ranges persisted before it, so every
 * replica holds a prefix of the master's persists (and no thread reads memory the application
 * is writing). FIFO: space is allocated at head and freed oldest first.
 */
class staging_ring
{
public:
	staging_ring() = default;
	staging_ring(const staging_ring &) = delete;
	staging_ring &operator=(const staging_ring &) = delete;
	~staging_ring()
	{
		if (buf_)
			::munmap(buf_, cap_);
	}

	void init(std::size_t capacity)
	{
		const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
		cap_ = (capacity + page - 1) / page * page;
		// Populated now: a page fault on first use would cost a persist more than its
		// copy (~10 us per 4 KiB page on a VM).
		void *p = ::mmap(nullptr, cap_, PROT_READ | PROT_WRITE,
		                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED)
			throw rpmem::error(
			    errno,
			    fmt::format(
			        "cannot map {} bytes "
			        "for asynchronous replication: lower "
			        "the lag bound (options::max_lag_bytes, RPMEM_ASYNC_MAX_LAG_BYTES)",
			        cap_));
		buf_ = static_cast<std::byte *>(p);
	}
	std::byte *base() const { return buf_; }
	std::size_t capacity() const { return cap_; }
	/** The largest range one snapshot may hold (larger persists are split). */
	std::size_t max_chunk() const { return cap_ / 4; }

	/** Space for len bytes: its position and how much of the ring it takes (a wrap charges
	 * the skipped tail), or false when full. */
	bool alloc(std::size_t len, std::size_t *pos, std::size_t *charge)
	{
		if (used_ == 0)
			head_ = 0;
		const std::size_t tail = (head_ + cap_ - used_) % cap_;
		if (used_ == cap_)
			return false;
		if (used_ == 0 || head_ >= tail) {
			if (len <= cap_ - head_) {
				*pos = head_;
				*charge = len;
			} else if (len <= tail) {
				*pos = 0;
				*charge = cap_ - head_ + len;
			} else {
				return false;
			}
		} else if (len <= tail - head_) {
			*pos = head_;
			*charge = len;
		} else {
			return false;
		}
		head_ = (*pos + len) % cap_;
		used_ += *charge;
		return true;
	}
	void release(std::size_t charge) { used_ -= charge; }

private:
	std::byte *buf_ = nullptr;
	std::size_t cap_ = 0;
	std::size_t head_ = 0;
	std::size_t used_ = 0;
};

} // namespace rpmem::async
