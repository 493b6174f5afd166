// SPDX-License-Identifier: BSD-3-Clause
// 04-replicated-pool: a pool set with replicas. rpmem::replicated_pool maps the master's local
// parts and connects every REPLICA line; each persist() is durable on the master and on every
// replica when it returns (posted to all replicas, waited on together).
//
//   PMEMPOOLSET
//   64M /pmem/app.part0
//   REPLICA node2 app.set
//   REPLICA node3 app.set
//
//   ./04-replicated-pool pool.set [records]
//
// Each remote replica takes the next RPMEM_CMD entry ("cmd-for-node2|cmd-for-node3").
#include <rpmem/replicated_pool.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace
{

struct record {
	std::uint64_t seq;
	char text[56];
};

void print_replicas(const rpmem::replicated_pool &p)
{
	for (const auto &r : p.replicas())
		std::printf("  replica %zu: %-6s %s %s\n", r.index, r.remote ? "remote" : "local",
		            r.where.c_str(), r.in_sync ? "in sync" : r.error.c_str());
}

} // namespace

int main(int argc, char *argv[])
{
	if (argc < 2) {
		std::fprintf(stderr, "usage: %s pool.set [records]\n", argv[0]);
		return 2;
	}
	const std::size_t n = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1000;
	try {
		{
			auto p = rpmem::replicated_pool::create(argv[1]);
			if (n * sizeof(record) > p.data().size()) {
				std::fprintf(stderr, "%zu records do not fit\n", n);
				return 2;
			}
			std::printf("created %s: %zu bytes, %zu replicas\n", argv[1], p.size(),
			            p.replicas().size());
			auto *log = reinterpret_cast<record *>(p.data().data());
			for (std::size_t i = 0; i < n; ++i) {
				log[i].seq = i + 1;
				std::snprintf(log[i].text, sizeof(log[i].text), "record %zu",
				              i + 1);
				p.persist(
				    std::as_bytes(std::span(&log[i], 1))); // on every replica now
			}
			print_replicas(p);
		} // closes every replica

		auto p = rpmem::replicated_pool::open(argv[1]);
		auto *log = reinterpret_cast<const record *>(p.data().data());
		std::size_t bad = 0;
		for (std::size_t i = 0; i < n; ++i)
			if (log[i].seq != i + 1)
				++bad;
		std::printf("reopened: %zu records: %zu bad\n", n, bad);
		p.close();
		return bad == 0 ? 0 : 1;
	} catch (const rpmem::error &e) {
		std::fprintf(stderr, "04-replicated-pool: %s\n", e.what());
		return 1;
	}
}
