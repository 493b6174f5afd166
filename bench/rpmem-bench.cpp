// SPDX-License-Identifier: BSD-3-Clause
// rpmem-bench: latency and throughput of the rpmem data path against a real rpmemd.
//
//   rpmem-bench [--scenario latency|flush|throughput|open|all] [--csv] TARGET POOLSET
//
// TARGET and POOLSET as for rpmem_create; RPMEM_CMD and RPMEM_SSH* say how to reach rpmemd.
// Medians of many repetitions; nothing here asserts a time.
#include "client/remote_pool.hpp"
#include "rpmem/error.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <sys/mman.h>
#include <thread>
#include <vector>

namespace
{

using clock_type = std::chrono::steady_clock;
using rpmem::client::remote_pool;
namespace ctl = rpmem::control;

struct options {
	std::string target;
	std::string poolset;
	std::string scenario = "all";
	std::size_t pool_size = 256 << 20;
	unsigned iterations = 2000;
	double seconds = 1.0;
	bool csv = false;
	bool relaxed = false;
};

struct row {
	std::string scenario;
	std::string param;
	double median_us = 0;
	double p99_us = 0;
	double mib_s = 0;
};

double median(std::vector<double> v)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

double percentile(std::vector<double> v, double p)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	return v[std::min(v.size() - 1, static_cast<std::size_t>(p * double(v.size())))];
}

double us_since(clock_type::time_point t)
{
	return std::chrono::duration<double, std::micro>(clock_type::now() - t).count();
}

std::string size_text(std::size_t n)
{
	if (n >= (1 << 20) && n % (1 << 20) == 0)
		return fmt::format("{}MiB", n >> 20);
	if (n >= 1024 && n % 1024 == 0)
		return fmt::format("{}KiB", n >> 10);
	return fmt::format("{}B", n);
}

class bench
{
public:
	explicit bench(const options &o) : o_(o)
	{
		void *p = mmap(nullptr, o.pool_size, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED)
			throw rpmem::error(errno, "mmap of the local pool failed");
		mem_ = static_cast<std::uint8_t *>(p);
		std::memset(mem_, 0x5a, o.pool_size);
	}
	~bench() { munmap(mem_, o_.pool_size); }

	std::unique_ptr<remote_pool> connect(unsigned nlanes, bool create = true)
	{
		ctl::pool_attr attr;
		std::memcpy(attr.signature.data(), "RPMEMBEN", 8);
		attr.major = 1;
		attr.uuid[0] = 1;
		try {
			rpmem::client::remote_pool::remove(o_.target, o_.poolset,
			                                   rpmem::client::remove_force);
		} catch (const rpmem::error &) {
		}
		if (create)
			return remote_pool::create(o_.target, o_.poolset, mem_, o_.pool_size,
			                           &nlanes, &attr);
		return remote_pool::open(o_.target, o_.poolset, mem_, o_.pool_size, &nlanes,
		                         nullptr);
	}

	void latency(std::vector<row> &out)
	{
		auto pool = connect(1);
		unsigned flags = o_.relaxed ? rpmem::client::persist_relaxed : 0;
		for (std::size_t size = 8; size <= (4 << 20); size *= 2) {
			unsigned iters =
			    size >= (1 << 20) ? std::max(20u, o_.iterations / 50) : o_.iterations;
			std::vector<double> t;
			t.reserve(iters);
			for (unsigned i = 0; i < iters + 10; ++i) {
				std::size_t off = 4096 + (i * size) % (o_.pool_size - 4096 - size);
				auto start = clock_type::now();
				pool->persist(off, size, 0, flags);
				if (i >= 10)
					t.push_back(us_since(start));
			}
			double med = median(t);
			out.push_back({"persist", size_text(size), med, percentile(t, 0.99),
			               double(size) / med * 1e6 / (1 << 20)});
		}
		pool->close();
	}

	void flush(std::vector<row> &out)
	{
		auto pool = connect(1);
		std::vector<double> base;
		for (unsigned i = 0; i < o_.iterations; ++i) {
			auto start = clock_type::now();
			pool->persist(4096 + (i % 64) * 256, 256, 0, 0);
			base.push_back(us_since(start));
		}
		out.push_back({"persist-256B", "1", median(base), percentile(base, 0.99), 0});
		for (unsigned n = 1; n <= 64; n *= 2) {
			std::vector<double> t;
			for (unsigned i = 0; i < o_.iterations / 2; ++i) {
				auto start = clock_type::now();
				for (unsigned k = 0; k < n; ++k)
					pool->flush(4096 + k * 512, 256, 0,
					            rpmem::client::flush_relaxed);
				pool->drain(0, 0);
				t.push_back(us_since(start));
			}
			out.push_back({"flush256B+drain", fmt::format("{}", n), median(t),
			               percentile(t, 0.99), 0});
		}
		pool->close();
	}

	void throughput(std::vector<row> &out)
	{
		for (unsigned threads : {1u, 2u, 4u, 8u}) {
			auto pool = connect(threads);
			for (std::size_t size : {std::size_t(4096), std::size_t(64 << 10),
			                         std::size_t(1 << 20), std::size_t(4 << 20)}) {
				std::atomic<bool> stop{false};
				std::atomic<std::uint64_t> bytes{0};
				std::vector<std::thread> ts;
				std::size_t slice = (o_.pool_size - 4096) / threads;
				for (unsigned t = 0; t < threads; ++t)
					ts.emplace_back([&, t] {
						std::size_t base = 4096 + t * slice;
						std::size_t off = 0;
						std::uint64_t done = 0;
						while (!stop.load(std::memory_order_relaxed)) {
							if (off + size > slice)
								off = 0;
							pool->persist(base + off, size, t, 0);
							off += size;
							done += size;
						}
						bytes += done;
					});
				auto start = clock_type::now();
				std::this_thread::sleep_for(
				    std::chrono::duration<double>(o_.seconds));
				stop = true;
				for (auto &t : ts)
					t.join();
				double secs = us_since(start) / 1e6;
				out.push_back({fmt::format("throughput-{}T", threads),
				               size_text(size), 0, 0,
				               double(bytes.load()) / secs / (1 << 20)});
			}
			pool->close();
		}
	}

	void open_time(std::vector<row> &out)
	{
		std::vector<double> c, op;
		for (int i = 0; i < 7; ++i) {
			auto start = clock_type::now();
			auto pool = connect(16);
			c.push_back(us_since(start));
			pool->close();
			pool.reset();
			start = clock_type::now();
			pool = connect(16, false);
			op.push_back(us_since(start));
			pool->close();
		}
		out.push_back({"create", "ssh+daemon+fabric", median(c), percentile(c, 0.99), 0});
		out.push_back({"open", "ssh+daemon+fabric", median(op), percentile(op, 0.99), 0});
	}

private:
	options o_;
	std::uint8_t *mem_ = nullptr;
};

void print(const std::vector<row> &rows, bool csv)
{
	if (csv) {
		fmt::print("scenario,param,median_us,p99_us,mib_s\n");
		for (const auto &r : rows)
			fmt::print("{},{},{:.2f},{:.2f},{:.1f}\n", r.scenario, r.param, r.median_us,
			           r.p99_us, r.mib_s);
		return;
	}
	fmt::print("{:<20} {:>18} {:>12} {:>12} {:>10}\n", "scenario", "param", "median µs",
	           "p99 µs", "MiB/s");
	for (const auto &r : rows)
		fmt::print("{:<20} {:>18} {:>12.2f} {:>12.2f} {:>10.1f}\n", r.scenario, r.param,
		           r.median_us, r.p99_us, r.mib_s);
}

} // namespace

int main(int argc, char **argv)
{
	options o;
	CLI::App app{"rpmem-bench: latency and throughput of rpmem against a real rpmemd"};
	app.add_option("target", o.target, "[user@]host[:port] of the replica node")->required();
	app.add_option("poolset", o.poolset, "pool set name on the replica node")->required();
	app.add_option("-s,--scenario", o.scenario, "latency, flush, throughput, open or all")
	    ->check(CLI::IsMember({"latency", "flush", "throughput", "open", "all"}));
	app.add_option("-n,--iterations", o.iterations, "repetitions per latency point");
	app.add_option("-t,--seconds", o.seconds, "seconds per throughput point");
	app.add_option("--pool-size", o.pool_size, "bytes of the local pool");
	app.add_flag("--relaxed", o.relaxed, "latency with RPMEM_PERSIST_RELAXED");
	app.add_flag("--csv", o.csv, "CSV instead of a table");
	CLI11_PARSE(app, argc, argv);
	try {
		bench b(o);
		std::vector<row> rows;
		if (o.scenario == "latency" || o.scenario == "all")
			b.latency(rows);
		if (o.scenario == "flush" || o.scenario == "all")
			b.flush(rows);
		if (o.scenario == "throughput" || o.scenario == "all")
			b.throughput(rows);
		if (o.scenario == "open" || o.scenario == "all")
			b.open_time(rows);
		print(rows, o.csv);
	} catch (const rpmem::error &e) {
		fmt::print(stderr, "rpmem-bench: {}\n", e.what());
		return 1;
	}
	return 0;
}
