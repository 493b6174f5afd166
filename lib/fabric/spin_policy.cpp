// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/spin_policy.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <fcntl.h>
#include <thread>
#include <unistd.h>

namespace rpmem::fabric
{

std::optional<wait_mode> parse_wait_mode(std::string_view text)
{
	if (text == "block")
		return wait_mode::block;
	if (text == "spin")
		return wait_mode::spin;
	if (text == "adaptive")
		return wait_mode::adaptive;
	return std::nullopt;
}

const char *to_string(wait_mode m)
{
	switch (m) {
	case wait_mode::block:
		return "block";
	case wait_mode::spin:
		return "spin";
	case wait_mode::adaptive:
		break;
	}
	return "adaptive";
}

spin_budget::spin_budget(limits l) : limits_(l), budget_(std::clamp(l.initial, l.min, l.max)) {}

spin_budget::ns spin_budget::next()
{
	if (cooldown_ == 0)
		return budget_;
	--cooldown_;
	return ns{0};
}

void spin_budget::hit(ns after)
{
	typical_ = typical_.count() ? (typical_ * 7 + after) / 8 : after;
	// Room for the slower ones: three times the typical catch.
	budget_ = std::clamp(typical_ * 3, limits_.min, limits_.max);
	++hits_;
	if (++judged_ == window)
		hits_ = judged_ = 0;
}

void spin_budget::miss()
{
	if (++judged_ < window)
		return;
	if (hits_ < min_hits)
		cooldown_ = cooldown;
	hits_ = judged_ = 0;
}

void spin_budget::late(ns after)
{
	if (after > limits_.max)
		return;
	cooldown_ = 0;
	hit(after);
}

void spin_budget::calibrate(ns round_trip)
{
	typical_ = round_trip;
	budget_ = std::clamp(round_trip * 3, limits_.min, limits_.max);
	hits_ = judged_ = cooldown_ = 0;
}

bool core_to_spare(std::string_view loadavg, unsigned cores)
{
	// "0.08 0.03 0.01 2/178 3042": the fourth field is runnable/total.
	auto slash = loadavg.find('/');
	if (slash == std::string_view::npos)
		return false;
	auto space = loadavg.rfind(' ', slash);
	if (space == std::string_view::npos)
		return false;
	unsigned runnable = 0;
	const char *first = loadavg.data() + space + 1;
	auto [end, ec] = std::from_chars(first, loadavg.data() + slash, runnable);
	if (ec != std::errc{} || end != loadavg.data() + slash)
		return false;
	return runnable <= cores;
}

namespace
{

bool read_core_to_spare()
{
	static const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
	int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char buf[128];
	ssize_t n = ::read(fd, buf, sizeof buf - 1);
	::close(fd);
	if (n <= 0)
		return false;
	return core_to_spare({buf, static_cast<std::size_t>(n)}, cores);
}

} // namespace

namespace
{
std::atomic<unsigned> pollers{0};
} // namespace

unsigned spin_licence::limit()
{
	static const unsigned n = std::max(1u, std::thread::hardware_concurrency() / 2);
	return n;
}

spin_licence::spin_licence()
{
	unsigned now = pollers.load(std::memory_order_relaxed);
	while (now < limit())
		if (pollers.compare_exchange_weak(now, now + 1, std::memory_order_acquire)) {
			held_ = true;
			return;
		}
}

spin_licence::~spin_licence()
{
	if (held_)
		pollers.fetch_sub(1, std::memory_order_release);
}

bool machine_has_core_to_spare()
{
	// One reading per millisecond for the whole process: polling threads ask often.
	static std::atomic<std::int64_t> read_at{0};
	static std::atomic<bool> spare{false};
	auto now = std::chrono::duration_cast<std::chrono::microseconds>(
	               std::chrono::steady_clock::now().time_since_epoch())
	               .count();
	auto last = read_at.load(std::memory_order_relaxed);
	if (now - last >= 1000 && read_at.compare_exchange_strong(last, now))
		spare.store(read_core_to_spare(), std::memory_order_relaxed);
	return spare.load(std::memory_order_relaxed);
}

} // namespace rpmem::fabric
