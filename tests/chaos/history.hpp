// SPDX-License-Identifier: BSD-3-Clause
// What the chaos writers publish and how their records lie in a pool, shared by the writers
// (rp_writer.cpp, pool_writer.cpp) and the driver that checks replicas against it.
//
// A history is a small file outside the pools, mapped shared by its writer and read by the
// driver at any moment, also after the writer was killed. A thread's record k is 64 bytes,
// word(t, k, i) for i in 0..7 (the same pattern as tests/support/pmemobj_log.c), in slot
// k % slots of the thread's ring; its counter holds the last k it wrote.
//
// Pool layout (offsets from the pool's start, which are the replica part file's offsets too):
//   4096 + 8 t                    thread t's counter
//   8192 + (t slots + k % slots) 64   thread t's record k
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace rpmem::chaos
{

inline constexpr int max_threads = 16;
inline constexpr int max_replicas = 8;
inline constexpr std::size_t counters_offset = 4096;
inline constexpr std::size_t rings_offset = 8192;
inline constexpr std::size_t record_words = 8;
inline constexpr std::size_t record_size = record_words * 8;

/** Word i of thread t's record k (tests/support/pmemobj_log.c's word()). */
constexpr std::uint64_t word(std::uint64_t t, std::uint64_t k, std::uint64_t i)
{
	std::uint64_t x = (t << 56) ^ (k << 8) ^ i ^ 0x9e3779b97f4a7c15ull;
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 29);
}

inline std::size_t record_offset(std::size_t slots, std::uint64_t t, std::uint64_t k)
{
	return rings_offset + (t * slots + k % slots) * record_size;
}

/** A writer's state of one replica, as it last observed it. */
enum class replica_state : std::uint64_t { unknown = 0, in_sync = 1, away = 2, catching_up = 3 };

inline const char *name(replica_state s)
{
	switch (s) {
	case replica_state::in_sync:
		return "in_sync";
	case replica_state::away:
		return "away";
	case replica_state::catching_up:
		return "catching_up";
	default:
		return "unknown";
	}
}

enum class life : std::uint64_t { starting = 0, running = 1, closing = 2, closed = 3 };

/** What a call in progress is (call_what), for the report of one that took too long. */
enum class call : std::uint64_t { none = 0, persist, flush, drain, barrier, open, close };

inline const char *name(call c)
{
	switch (c) {
	case call::persist:
		return "persist";
	case call::flush:
		return "flush";
	case call::drain:
		return "drain";
	case call::barrier:
		return "barrier";
	case call::open:
		return "open";
	case call::close:
		return "close";
	default:
		return "none";
	}
}

inline std::uint64_t monotonic_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
	       static_cast<std::uint64_t>(ts.tv_nsec);
}

/** The shared file. Slot `threads` of the call arrays is the writer's own thread (barriers). */
struct history {
	static constexpr std::uint64_t magic_value = 0x59524f5453494843ull; // "CHISTORY"
	std::uint64_t magic;
	std::uint64_t threads;
	std::uint64_t replicas;
	std::uint64_t slots;
	std::atomic<std::uint64_t> phase; // life
	// Synchronous writers: record k is durable on every replica in sync when acked >= k
	// (rpmem::pool: on its replica, whatever happens after). Asynchronous: on the master.
	std::atomic<std::uint64_t> acked[max_threads];
	// Asynchronous writers: covered by a barrier that returned (on every replica in sync).
	std::atomic<std::uint64_t> replicated[max_threads];
	std::atomic<std::uint64_t> call_start_ns[max_threads + 1]; // 0: no call in progress
	std::atomic<std::uint64_t> call_what[max_threads + 1];
	std::atomic<std::uint64_t> longest_ns[max_threads + 1];
	std::atomic<std::uint64_t> longest_what[max_threads + 1];
	// The writer's view of its replicas: obs_seq is odd while obs_ns and state change;
	// obs_ns is when the look began.
	std::atomic<std::uint64_t> obs_seq;
	std::atomic<std::uint64_t> obs_ns;
	std::atomic<std::uint64_t> state[max_replicas];
	std::atomic<std::uint64_t> sessions; // rpmem::pool writers: sessions opened so far
	// replicated_pool writers: 1 while remote replica r may lack the "possibly behind" mark by
	// the documented gap (replicated_pool.hpp, rpmem(1)): unreachable when this process opened
	// the set, it is marked only when the healer reaches it, before it is caught up. Set at
	// open for each replica not connected then, cleared once the writer saw it in sync.
	std::atomic<std::uint64_t> unmarked_at_open[max_replicas];
};

static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

/** Times one call of slot `slot` into the history. */
class timed_call
{
public:
	timed_call(history &h, std::size_t slot, call what) : h_(h), slot_(slot), what_(what)
	{
		h_.call_what[slot_].store(static_cast<std::uint64_t>(what));
		h_.call_start_ns[slot_].store(monotonic_ns());
	}
	~timed_call()
	{
		const auto took = monotonic_ns() - h_.call_start_ns[slot_].load();
		h_.call_start_ns[slot_].store(0);
		if (took > h_.longest_ns[slot_].load()) {
			h_.longest_ns[slot_].store(took);
			h_.longest_what[slot_].store(static_cast<std::uint64_t>(what_));
		}
	}
	timed_call(const timed_call &) = delete;
	timed_call &operator=(const timed_call &) = delete;

private:
	history &h_;
	std::size_t slot_;
	call what_;
};

/** Maps a history file shared: a new one zeroed (create; never truncated first, so a reader
 *  that mapped it already never meets a short file), or an existing one. Throws
 *  std::runtime_error naming the file and the system's reason. */
inline history *map_history(const std::string &path, bool create)
{
	const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
	if (fd < 0 || (create && ftruncate(fd, sizeof(history)) != 0)) {
		const int err = errno;
		if (fd >= 0)
			::close(fd);
		throw std::runtime_error("history " + path + ": " + std::strerror(err));
	}
	void *p = mmap(nullptr, sizeof(history), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	const int err = errno;
	::close(fd);
	if (p == MAP_FAILED)
		throw std::runtime_error("history " + path + ": mmap: " + std::strerror(err));
	if (create)
		std::memset(p, 0, sizeof(history));
	return static_cast<history *>(p);
}

inline void unmap_history(history *h) noexcept
{
	if (h)
		munmap(h, sizeof(history));
}

} // namespace rpmem::chaos
