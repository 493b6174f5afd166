// SPDX-License-Identifier: BSD-3-Clause
#include "pmdk/bus_error.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <csignal>
#include <cstring>
#include <ctime>
#include <unistd.h>

namespace rpmem::pmdk
{
namespace
{

/** One mapped part, readable from the handler: `end` is published last and cleared first. */
struct range_slot {
	std::atomic<std::uintptr_t> begin{0};
	std::atomic<std::uintptr_t> end{0};
	std::uint64_t file_offset = 0;
	std::array<char, 4096> path{};
	std::atomic<bool> taken{false};
};

std::array<range_slot, 64> ranges;
std::atomic<int> log_fd{-1};

/** A fixed buffer the handler formats into without allocating. */
class line
{
public:
	void add(std::string_view s)
	{
		auto n = std::min(s.size(), buf_.size() - len_);
		std::memcpy(buf_.data() + len_, s.data(), n);
		len_ += n;
	}
	void add_dec(std::uint64_t v, int width = 1)
	{
		char digits[24];
		int n = 0;
		do {
			digits[n++] = static_cast<char>('0' + v % 10);
			v /= 10;
		} while (v > 0 || n < width);
		while (n > 0)
			add({&digits[--n], 1});
	}
	void add_hex(std::uint64_t v)
	{
		add("0x");
		char digits[16];
		int n = 0;
		do {
			digits[n++] = "0123456789abcdef"[v % 16];
			v /= 16;
		} while (v > 0);
		while (n > 0)
			add({&digits[--n], 1});
	}
	void write_to(int fd) const
	{
		for (std::size_t off = 0; off < len_;) {
			ssize_t n = ::write(fd, buf_.data() + off, len_ - off);
			if (n <= 0)
				return;
			off += static_cast<std::size_t>(n);
		}
	}

private:
	std::array<char, 8192> buf_{};
	std::size_t len_ = 0;
};

/** The log's "2024-05-01T12:34:56Z " (days to a civil date: H. Hinnant's algorithm). */
void add_timestamp(line &out)
{
	timespec now{};
	clock_gettime(CLOCK_REALTIME, &now);
	auto secs = static_cast<std::int64_t>(now.tv_sec);
	std::int64_t z = secs / 86400 + 719468;
	std::int64_t era = z / 146097;
	std::int64_t doe = z - era * 146097;
	std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	std::int64_t mp = (5 * doy + 2) / 153;
	std::int64_t day = doy - (153 * mp + 2) / 5 + 1;
	std::int64_t month = mp < 10 ? mp + 3 : mp - 9;
	std::int64_t year = yoe + era * 400 + (month <= 2);
	std::int64_t sod = secs % 86400;
	auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
	out.add_dec(u(year), 4);
	out.add("-");
	out.add_dec(u(month), 2);
	out.add("-");
	out.add_dec(u(day), 2);
	out.add("T");
	out.add_dec(u(sod / 3600), 2);
	out.add(":");
	out.add_dec(u(sod / 60 % 60), 2);
	out.add(":");
	out.add_dec(u(sod % 60), 2);
	out.add("Z ");
}

void describe_fault(line &out, std::uintptr_t addr)
{
	for (const auto &r : ranges) {
		std::uintptr_t end = r.end.load(std::memory_order_acquire);
		std::uintptr_t begin = r.begin.load(std::memory_order_relaxed);
		if (end == 0 || addr < begin || addr >= end)
			continue;
		out.add(" in part ");
		out.add(std::string_view(r.path.data()));
		out.add(" at file offset ");
		out.add_hex(r.file_offset + (addr - begin));
		return;
	}
	out.add(" at address ");
	out.add_hex(addr);
}

void on_bus_error(int, siginfo_t *info, void *)
{
	line out;
	add_timestamp(out);
	out.add("rpmemd[");
	out.add_dec(static_cast<std::uint64_t>(getpid()));
	out.add("]: err: SIGBUS");
	describe_fault(out, reinterpret_cast<std::uintptr_t>(info->si_addr));
	out.add(": the part was truncated or replaced under a live session, or its storage "
	        "failed; rpmemd stops. Never truncate, move or rewrite the parts of an open "
	        "pool: restore the part from a replica (pmempool sync) or re-create the pool\n");
	if (int fd = log_fd.load(std::memory_order_relaxed); fd >= 0 && fd != STDERR_FILENO)
		out.write_to(fd);
	out.write_to(STDERR_FILENO);
	// SA_RESETHAND restored the default action: returning re-runs the access, which ends
	// the process with SIGBUS as before.
}

} // namespace

void report_bus_errors(int fd)
{
	log_fd.store(fd, std::memory_order_relaxed);
	struct sigaction sa {
	};
	sa.sa_sigaction = on_bus_error;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, nullptr);
}

mapped_range::mapped_range(const void *begin, std::size_t length, std::string_view path,
                           std::uint64_t file_offset) noexcept
    : slot_(-1)
{
	for (std::size_t i = 0; i < ranges.size(); ++i) {
		auto &r = ranges[i];
		if (r.taken.exchange(true))
			continue;
		auto n = std::min(path.size(), r.path.size() - 1);
		std::memcpy(r.path.data(), path.data(), n);
		r.path[n] = '\0';
		r.file_offset = file_offset;
		auto b = reinterpret_cast<std::uintptr_t>(begin);
		r.begin.store(b, std::memory_order_relaxed);
		r.end.store(b + length, std::memory_order_release);
		slot_ = static_cast<int>(i);
		return;
	}
}

mapped_range::~mapped_range()
{
	if (slot_ < 0)
		return;
	auto &r = ranges[static_cast<std::size_t>(slot_)];
	r.end.store(0, std::memory_order_release);
	r.taken.store(false);
}

} // namespace rpmem::pmdk
