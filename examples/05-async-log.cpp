// SPDX-License-Identifier: BSD-3-Clause
// 05-async-log: asynchronous replication. An append-only log whose appends are durable on the
// master when persist() returns; the replicas follow in the background, never more than
// max_lag_bytes / max_lag_time behind. barrier() waits until they hold everything before it:
// the point where the application may acknowledge to its own clients.
//
//   ./05-async-log pool.set [records]          (creates the pool set, or opens it if it exists)
#include <rpmem/replicated_pool.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace
{

struct log_header {
	std::uint64_t count; // records appended so far
};

struct record {
	std::uint64_t seq;
	std::uint64_t checksum;
	char payload[240];
};

} // namespace

int main(int argc, char *argv[])
{
	if (argc < 2) {
		std::fprintf(stderr, "usage: %s pool.set [records]\n", argv[0]);
		return 2;
	}
	const std::size_t n = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 4000;
	rpmem::replicated_pool::options o;
	o.replication = rpmem::replicated_pool::mode::asynchronous;
	o.max_lag_bytes = 1u << 20;
	o.max_lag_time = std::chrono::milliseconds(500);
	try {
		rpmem::replicated_pool p = [&] {
			try {
				return rpmem::replicated_pool::open(argv[1], o);
			} catch (const rpmem::error &e) {
				if (e.errnum() != ENOENT)
					throw;
				return rpmem::replicated_pool::create(argv[1], o);
			}
		}();
		auto *hdr = reinterpret_cast<log_header *>(p.data().data());
		auto *records = reinterpret_cast<record *>(p.data().data() + 64);
		const std::size_t room = (p.data().size() - 64) / sizeof(record);
		const std::size_t first = hdr->count;
		if (first + n > room) {
			std::fprintf(stderr, "the log is full (%zu of %zu records)\n", first, room);
			return 2;
		}
		auto t0 = std::chrono::steady_clock::now();
		rpmem::replicated_pool::lag_info max_lag;
		for (std::size_t i = first; i < first + n; ++i) {
			record &r = records[i];
			r.seq = i + 1;
			std::snprintf(r.payload, sizeof(r.payload), "entry %zu", i + 1);
			r.checksum = r.seq * 0x9e3779b97f4a7c15ULL;
			p.persist(std::as_bytes(std::span(&r, 1))); // the record, then the count
			hdr->count = i + 1;
			p.persist(std::as_bytes(std::span(hdr, 1)));
			auto l = p.lag();
			if (l.bytes > max_lag.bytes)
				max_lag = l;
		}
		auto appended = std::chrono::steady_clock::now();
		auto before = p.lag();
		p.barrier(); // every replica holds all records now
		auto after = p.lag();
		auto done = std::chrono::steady_clock::now();
		using us = std::chrono::microseconds;
		std::printf(
		    "appended %zu records (log holds %llu) in %lld us; largest lag %zu bytes; "
		    "lag before barrier %zu bytes (oldest %lld us), after %zu; barrier took "
		    "%lld us\n",
		    n, static_cast<unsigned long long>(hdr->count),
		    static_cast<long long>(std::chrono::duration_cast<us>(appended - t0).count()),
		    max_lag.bytes, before.bytes,
		    static_cast<long long>(std::chrono::duration_cast<us>(before.oldest).count()),
		    after.bytes,
		    static_cast<long long>(
		        std::chrono::duration_cast<us>(done - appended).count()));
		p.close();
		return after.bytes == 0 ? 0 : 1;
	} catch (const rpmem::error &e) {
		std::fprintf(stderr, "05-async-log: %s\n", e.what());
		return 1;
	}
}
