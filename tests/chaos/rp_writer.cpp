// SPDX-License-Identifier: BSD-3-Clause
// A chaos writer on rpmem::replicated_pool, synchronous or asynchronous, failure_policy::degrade
// (a lost replica is reconnected and caught up by the pool itself). Remote replicas are reached
// through the RPMEM_* environment.
//
//   chaos_rp_writer create|open POOLSET HISTORY THREADS sync|async
//       create: a new pool set and history; open: the pool set a killed writer left (its
//       master must hold every record HISTORY says was acknowledged), the history goes on.
//       Each thread appends records (tests/chaos/history.hpp), persisting each and its
//       counter, or flushing both and draining; after each it publishes the record in
//       HISTORY: acked (synchronous: on every replica in sync; asynchronous: on the master).
//       Asynchronous: a barrier every 250 ms publishes what it covered (replicated). A lost
//       replica is brought back by the pool itself, in either mode. Every 20 ms the writer
//       publishes its replicas' states. Stops when stdin ends: closes the
//       pool, prints "closed", exits 0 ("close-error MESSAGE", exit 4, if close failed).
//       "error MESSAGE" and exit 3 when a call failed (degrade: none should).
//   chaos_rp_writer probe POOLSET
//       opens the pool set under failure_policy::fail (a marked replica is refused, ESTALE),
//       closes it: "opened", exit 0, or "refused ERRNO MESSAGE", exit 1.
// CHAOS_PACE_US: microseconds each thread sleeps between records (default 2000).
// CHAOS_WRITER_BUG=ack-unpersisted: a deliberately broken writer for showing that the checks
// catch a lost write (docs/chaos.md): thread 0 acknowledges every 500th record without
// persisting it (only its counter). A run with it must fail.
#include "chaos/history.hpp"

#include <rpmem/replicated_pool.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace
{

using namespace rpmem::chaos;
using rpmem::replicated_pool;

constexpr std::size_t slots = 8192;

std::atomic<bool> stop{false};
bool ack_unpersisted = false; // CHAOS_WRITER_BUG=ack-unpersisted

void say(const std::string &line)
{
	std::fputs((line + "\n").c_str(), stdout);
	std::fflush(stdout);
}

[[noreturn]] void fail(const std::string &what)
{
	std::fprintf(stderr, "chaos_rp_writer: %s\n", what.c_str());
	say("error " + what);
	std::_Exit(3);
}

std::uint64_t *counter(std::byte *base, unsigned t)
{
	return reinterpret_cast<std::uint64_t *>(base + counters_offset + 8 * t);
}

void write_record(std::byte *base, unsigned t, std::uint64_t k)
{
	auto *rec = reinterpret_cast<std::uint64_t *>(base + record_offset(slots, t, k));
	for (std::uint64_t i = 0; i < record_words; ++i)
		rec[i] = word(t, k, i);
}

bool record_whole(const std::byte *base, unsigned t, std::uint64_t k)
{
	const auto *rec =
	    reinterpret_cast<const std::uint64_t *>(base + record_offset(slots, t, k));
	for (std::uint64_t i = 0; i < record_words; ++i)
		if (rec[i] != word(t, k, i))
			return false;
	return true;
}

void writer_thread(replicated_pool &p, history &h, unsigned t, std::uint64_t first,
                   std::chrono::microseconds pace)
{
	auto *base = p.addr();
	try {
		for (std::uint64_t k = first; !stop.load(); ++k) {
			write_record(base, t, k);
			const std::size_t rec = record_offset(slots, t, k);
			if (k % 4 == 0) { // batched: two relaxed flushes, one drain
				{
					timed_call c(h, t, call::flush);
					p.flush(rec, record_size);
				}
				*counter(base, t) = k;
				{
					timed_call c(h, t, call::flush);
					p.flush(counters_offset + 8 * t, 8);
				}
				timed_call c(h, t, call::drain);
				p.drain();
			} else {
				if (!(ack_unpersisted && t == 0 && k % 500 == 1)) {
					timed_call c(h, t, call::persist);
					p.persist(rec, record_size);
				}
				*counter(base, t) = k;
				timed_call c(h, t, call::persist);
				p.persist(counters_offset + 8 * t, 8);
			}
			h.acked[t].store(k);
			if (pace.count() > 0)
				std::this_thread::sleep_for(pace);
		}
	} catch (const std::exception &e) {
		fail(std::string("thread ") + std::to_string(t) + ": " + e.what());
	}
}

replica_state state_of(const replicated_pool::replica_status &r)
{
	if (r.state == "catching_up")
		return replica_state::catching_up;
	if (r.in_sync && r.state == "connected")
		return replica_state::in_sync;
	return replica_state::away;
}

/** Publishes the replicas' states every 20 ms; asynchronous: a barrier every 250 ms. */
void monitor(replicated_pool &p, history &h, bool async)
{
	const unsigned slot = static_cast<unsigned>(h.threads);
	auto next_barrier = std::chrono::steady_clock::now();
	try {
		while (!stop.load()) {
			h.obs_seq.fetch_add(1);
			h.obs_ns.store(monotonic_ns());
			std::size_t j = 0;
			for (const auto &r : p.replicas())
				if (r.remote && j < max_replicas) {
					const auto s = state_of(r);
					if (s == replica_state::in_sync)
						h.unmarked_at_open[j].store(0);
					h.state[j++].store(static_cast<std::uint64_t>(s));
				}
			h.obs_seq.fetch_add(1);
			if (async && std::chrono::steady_clock::now() >= next_barrier) {
				std::uint64_t covered[max_threads];
				for (unsigned t = 0; t < h.threads; ++t)
					covered[t] = h.acked[t].load();
				{
					timed_call c(h, slot, call::barrier);
					p.barrier();
				}
				for (unsigned t = 0; t < h.threads; ++t)
					h.replicated[t].store(covered[t]);
				next_barrier += std::chrono::milliseconds(250);
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		}
	} catch (const std::exception &e) {
		fail(std::string("monitor: ") + e.what());
	}
}

int probe(const std::string &poolset)
{
	try {
		replicated_pool::options o;
		o.on_failure = replicated_pool::failure_policy::fail;
		auto p = replicated_pool::open(poolset, o);
		p.close();
		say("opened");
		return 0;
	} catch (const rpmem::error &e) {
		say("refused " + std::to_string(e.errnum()) + " " + e.what());
		return 1;
	}
}

int run(bool create, const std::string &poolset, const std::string &hpath, unsigned threads,
        bool async)
{
	if (threads < 1 || threads > max_threads)
		fail("THREADS: 1.." + std::to_string(max_threads));
	history *h = map_history(hpath, create);
	if (create) {
		h->magic = history::magic_value;
		h->threads = threads;
		h->slots = slots;
	} else if (h->magic != history::magic_value || h->threads != threads) {
		fail("open: " + hpath + " is not this writer's history");
	}
	h->phase.store(static_cast<std::uint64_t>(life::starting));
	const char *bug = std::getenv("CHAOS_WRITER_BUG");
	ack_unpersisted = bug && std::strcmp(bug, "ack-unpersisted") == 0;
	const char *pace_env = std::getenv("CHAOS_PACE_US");
	const std::chrono::microseconds pace(pace_env ? std::strtoul(pace_env, nullptr, 10) : 2000);
	replicated_pool::options o;
	o.replication =
	    async ? replicated_pool::mode::asynchronous : replicated_pool::mode::synchronous;
	o.on_failure = replicated_pool::failure_policy::degrade;
	o.max_lag_bytes = 4u << 20;
	std::optional<replicated_pool> p;
	try {
		timed_call c(*h, threads, call::open);
		p.emplace(create ? replicated_pool::create(poolset, o)
		                 : replicated_pool::open(poolset, o));
	} catch (const std::exception &e) {
		fail(std::string(create ? "create " : "open ") + poolset + ": " + e.what());
	}
	if (p->size() < record_offset(slots, threads, 0))
		fail("the pool is too small for " + std::to_string(threads) + " threads");
	std::vector<std::uint64_t> first(threads, 1);
	h->replicas = 0;
	for (const auto &r : p->replicas())
		if (r.remote && h->replicas < max_replicas)
			h->unmarked_at_open[h->replicas++].store(
			    state_of(r) == replica_state::in_sync ? 0 : 1);
	if (!create) {
		// Recover: the master holds every acknowledged record; go on after its counter.
		for (unsigned t = 0; t < threads; ++t) {
			const auto holds = *counter(p->addr(), t), acked = h->acked[t].load();
			if (holds < acked)
				fail("open: thread " + std::to_string(t) + ": the master holds " +
				     std::to_string(holds) + " records, " + std::to_string(acked) +
				     " were acknowledged");
			if (holds > 0 && !record_whole(p->addr(), t, holds))
				fail("open: thread " + std::to_string(t) + ": record " +
				     std::to_string(holds) + " on the master is not whole");
			first[t] = holds + 1;
		}
	}
	h->phase.store(static_cast<std::uint64_t>(life::running));
	say("ready");
	std::vector<std::thread> ts;
	for (unsigned t = 0; t < threads; ++t)
		ts.emplace_back(writer_thread, std::ref(*p), std::ref(*h), t, first[t], pace);
	std::thread mon(monitor, std::ref(*p), std::ref(*h), async);
	char c;
	while (read(0, &c, 1) > 0) {
	}
	stop.store(true);
	for (auto &t : ts)
		t.join();
	mon.join();
	h->phase.store(static_cast<std::uint64_t>(life::closing));
	try {
		timed_call tc(*h, threads, call::close);
		p->close();
	} catch (const std::exception &e) {
		say(std::string("close-error ") + e.what());
		return 4;
	}
	h->phase.store(static_cast<std::uint64_t>(life::closed));
	say("closed");
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	try {
		if (argc == 3 && std::strcmp(argv[1], "probe") == 0)
			return probe(argv[2]);
		if (argc == 6 &&
		    (std::strcmp(argv[1], "create") == 0 || std::strcmp(argv[1], "open") == 0) &&
		    (std::strcmp(argv[5], "sync") == 0 || std::strcmp(argv[5], "async") == 0))
			return run(std::strcmp(argv[1], "create") == 0, argv[2], argv[3],
			           static_cast<unsigned>(std::atoi(argv[4])),
			           std::strcmp(argv[5], "async") == 0);
	} catch (const std::exception &e) {
		fail(e.what());
	}
	std::fprintf(stderr,
	             "usage: %s create|open POOLSET HISTORY THREADS sync|async | probe POOLSET\n",
	             argv[0]);
	return 2;
}
