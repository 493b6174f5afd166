// SPDX-License-Identifier: BSD-3-Clause
// replicated-pool-bench (bench/): persist latency and throughput of rpmem::replicated_pool, to
// compare 1 vs N remote replicas (fan-out) and synchronous vs asynchronous mode. Not a test.
//
//   ./replicated-pool-bench pool.set sync|async [ops] [bytes] [threads] [fail|degrade]
//
// Creates the pool set (remote pools through RPMEM_CMD entries in REPLICA order), runs `ops`
// persists of `bytes` at scattered offsets (split over `threads` threads, each on its own
// slots), prints the median and p99 persist latency and the
// throughput (asynchronous: until barrier() returns, i.e. until the replicas hold it all).
// The failure policy is fail unless `degrade` is given (which adds, in synchronous mode, the
// call bound's watch and its stamps). Asynchronous mode also prints its floor: the same persists
// done by hand on the master's mapping with pmem_persist, each followed by the least an
// asynchronous hand-off needs (copy the range aside, push it under a mutex, wake a consumer thread
// that pops it).
#include <rpmem/replicated_pool.hpp>

#include <libpmem.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace
{

/** Median µs of `ops` persists of `bytes` by pmem_persist + a minimal hand-off. */
double local_enqueue_floor(std::byte *base, std::size_t size, std::size_t ops, std::size_t bytes)
{
	std::vector<std::byte> ring(64u << 20);
	std::mutex mu;
	std::condition_variable cv;
	std::deque<std::pair<std::size_t, std::size_t>> q;
	bool stop = false;
	std::thread consumer([&] {
		std::unique_lock lk(mu);
		for (;;) {
			cv.wait(lk, [&] { return stop || !q.empty(); });
			if (q.empty())
				return;
			q.pop_front();
		}
	});
	const std::size_t slots = (size - 4096) / bytes;
	std::size_t slot = 0, pos = 0;
	std::vector<double> lat;
	using clk = std::chrono::steady_clock;
	for (std::size_t i = 0; i < ops; ++i) {
		slot = (slot + 7919) % slots;
		std::byte *r = base + 4096 + slot * bytes;
		std::memset(r, static_cast<int>(i), 64);
		auto t0 = clk::now();
		pmem_persist(r, bytes);
		{
			std::lock_guard g(mu);
			if (pos + bytes > ring.size())
				pos = 0;
			std::memcpy(ring.data() + pos, r, bytes);
			q.emplace_back(pos, bytes);
			pos += bytes;
		}
		cv.notify_one();
		lat.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
	}
	{
		std::lock_guard g(mu);
		stop = true;
	}
	cv.notify_one();
	consumer.join();
	std::sort(lat.begin(), lat.end());
	return lat[lat.size() / 2];
}

} // namespace

int main(int argc, char *argv[])
{
	if (argc < 3) {
		std::fprintf(
		    stderr,
		    "usage: %s pool.set sync|async [ops] [bytes] [threads] [fail|degrade]\n",
		    argv[0]);
		return 2;
	}
	const std::string mode = argv[2];
	const std::size_t ops = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 5000;
	const std::size_t bytes = argc > 4 ? std::strtoul(argv[4], nullptr, 10) : 4096;
	const std::size_t threads =
	    std::max<std::size_t>(1, argc > 5 ? std::strtoul(argv[5], nullptr, 10) : 1);
	rpmem::replicated_pool::options o;
	if (mode == "async")
		o.replication = rpmem::replicated_pool::mode::asynchronous;
	if (argc > 6 && std::string(argv[6]) == "degrade")
		o.on_failure = rpmem::replicated_pool::failure_policy::degrade;
	o.max_lag_bytes = 64u << 20;
	try {
		auto p = rpmem::replicated_pool::create(argv[1], o);
		auto data = p.data();
		const std::size_t slots = data.size() / bytes;
		std::vector<double> lat;
		lat.reserve(ops);
		std::mutex lat_mu;
		using clk = std::chrono::steady_clock;
		// Warm up: every page of the pool once, on the master and on every replica (a
		// replica's first touch of a page costs more than the round trip).
		for (std::size_t off = 0; off < data.size(); off += 1u << 20)
			p.persist(
			    data.subspan(off, std::min<std::size_t>(1u << 20, data.size() - off)));
		p.barrier();
		auto run = [&](std::size_t t) {
			std::vector<double> mine;
			mine.reserve(ops / threads);
			std::size_t k = t;
			for (std::size_t i = 0; i < ops / threads; ++i) {
				k = (k + 7919 * threads) % (slots - slots % threads);
				auto r = data.subspan(k * bytes, bytes); // slots = t mod threads
				std::memset(r.data(), static_cast<int>(i), 64);
				auto t0 = clk::now();
				p.persist(r);
				mine.push_back(
				    std::chrono::duration<double, std::micro>(clk::now() - t0)
				        .count());
			}
			std::lock_guard g(lat_mu);
			lat.insert(lat.end(), mine.begin(), mine.end());
		};
		auto start = clk::now();
		std::vector<std::thread> workers;
		for (std::size_t t = 0; t < threads; ++t)
			workers.emplace_back(run, t);
		for (auto &w : workers)
			w.join();
		auto posted = clk::now();
		p.barrier();
		auto end = clk::now();
		std::sort(lat.begin(), lat.end());
		double secs = std::chrono::duration<double>(end - start).count();
		std::printf(
		    "%s replicas=%zu threads=%zu ops=%zu bytes=%zu: persist median %.1f us p99 "
		    "%.1f us; throughput %.1f MiB/s (%.0f ops/s); barrier %.1f ms\n",
		    mode.c_str(), p.replicas().size() - 1, threads, lat.size(), bytes,
		    lat[lat.size() / 2], lat[lat.size() * 99 / 100],
		    double(lat.size() * bytes) / secs / (1 << 20), double(lat.size()) / secs,
		    std::chrono::duration<double, std::milli>(end - posted).count());
		// After the barrier: the replicator, which competed with the persists above
		// for the CPU, leaves the floor alone (the ratio errs against us).
		if (mode == "async") {
			double floor = local_enqueue_floor(p.addr(), p.size(), ops, bytes);
			std::printf(
			    "async floor (pmem_persist + copy + queue + wake-up) median %.2f us: "
			    "persist/floor %.2f\n",
			    floor, lat[lat.size() / 2] / floor);
		}
		p.close();
		return 0;
	} catch (const rpmem::error &e) {
		std::fprintf(stderr, "replicated-pool-bench: %s\n", e.what());
		return 1;
	}
}
