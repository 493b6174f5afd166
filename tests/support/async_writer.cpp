// SPDX-License-Identifier: BSD-3-Clause
// A writer for the asynchronous-replication prefix test: creates POOLSET as a replicated_pool in
// asynchronous mode (remote replicas reached through the RPMEM_* environment) and appends the
// prefix_log records step after step until the log is full or it is killed.
//   rpmem_async_writer POOLSET SEED MAX_LAG_BYTES
// stdout: "ready" once the pool is created, "full" when the log is full (then it waits to be
// killed), "error <message>" when a call failed.
#include "support/prefix_log.hpp"

#include <rpmem/replicated_pool.hpp>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace
{

void say(const std::string &line)
{
	std::fputs((line + "\n").c_str(), stdout);
	std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv)
{
	namespace pl = rpmem::test::prefix_log;
	if (argc != 4) {
		std::fprintf(stderr, "usage: %s POOLSET SEED MAX_LAG_BYTES\n", argv[0]);
		return 2;
	}
	try {
		rpmem::replicated_pool::options o;
		o.replication = rpmem::replicated_pool::mode::asynchronous;
		o.max_lag_bytes = std::strtoull(argv[3], nullptr, 10);
		o.max_lag_time = std::chrono::milliseconds(2000);
		auto p = rpmem::replicated_pool::create(argv[1], o);
		say("ready");
		std::mt19937_64 rng(std::strtoull(argv[2], nullptr, 10));
		auto *base = reinterpret_cast<std::uint8_t *>(p.addr());
		std::size_t pos = pl::log_offset;
		for (std::uint64_t step = 1;; ++step) {
			auto sizes = pl::step_sizes(rng);
			std::size_t total = 0;
			for (auto n : sizes)
				total += pl::record_size(n);
			if (pos + total > p.size())
				break;
			const bool together = rng() % 2;
			const std::size_t start = pos;
			for (std::uint32_t i = 0; i < sizes.size(); ++i) {
				std::size_t n = pl::write_record(base + pos, step, i, sizes[i]);
				if (!together)
					p.persist(pos, n);
				pos += n;
			}
			if (together)
				p.persist(start, pos - start);
			pl::commit c{step, pos};
			std::memcpy(base + pl::commit_offset, &c, sizeof(c));
			p.persist(pl::commit_offset, sizeof(c));
		}
		p.barrier();
		say("full");
		pause();
	} catch (const std::exception &e) {
		say(std::string("error ") + e.what());
		return 1;
	}
	return 0;
}
