// SPDX-License-Identifier: BSD-3-Clause
// 03-flush-drain: batching. persist() costs a round trip each; flush() only posts the write, and
// one drain() makes everything flushed on the lane durable with a single round trip. Writes
// 256 records both ways, times them, and checks the replica holds every record.
//
//   ./03-flush-drain [user@]host[:port] pool.set [records]
#include <rpmem/pool.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <vector>

namespace
{

constexpr std::size_t record_size = 256;

void fill(std::span<std::byte> memory, std::size_t n, std::uint8_t round)
{
	for (std::size_t i = 0; i < n; ++i)
		std::memset(memory.data() + rpmem::pool::header_size + i * record_size,
		            static_cast<int>((i + round) & 0xff), record_size);
}

double elapsed_us(std::chrono::steady_clock::time_point since)
{
	return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - since)
	    .count();
}

} // namespace

int main(int argc, char *argv[])
{
	if (argc < 3) {
		std::fprintf(stderr, "usage: %s [user@]host[:port] pool.set [records]\n", argv[0]);
		return 2;
	}
	const std::size_t n = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 256;
	constexpr std::size_t pool_size = 8u << 20;
	if (n == 0 || rpmem::pool::header_size + n * record_size > pool_size) {
		std::fprintf(stderr, "records: 1..%zu\n",
		             (pool_size - rpmem::pool::header_size) / record_size);
		return 2;
	}
	void *mem =
	    mmap(nullptr, pool_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	std::span<std::byte> memory(static_cast<std::byte *>(mem), pool_size);

	try {
		rpmem::pool_attr attr;
		std::memcpy(attr.signature.data(), "EXAMPLE", 7);
		attr.major = 3;
		auto p = rpmem::pool::create(argv[1], argv[2], memory, attr);

		fill(memory, n, 0);
		auto t0 = std::chrono::steady_clock::now();
		for (std::size_t i = 0; i < n; ++i)
			p.persist(rpmem::pool::header_size + i * record_size, record_size);
		double each = elapsed_us(t0);

		fill(memory, n, 1);
		t0 = std::chrono::steady_clock::now();
		for (std::size_t i = 0; i < n; ++i)
			p.flush(rpmem::pool::header_size + i * record_size, record_size);
		p.drain(); // one round trip for all n records
		double batched = elapsed_us(t0);

		std::printf(
		    "%zu records of %zu bytes: persist each %.0f us, flush each + one drain "
		    "%.0f us\n",
		    n, record_size, each, batched);

		std::vector<std::byte> back(n * record_size);
		p.read(memory.subspan(rpmem::pool::header_size, n * record_size),
		       rpmem::pool::header_size); // reading into the pool: fine for every provider
		std::memcpy(back.data(), memory.data() + rpmem::pool::header_size, back.size());
		std::size_t bad = 0;
		for (std::size_t i = 0; i < n; ++i)
			for (std::size_t j = 0; j < record_size; ++j)
				if (back[i * record_size + j] !=
				    static_cast<std::byte>((i + 1) & 0xff)) {
					++bad;
					break;
				}
		p.close();
		rpmem::pool::remove(argv[1], argv[2]);
		std::printf("replica holds %zu records: %zu bad\n", n, bad);
		return bad == 0 ? 0 : 1;
	} catch (const rpmem::error &e) {
		std::fprintf(stderr, "03-flush-drain: %s\n", e.what());
		return 1;
	}
}
