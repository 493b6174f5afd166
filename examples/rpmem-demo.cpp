// SPDX-License-Identifier: BSD-3-Clause
// rpmem-demo: the main job on an embedded default, through the public C++ API (rpmem::pool).
// Creates a remote pool through rpmemd over SSH, shows its attributes, replicates data,
// closes, reopens, reads the data back from the replica, and removes the pool — printing what
// happened and how long each step took.
//
//   rpmem-demo TARGET [POOLSET]     (POOLSET: the daemon-side pool set name, default demo.set)
#include <rpmem/error.hpp>
#include <rpmem/pool.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <random>
#include <sys/mman.h>
#include <vector>

namespace
{

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t)
{
	return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

std::string uuid_text(const std::array<std::uint8_t, 16> &u)
{
	std::string s;
	for (std::size_t i = 0; i < u.size(); ++i)
		s += fmt::format("{}{:02x}", (i == 4 || i == 6 || i == 8 || i == 10) ? "-" : "",
		                 u[i]);
	return s;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2) {
		fmt::print(stderr, "usage: {} [user@]host[:port] [poolset]\n", argv[0]);
		return 2;
	}
	const std::string target = argv[1];
	const std::string desc = argc > 2 ? argv[2] : "demo.set";
	constexpr std::size_t size = 32 << 20;
	void *mem = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	auto *local = static_cast<std::uint8_t *>(mem);
	const std::span<std::byte> memory(static_cast<std::byte *>(mem), size);

	try {
		rpmem::pool_attr attr;
		std::memcpy(attr.signature.data(), "RPMEMDEM", 8);
		attr.major = 1;
		std::mt19937_64 rng(std::random_device{}());
		for (auto &b : attr.poolset_uuid)
			b = static_cast<std::uint8_t>(rng());
		for (auto &b : attr.uuid)
			b = static_cast<std::uint8_t>(rng());

		auto t = clock_type::now();
		auto pool = rpmem::pool::create(target, desc, memory, attr, 8);
		const unsigned nlanes = pool.lanes();
		fmt::print("created   {} on {} in {:.1f} ms: {} lanes, {}\n", desc, pool.host(),
		           ms_since(t), nlanes, pool.method());

		// Replicate 16 MiB of data in 1 MiB persists, and one small inline persist.
		for (std::size_t i = 4096; i < size; i += 8)
			std::memcpy(local + i, &i, 8);
		t = clock_type::now();
		constexpr std::size_t chunk = 1 << 20;
		std::size_t bytes = 0;
		for (std::size_t off = 4096; off + chunk <= 4096 + (16 << 20); off += chunk) {
			pool.persist(off, chunk);
			bytes += chunk;
		}
		double secs = ms_since(t) / 1000;
		fmt::print("persisted {} MiB in {:.1f} ms ({:.0f} MiB/s)\n", bytes >> 20,
		           secs * 1000, double(bytes >> 20) / secs);
		std::strcpy(reinterpret_cast<char *>(local + 4096), "hello from rpmem");
		t = clock_type::now();
		pool.persist(4096, 64, 1 % nlanes);
		fmt::print("persisted 64 bytes in {:.3f} ms\n", ms_since(t));
		pool.close();
		fmt::print("closed\n");

		std::vector<std::uint8_t> copy(local, local + size);
		std::memset(local, 0, size);
		t = clock_type::now();
		auto again = rpmem::pool::open(target, desc, memory, 8);
		if (!again.attributes())
			throw rpmem::error(EINVAL, "the reopened pool has no attributes");
		const rpmem::pool_attr got = *again.attributes();
		fmt::print("reopened  in {:.1f} ms: signature '{}', poolset uuid {}\n", ms_since(t),
		           std::string(got.signature.data(), 8), uuid_text(got.poolset_uuid));
		if (std::memcmp(got.signature.data(), attr.signature.data(), 8) != 0 ||
		    got.poolset_uuid != attr.poolset_uuid)
			throw rpmem::error(EINVAL, "attributes changed between create and open");
		t = clock_type::now();
		again.read(memory.subspan(4096, 16 << 20), 4096);
		fmt::print("read back {} MiB in {:.1f} ms: \"{}\"\n", 16, ms_since(t),
		           reinterpret_cast<const char *>(local + 4096));
		if (std::memcmp(local + 4096, copy.data() + 4096, 16 << 20) != 0)
			throw rpmem::error(EIO, "the replica does not hold what was persisted");
		fmt::print("verified  the replica holds every persisted byte\n");
		again.close();
		rpmem::pool::remove(target, desc);
		fmt::print("removed   {}\n", desc);
	} catch (const rpmem::error &e) {
		fmt::print(stderr, "rpmem-demo: {}\n", e.what());
		return 1;
	}
	return 0;
}
