// SPDX-License-Identifier: BSD-3-Clause
// Offsets and checksum follow PMDK 1.12 pool_hdr.h / util.c (util_checksum_compute).
#include "replication/pool_header.hpp"

#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <sys/random.h>
#include <sys/types.h>

namespace rpmem::replication
{

static_assert(std::endian::native == std::endian::little,
              "pool headers are little-endian; add byte swapping for this host");

namespace
{

// Field offsets inside struct pool_hdr.
constexpr std::size_t off_signature = 0, off_major = 8, off_compat = 12, off_incompat = 16,
                      off_ro_compat = 20, off_poolset = 24, off_uuid = 40, off_prev_part = 56,
                      off_next_part = 72, off_prev_repl = 88, off_next_repl = 104, off_crtime = 120,
                      off_arch = 128, off_csum_2k_end = 2048, off_checksum = 4088;

std::uint64_t fletcher64(const std::uint8_t *data, std::size_t end_off)
{
	std::uint32_t lo = 0, hi = 0;
	for (std::size_t off = 0; off + 4 <= pool_hdr_size; off += 4) {
		bool skipped = off >= end_off || (off >= off_checksum && off < off_checksum + 8);
		if (!skipped) {
			std::uint32_t w;
			std::memcpy(&w, data + off, 4);
			lo += w;
		}
		hi += lo;
	}
	return static_cast<std::uint64_t>(hi) << 32 | lo;
}

std::uint64_t checksum_of(const std::uint8_t *hdr)
{
	std::uint32_t incompat;
	std::memcpy(&incompat, hdr + off_incompat, 4);
	return fletcher64(hdr,
	                  (incompat & feat_incompat_cksum_2k) ? off_csum_2k_end : off_checksum);
}

template <class T> void put(std::uint8_t *base, std::size_t off, const T &v)
{
	std::memcpy(base + off, &v, sizeof(v));
}
template <class T> void get(const std::uint8_t *base, std::size_t off, T &v)
{
	std::memcpy(&v, base + off, sizeof(v));
}

template <class T> struct align_probe {
	char c;
	T x;
};
template <class T> constexpr std::uint64_t align_desc_of(unsigned slot)
{
	return ((offsetof(align_probe<T>, x) - 1) & 0xfu) << (4 * slot);
}

} // namespace

void write_header(void *dst, const header_fields &h)
{
	auto *p = static_cast<std::uint8_t *>(dst);
	std::memset(p, 0, pool_hdr_size);
	put(p, off_signature, h.signature);
	put(p, off_major, h.major);
	put(p, off_compat, h.compat);
	put(p, off_incompat, h.incompat);
	put(p, off_ro_compat, h.ro_compat);
	put(p, off_poolset, h.poolset);
	put(p, off_uuid, h.self);
	put(p, off_prev_part, h.prev_part);
	put(p, off_next_part, h.next_part);
	put(p, off_prev_repl, h.prev_repl);
	put(p, off_next_repl, h.next_repl);
	put(p, off_crtime, h.crtime);
	put(p, off_arch, h.arch);
	put(p, off_checksum, checksum_of(p));
}

std::optional<header_fields> read_header(const void *src, std::string *why)
{
	auto *p = static_cast<const std::uint8_t *>(src);
	if (std::all_of(p, p + pool_hdr_size, [](std::uint8_t b) { return b == 0; })) {
		*why = "the pool header is all zeros (the pool was never created, or was wiped)";
		return std::nullopt;
	}
	std::uint64_t stored;
	get(p, off_checksum, stored);
	if (stored != checksum_of(p)) {
		*why =
		    fmt::format("invalid pool header checksum (stored {:#018x}, computed {:#018x})",
		                stored, checksum_of(p));
		return std::nullopt;
	}
	header_fields h;
	get(p, off_signature, h.signature);
	get(p, off_major, h.major);
	get(p, off_compat, h.compat);
	get(p, off_incompat, h.incompat);
	get(p, off_ro_compat, h.ro_compat);
	get(p, off_poolset, h.poolset);
	get(p, off_uuid, h.self);
	get(p, off_prev_part, h.prev_part);
	get(p, off_next_part, h.next_part);
	get(p, off_prev_repl, h.prev_repl);
	get(p, off_next_repl, h.next_repl);
	get(p, off_crtime, h.crtime);
	get(p, off_arch, h.arch);
	return h;
}

std::array<std::uint8_t, 16> host_arch_flags()
{
	const std::uint64_t desc =
	    align_desc_of<char>(0) | align_desc_of<short>(1) | align_desc_of<int>(2) |
	    align_desc_of<long>(3) | align_desc_of<long long>(4) | align_desc_of<size_t>(5) |
	    align_desc_of<off_t>(6) | align_desc_of<float>(7) | align_desc_of<double>(8) |
	    align_desc_of<long double>(9) | align_desc_of<void *>(10);
#if defined(__x86_64__)
	const std::uint16_t machine = 62;
#elif defined(__aarch64__)
	const std::uint16_t machine = 183;
#elif defined(__riscv) && defined(_LP64)
	const std::uint16_t machine = 243;
#else
#error "PMDK defines no pool header machine value for this architecture"
#endif
	std::array<std::uint8_t, 16> a{};
	std::memcpy(a.data(), &desc, 8);
	a[8] = 2; // 64-bit
	a[9] = 1; // little endian
	std::memcpy(a.data() + 14, &machine, 2);
	return a;
}

uuid generate_uuid()
{
	uuid u{};
	std::size_t got = 0;
	while (got < u.size()) {
		ssize_t n = getrandom(u.data() + got, u.size() - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			throw rpmem::error(errno, "getrandom failed while generating a pool UUID");
		got += static_cast<std::size_t>(n);
	}
	u[7] = static_cast<std::uint8_t>((u[7] & 0x0f) | 0x40);
	u[8] = static_cast<std::uint8_t>((u[8] & 0x3f) | 0x80);
	return u;
}

std::string uuid_string(const uuid &u)
{
	return fmt::format("{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-"
	                   "{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
	                   u[3], u[2], u[1], u[0], u[5], u[4], u[7], u[6], u[8], u[9], u[10], u[11],
	                   u[12], u[13], u[14], u[15]);
}

} // namespace rpmem::replication
