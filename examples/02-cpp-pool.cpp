// SPDX-License-Identifier: BSD-3-Clause
// 02-cpp-pool: the C++ API. The same steps as 01-c-abi with rpmem::pool: create a remote pool
// with attributes, persist a span of the local memory, read it back, reopen the pool and find
// the attributes and the data again, then remove it. Errors are exceptions (rpmem::error).
//
//   ./02-cpp-pool [user@]host[:port] pool.set      (RPMEM_CMD, RPMEM_SSH_* as for 01-c-abi)
#include <rpmem/pool.hpp>

#include <cstdio>
#include <cstring>
#include <span>
#include <string_view>
#include <sys/mman.h>

int main(int argc, char *argv[])
{
	if (argc < 3) {
		std::fprintf(stderr, "usage: %s [user@]host[:port] pool.set\n", argv[0]);
		return 2;
	}
	const std::string target = argv[1], poolset = argv[2];
	constexpr std::size_t pool_size = 8u << 20;
	void *mem =
	    mmap(nullptr, pool_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	std::span<std::byte> memory(static_cast<std::byte *>(mem), pool_size);

	try {
		rpmem::pool_attr attr;
		std::memcpy(attr.signature.data(), "EXAMPLE", 7);
		attr.major = 2;
		attr.uuid[0] = 2;

		// The pool's first 4 KiB hold the remote header; data starts after it.
		std::string_view text = "Hello from rpmem::pool!";
		auto record = memory.subspan(rpmem::pool::header_size, text.size() + 1);
		{
			auto p = rpmem::pool::create(target, poolset, memory, attr, 4);
			std::printf("created %s on %s: %u lanes, %s\n", poolset.c_str(),
			            p.host().c_str(), p.lanes(), p.method());
			std::memcpy(record.data(), text.data(), text.size() + 1);
			p.persist(record); // a span of memory(): durable on the replica now
		}                          // the destructor closes the pool

		std::memset(memory.data(), 0, memory.size()); // forget the local copy
		auto p = rpmem::pool::open(target, poolset, memory);
		// The header keeps what we gave (rpmemd fills in the architecture flags we left
		// zero, as PMDK does).
		const auto &got = p.attributes();
		bool attr_ok = got && got->signature == attr.signature &&
		               got->major == attr.major && got->uuid == attr.uuid;
		p.read(record, rpmem::pool::header_size);
		bool data_ok =
		    std::string_view(reinterpret_cast<const char *>(record.data())) == text;
		std::printf("reopened: attributes %s, data \"%s\"\n", attr_ok ? "match" : "DIFFER",
		            reinterpret_cast<const char *>(record.data()));
		p.close();
		rpmem::pool::remove(target, poolset);
		std::printf("closed and removed: %s\n", attr_ok && data_ok ? "OK" : "MISMATCH");
		return attr_ok && data_ok ? 0 : 1;
	} catch (const rpmem::error &e) {
		std::fprintf(stderr, "02-cpp-pool: %s\n", e.what());
		return 1;
	}
}
