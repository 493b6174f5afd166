// SPDX-License-Identifier: BSD-3-Clause
// A client process for fault tests: creates or opens a remote pool and persists a stream of
// ranges, reporting on stdout, one line each, flushed at once:
//   ready <nlanes> <method> <provider> <mr_mode>   the pool is open
//   ack <lane> <offset> <length> <crc>  a persist returned success (crc: FNV-1a 64 of the bytes)
//   error <errno> <ms> <message>        a call failed after <ms> milliseconds; the stream stops
//   closed <errno>                      close() returned (0) or failed (its errno)
// Arguments are key=value: target, desc, cmd, config, known_hosts, identity (ssh settings as the
// sshd fixture makes them), provider, mr (auto|basic|scalable), mode=create|open, size (bytes),
// lanes, threads, ops (per thread, 0: until an error), timeout (RPMEM_TIMEOUT ms),
// control_timeout, keepalive (ms), hold=1 (after ready, wait for stdin to close instead of
// persisting), seed.
#include "client/remote_pool.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace
{

std::mutex out_mutex;

void say(const std::string &line)
{
	std::lock_guard lock(out_mutex);
	std::fwrite(line.data(), 1, line.size(), stdout);
	std::fputc('\n', stdout);
	std::fflush(stdout);
}

std::uint64_t fnv1a(const std::uint8_t *p, std::size_t n)
{
	std::uint64_t h = 1469598103934665603ULL;
	for (std::size_t i = 0; i < n; ++i)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

long long num(const std::map<std::string, std::string> &a, const std::string &k, long long def)
{
	auto it = a.find(k);
	return it == a.end() ? def : std::stoll(it->second);
}

} // namespace

int main(int argc, char **argv)
{
	std::map<std::string, std::string> a;
	for (int i = 1; i < argc; ++i) {
		std::string arg = argv[i];
		auto eq = arg.find('=');
		if (eq == std::string::npos) {
			std::fprintf(stderr, "fault_client: argument '%s' is not key=value\n",
			             argv[i]);
			return 2;
		}
		a[arg.substr(0, eq)] = arg.substr(eq + 1);
	}
	rpmem::client::pool_options opts;
	opts.command = a["cmd"];
	rpmem::ssh::options so;
	so.config_file = a["config"];
	so.known_hosts_file = a["known_hosts"];
	so.identity_files = {a["identity"]};
	so.connect_timeout = std::chrono::milliseconds(5000);
	opts.ssh = so;
	auto s = rpmem::client::read_settings([](const char *) -> const char * { return nullptr; });
	s.providers = a.count("provider") ? a["provider"] : "tcp";
	s.mr_mode = rpmem::fabric::parse_mr_mode(a.count("mr") ? a["mr"] : "auto")
	                .value_or(rpmem::fabric::mr_mode::automatic);
	s.op_timeout = std::chrono::milliseconds(num(a, "timeout", 2000));
	s.control_timeout = std::chrono::milliseconds(num(a, "control_timeout", 5000));
	s.keepalive = std::chrono::milliseconds(num(a, "keepalive", 1500));
	opts.tuning = s;

	auto size = static_cast<std::size_t>(num(a, "size", 8 << 20));
	void *mem = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 2;
	auto *local = static_cast<std::uint8_t *>(mem);
	unsigned nlanes = static_cast<unsigned>(num(a, "lanes", 4));
	std::unique_ptr<rpmem::client::remote_pool> pool;
	auto start = std::chrono::steady_clock::now();
	try {
		rpmem::control::pool_attr attr{};
		std::memcpy(attr.signature.data(), "FAULT", 5);
		if (a["mode"] == "open")
			pool = rpmem::client::remote_pool::open(a["target"], a["desc"], local, size,
			                                        &nlanes, nullptr, opts);
		else
			pool = rpmem::client::remote_pool::create(a["target"], a["desc"], local,
			                                          size, &nlanes, &attr, opts);
	} catch (const rpmem::error &e) {
		auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
		              std::chrono::steady_clock::now() - start)
		              .count();
		say("error " + std::to_string(e.errnum()) + " " + std::to_string(ms) + " " +
		    e.message());
		return 1;
	}
	say(fmt::format("ready {} {} {} {}", nlanes, rpmem::control::to_string(pool->method()),
	                pool->fabric().provider, pool->fabric().mr_mode));
	if (num(a, "hold", 0)) {
		char c;
		while (read(STDIN_FILENO, &c, 1) > 0) {
		}
	} else {
		auto threads = static_cast<unsigned>(num(a, "threads", 2));
		auto ops = num(a, "ops", 0);
		std::atomic<bool> stop{false};
		std::vector<std::thread> ts;
		const std::size_t hdr = 4096;
		std::size_t slice = (size - hdr) / threads;
		for (unsigned t = 0; t < threads; ++t) {
			ts.emplace_back([&, t] {
				std::mt19937_64 rng(static_cast<std::uint64_t>(num(a, "seed", 1)) +
				                    t);
				std::size_t off = hdr + t * slice, end = off + slice;
				for (long long i = 0; (ops == 0 || i < ops) && !stop; ++i) {
					std::size_t len = 1 + rng() % 6000;
					if (off + len > end)
						off = hdr + t * slice; // wrap: later acks supersede
					for (std::size_t k = 0; k < len; ++k)
						local[off + k] = static_cast<std::uint8_t>(rng());
					unsigned lane =
					    (t + threads * static_cast<unsigned>(i % 2)) % nlanes;
					auto t0 = std::chrono::steady_clock::now();
					try {
						pool->persist(off, len, lane, 0);
					} catch (const rpmem::error &e) {
						auto ms = std::chrono::duration_cast<
						              std::chrono::milliseconds>(
						              std::chrono::steady_clock::now() - t0)
						              .count();
						say("error " + std::to_string(e.errnum()) + " " +
						    std::to_string(ms) + " " + e.message());
						stop = true;
						return;
					}
					say("ack " + std::to_string(lane) + " " +
					    std::to_string(off) + " " + std::to_string(len) + " " +
					    std::to_string(fnv1a(local + off, len)));
					off += len;
				}
			});
		}
		for (auto &t : ts)
			t.join();
	}
	try {
		pool->close();
		say("closed 0");
	} catch (const rpmem::error &e) {
		say("closed " + std::to_string(e.errnum()));
	}
	return 0;
}
