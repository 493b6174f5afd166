// SPDX-License-Identifier: BSD-3-Clause
// A chaos writer on rpmem::pool: one remote pool, relaxed flushes and drains. rpmem::pool does
// not reconnect by itself: a failed call throws, and this writer closes the pool and opens it
// again (attempts 100 ms to 1 s apart) until it can go on. Records a drain covered are on the
// replica whatever happens after; the ones after them are written again.
//
//   chaos_pool_writer create|open MEMORY HISTORY TARGET POOLSET THREADS
//       MEMORY: the local memory, a file mapped shared (created zeroed, 8 MiB, by create; a
//       killed writer's is opened again by open). Thread t writes on lane t: batches of 1-4
//       records, each flushed (relaxed), the counter flushed, one drain; every fifth batch
//       persists instead (relaxed flag). After each batch it publishes acked. Stops when stdin
//       ends: closes the pool, prints "closed", exits 0. "error MESSAGE", exit 3, on a
//       failure that is not the replica's (the local memory, the history).
// CHAOS_PACE_US: microseconds each thread sleeps between batches (default 2000).
#include "chaos/history.hpp"

#include <rpmem/pool.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace
{

using namespace rpmem::chaos;

constexpr std::size_t slots = 8192;
constexpr std::size_t memory_size = 8u << 20;

std::atomic<bool> stop{false};

void say(const std::string &line)
{
	std::fputs((line + "\n").c_str(), stdout);
	std::fflush(stdout);
}

[[noreturn]] void fail(const std::string &what)
{
	std::fprintf(stderr, "chaos_pool_writer: %s\n", what.c_str());
	say("error " + what);
	std::_Exit(3);
}

std::span<std::byte> map_memory(const std::string &path, bool create)
{
	const int fd =
	    ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0600);
	if (fd < 0 || (create && ftruncate(fd, memory_size) != 0))
		fail("memory " + path + ": " + std::strerror(errno));
	void *p = mmap(nullptr, memory_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	::close(fd);
	if (p == MAP_FAILED)
		fail("memory " + path + ": mmap: " + std::strerror(errno));
	return {static_cast<std::byte *>(p), memory_size};
}

rpmem::pool_attr attributes()
{
	rpmem::pool_attr a;
	std::memcpy(a.signature.data(), "CHAOSPL", 7);
	a.major = 1;
	for (std::uint8_t i = 0; i < 16; ++i) {
		a.poolset_uuid[i] = static_cast<std::uint8_t>(0x50 + i);
		a.uuid[i] = static_cast<std::uint8_t>(0x60 + i);
		a.next_uuid[i] = a.prev_uuid[i] = a.uuid[i];
	}
	return a;
}

struct session {
	session(rpmem::pool &pool, history &hist, std::chrono::microseconds each)
	    : p(pool), h(hist), pace(each)
	{
	}
	rpmem::pool &p;
	history &h;
	std::chrono::microseconds pace;
	std::atomic<bool> broken{false};
	std::mutex mu;
	std::string why;
};

void worker(session &s, unsigned t)
{
	auto *base = s.p.memory().data();
	auto *count = reinterpret_cast<std::uint64_t *>(base + counters_offset + 8 * t);
	try {
		std::uint64_t k = s.h.acked[t].load() + 1;
		for (std::uint64_t batch = 0; !stop.load() && !s.broken.load(); ++batch) {
			const std::uint64_t n = 1 + batch % 4;
			const bool persist = batch % 5 == 4;
			for (std::uint64_t j = 0; j < n; ++j, ++k) {
				const auto off = record_offset(slots, t, k);
				auto *rec = reinterpret_cast<std::uint64_t *>(base + off);
				for (std::uint64_t i = 0; i < record_words; ++i)
					rec[i] = word(t, k, i);
				if (persist) {
					timed_call c(s.h, t, call::persist);
					s.p.persist(off, record_size, t,
					            rpmem::persist_flags::relaxed);
				} else {
					timed_call c(s.h, t, call::flush);
					s.p.flush(off, record_size, t);
				}
			}
			*count = k - 1;
			if (persist) {
				timed_call c(s.h, t, call::persist);
				s.p.persist(counters_offset + 8 * t, 8, t);
			} else {
				{
					timed_call c(s.h, t, call::flush);
					s.p.flush(counters_offset + 8 * t, 8, t);
				}
				timed_call c(s.h, t, call::drain);
				s.p.drain(t);
			}
			s.h.acked[t].store(k - 1);
			if (s.pace.count() > 0)
				std::this_thread::sleep_for(s.pace);
		}
	} catch (const rpmem::error &e) {
		std::lock_guard g(s.mu);
		if (!s.broken.exchange(true))
			s.why = e.what();
	}
}

void publish(history &h, replica_state st)
{
	h.obs_seq.fetch_add(1);
	h.obs_ns.store(monotonic_ns());
	h.state[0].store(static_cast<std::uint64_t>(st));
	h.obs_seq.fetch_add(1);
}

int run(bool create, const std::string &mem_path, const std::string &hpath,
        const std::string &target, const std::string &poolset, unsigned threads)
{
	if (threads < 1 || threads > max_threads)
		fail("THREADS: 1.." + std::to_string(max_threads));
	history *h = map_history(hpath, create);
	if (create) {
		h->magic = history::magic_value;
		h->threads = threads;
		h->slots = slots;
		h->replicas = 1;
	} else if (h->magic != history::magic_value || h->threads != threads) {
		fail("open: " + hpath + " is not this writer's history");
	}
	h->phase.store(static_cast<std::uint64_t>(life::starting));
	auto memory = map_memory(mem_path, create);
	if (!create)
		for (unsigned t = 0; t < threads; ++t) {
			std::uint64_t holds;
			std::memcpy(&holds, memory.data() + counters_offset + 8 * t, 8);
			if (holds < h->acked[t].load())
				fail("open: thread " + std::to_string(t) +
				     ": the local memory holds " + std::to_string(holds) +
				     " records, " + std::to_string(h->acked[t].load()) +
				     " were acknowledged");
		}
	const char *pace_env = std::getenv("CHAOS_PACE_US");
	const std::chrono::microseconds pace(pace_env ? std::strtoul(pace_env, nullptr, 10) : 2000);
	std::optional<rpmem::pool> p;
	try {
		timed_call c(*h, threads, call::open);
		p.emplace(create
		              ? rpmem::pool::create(target, poolset, memory, attributes(), threads)
		              : rpmem::pool::open(target, poolset, memory, threads));
	} catch (const std::exception &e) {
		fail(std::string(create ? "create " : "open ") + target + ":" + poolset + ": " +
		     e.what());
	}
	h->sessions.fetch_add(1);
	publish(*h, replica_state::in_sync);
	h->phase.store(static_cast<std::uint64_t>(life::running));
	say("ready");
	std::thread input([] {
		char c;
		while (read(0, &c, 1) > 0) {
		}
		stop.store(true);
	});
	for (;;) {
		session s(*p, *h, pace);
		{
			std::vector<std::thread> ws;
			for (unsigned t = 0; t < threads; ++t)
				ws.emplace_back(worker, std::ref(s), t);
			// While the session holds, the replica is in sync: say so every 20 ms (the
			// checks cover what was acknowledged before an observation).
			std::atomic<bool> joined{false};
			std::thread monitor([&] {
				while (!joined.load() && !s.broken.load()) {
					publish(*h, replica_state::in_sync);
					std::this_thread::sleep_for(std::chrono::milliseconds(20));
				}
			});
			for (auto &w : ws)
				w.join();
			joined.store(true);
			monitor.join();
		}
		if (!s.broken.load())
			break; // stdin ended
		publish(*h, replica_state::away);
		std::fprintf(stderr, "chaos_pool_writer: session failed: %s; opening again\n",
		             s.why.c_str());
		try {
			p->close();
		} catch (const std::exception &) {
			// The session is gone; how it ended does not matter.
		}
		p.reset();
		auto delay = std::chrono::milliseconds(100);
		while (!p && !stop.load()) {
			try {
				timed_call c(*h, threads, call::open);
				p.emplace(rpmem::pool::open(target, poolset, memory, threads));
			} catch (const rpmem::error &e) {
				std::fprintf(stderr, "chaos_pool_writer: open: %s\n", e.what());
				std::this_thread::sleep_for(delay);
				delay = std::min(delay * 2, std::chrono::milliseconds(1000));
			}
		}
		if (!p)
			break;
		h->sessions.fetch_add(1);
		publish(*h, replica_state::in_sync);
	}
	input.join();
	h->phase.store(static_cast<std::uint64_t>(life::closing));
	if (p) {
		try {
			timed_call c(*h, threads, call::close);
			p->close();
		} catch (const std::exception &e) {
			say(std::string("close-error ") + e.what());
			return 4;
		}
	}
	h->phase.store(static_cast<std::uint64_t>(life::closed));
	say(p ? "closed" : "closed-away");
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	try {
		if (argc == 7 &&
		    (std::strcmp(argv[1], "create") == 0 || std::strcmp(argv[1], "open") == 0))
			return run(std::strcmp(argv[1], "create") == 0, argv[2], argv[3], argv[4],
			           argv[5], static_cast<unsigned>(std::atoi(argv[6])));
	} catch (const std::exception &e) {
		fail(e.what());
	}
	std::fprintf(stderr, "usage: %s create|open MEMORY HISTORY TARGET POOLSET THREADS\n",
	             argv[0]);
	return 2;
}
