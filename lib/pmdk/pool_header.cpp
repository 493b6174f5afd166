// SPDX-License-Identifier: BSD-3-Clause
// PMDK pool header: checksum, creation from rpmem attributes, validation (PMDK 1.12.1 set.c,
// pool_hdr.c, util.c, shutdown_state.c).
#include "pmdk/pool_header.hpp"

#include <rpmem/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/random.h>
#include <sys/types.h>
#include <vector>

namespace rpmem::pmdk
{
namespace
{

using rpmem::pool_attr;

std::uint32_t load_le32(const std::uint8_t *p) noexcept
{
	return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
	       static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

template <class T> std::span<const std::uint8_t> bytes_of(const T &v) noexcept
{
	return {reinterpret_cast<const std::uint8_t *>(&v), sizeof(v)};
}

bool is_zero(std::span<const std::uint8_t> b) noexcept
{
	return std::all_of(b.begin(), b.end(), [](std::uint8_t x) { return x == 0; });
}

// PMDK's alignment_desc(): for each basic type, offsetof(struct { char c; T x; }, x) - 1.
template <class T> struct align_probe {
	char c;
	T x;
};
template <class T> constexpr std::uint64_t align_desc_of(unsigned slot) noexcept
{
	return ((offsetof(align_probe<T>, x) - 1) & 0xfu) << (4 * slot);
}
constexpr std::uint64_t alignment_desc() noexcept
{
	return align_desc_of<char>(0) | align_desc_of<short>(1) | align_desc_of<int>(2) |
	       align_desc_of<long>(3) | align_desc_of<long long>(4) | align_desc_of<size_t>(5) |
	       align_desc_of<off_t>(6) | align_desc_of<float>(7) | align_desc_of<double>(8) |
	       align_desc_of<long double>(9) | align_desc_of<void *>(10);
}

constexpr std::uint16_t host_machine() noexcept
{
#if defined(__x86_64__)
	return 62;
#elif defined(__aarch64__)
	return 183;
#elif defined(__PPC64__)
	return 21;
#elif defined(__riscv) && defined(_LP64)
	return 243;
#elif defined(__loongarch64)
	return 258;
#else
#error "PMDK defines no pool header machine value for this architecture"
#endif
}

void seal_shutdown_state(shutdown_state &sds) noexcept
{
	std::uint64_t sum =
	    fletcher64(bytes_of(sds), offsetof(shutdown_state, checksum), sizeof(sds));
	store_le(sds.checksum, sum);
}

} // namespace

std::uint64_t fletcher64(std::span<const std::uint8_t> data, std::size_t csum_off,
                         std::size_t end_off) noexcept
{
	std::uint32_t lo = 0;
	std::uint32_t hi = 0;
	for (std::size_t off = 0; off + 4 <= data.size(); off += 4) {
		bool skipped = off >= end_off || (off >= csum_off && off < csum_off + 8);
		if (!skipped)
			lo += load_le32(data.data() + off);
		hi += lo;
	}
	return static_cast<std::uint64_t>(hi) << 32 | lo;
}

std::uint64_t header_checksum(const pool_hdr &hdr) noexcept
{
	bool two_k = load_le(hdr.feat.incompat) & feat_incompat_cksum_2k;
	return fletcher64(bytes_of(hdr), offsetof(pool_hdr, checksum),
	                  two_k ? csum_2k_end : csum_4k_end);
}

void seal(pool_hdr &hdr) noexcept
{
	store_le(hdr.checksum, header_checksum(hdr));
}

arch_flags host_arch_flags() noexcept
{
	arch_flags af{};
	store_le(af.alignment_desc, alignment_desc());
	af.machine_class = 2; // PMDK_MACHINE_CLASS_64; PMDK supports no 32-bit targets
	af.data = std::endian::native == std::endian::little ? 1 : 2;
	store_le(af.machine, host_machine());
	return af;
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
	// PMDK keeps time_hi_and_version as a little-endian u16 at bytes 6-7: version 4 lives in
	// the top nibble of byte 7; the RFC 4122 variant in byte 8.
	u[7] = static_cast<std::uint8_t>((u[7] & 0x0f) | 0x40);
	u[8] = static_cast<std::uint8_t>((u[8] & 0x3f) | 0x80);
	return u;
}

header_links ring_links(std::span<const uuid> parts, std::size_t i, const uuid &poolset,
                        const uuid &prev_repl, const uuid &next_repl)
{
	const std::size_t n = parts.size();
	return {.poolset = poolset,
	        .self = parts[i],
	        .prev_part = parts[(i + n - 1) % n],
	        .next_part = parts[(i + 1) % n],
	        .prev_repl = prev_repl,
	        .next_repl = next_repl};
}

pool_hdr encode(const header_fields &h)
{
	pool_hdr hdr{};
	hdr.signature = h.signature;
	store_le(hdr.major, h.major);
	store_le(hdr.feat.compat, h.compat);
	store_le(hdr.feat.incompat, h.incompat);
	store_le(hdr.feat.ro_compat, h.ro_compat);
	hdr.poolset_uuid = h.links.poolset;
	hdr.part_uuid = h.links.self;
	hdr.prev_part_uuid = h.links.prev_part;
	hdr.next_part_uuid = h.links.next_part;
	hdr.prev_repl_uuid = h.links.prev_repl;
	hdr.next_repl_uuid = h.links.next_repl;
	store_le(hdr.crtime, h.crtime);
	std::memcpy(&hdr.arch, h.arch.data(), sizeof(hdr.arch)); // the media image, verbatim
	seal(hdr);
	return hdr;
}

header_fields decode(const pool_hdr &hdr)
{
	header_fields h;
	h.signature = hdr.signature;
	h.major = load_le(hdr.major);
	h.compat = load_le(hdr.feat.compat);
	h.incompat = load_le(hdr.feat.incompat);
	h.ro_compat = load_le(hdr.feat.ro_compat);
	h.links = {.poolset = hdr.poolset_uuid,
	           .self = hdr.part_uuid,
	           .prev_part = hdr.prev_part_uuid,
	           .next_part = hdr.next_part_uuid,
	           .prev_repl = hdr.prev_repl_uuid,
	           .next_repl = hdr.next_repl_uuid};
	h.crtime = load_le(hdr.crtime);
	std::memcpy(h.arch.data(), &hdr.arch, sizeof(hdr.arch));
	return h;
}

pool_attr to_attr(const header_fields &h)
{
	pool_attr a;
	a.signature = h.signature;
	a.major = h.major;
	a.compat_features = h.compat;
	a.incompat_features = h.incompat;
	a.ro_compat_features = h.ro_compat;
	a.poolset_uuid = h.links.poolset;
	a.uuid = h.links.self;
	a.prev_uuid = h.links.prev_repl;
	a.next_uuid = h.links.next_repl;
	a.user_flags = h.arch;
	return a;
}

header_fields from_attr(const pool_attr &a)
{
	header_fields h;
	h.signature = a.signature;
	h.major = a.major;
	h.compat = a.compat_features;
	h.incompat = a.incompat_features;
	h.ro_compat = a.ro_compat_features;
	h.links.poolset = a.poolset_uuid;
	h.links.self = a.uuid;
	h.links.prev_repl = a.prev_uuid;
	h.links.next_repl = a.next_uuid;
	h.arch = a.user_flags;
	return h;
}

std::array<std::uint8_t, 16> host_arch_bytes() noexcept
{
	auto flags = host_arch_flags();
	std::array<std::uint8_t, 16> a;
	std::memcpy(a.data(), &flags, sizeof(flags));
	return a;
}

pool_hdr make_header(const pool_attr &attr, const header_links &links, std::uint64_t crtime,
                     bool first_part)
{
	header_fields h = from_attr(attr);
	h.links = links;
	h.crtime = crtime;
	if (is_zero(attr.user_flags))
		h.arch = host_arch_bytes();
	pool_hdr hdr = encode(h);
	if (first_part)
		set_shutdown_dirty(hdr, true);
	return hdr;
}

void apply_attr(pool_hdr &hdr, const pool_attr &attr)
{
	hdr.signature = attr.signature;
	store_le(hdr.major, attr.major);
	store_le(hdr.feat.compat, attr.compat_features);
	store_le(hdr.feat.incompat, attr.incompat_features);
	store_le(hdr.feat.ro_compat, attr.ro_compat_features);
	hdr.poolset_uuid = attr.poolset_uuid;
	hdr.prev_repl_uuid = attr.prev_uuid;
	hdr.next_repl_uuid = attr.next_uuid;
	// user_flags travel as the media image of arch_flags (the client took them from a
	// little-endian header), so they are copied byte for byte, never converted.
	std::memcpy(&hdr.arch, attr.user_flags.data(), sizeof(hdr.arch));
}

pool_attr header_attr(const pool_hdr &hdr)
{
	return to_attr(decode(hdr));
}

void set_shutdown_dirty(pool_hdr &hdr, bool dirty)
{
	if (!(load_le(hdr.feat.incompat) & feat_incompat_sds))
		return;
	hdr.sds.dirty = dirty ? 1 : 0;
	seal_shutdown_state(hdr.sds);
	seal(hdr); // without CKSUM_2K the header checksum covers the shutdown state
}

std::uint64_t device_id_checksum(std::string_view id) noexcept
{
	std::vector<std::uint8_t> padded(id.size() + 4 - id.size() % 4, 0);
	if (!id.empty()) // an empty view may have no data pointer at all
		std::memcpy(padded.data(), id.data(), id.size());
	return fletcher64(padded, padded.size(), padded.size());
}

shutdown_verdict check_shutdown_state(const shutdown_state &recorded, const device_state &now)
{
	shutdown_state current{};
	store_le(current.usc, now.usc);
	store_le(current.uuid, now.id_sum);
	seal_shutdown_state(current);
	if (is_zero(bytes_of(recorded)))
		return is_zero(bytes_of(current)) ? shutdown_verdict::consistent
		                                  : shutdown_verdict::reinit;
	bool same_devices =
	    load_le(recorded.usc) == now.usc && load_le(recorded.uuid) == now.id_sum;
	std::uint64_t sum =
	    fletcher64(bytes_of(recorded), offsetof(shutdown_state, checksum), sizeof(recorded));
	if (load_le(recorded.checksum) != sum) // killed while opening or closing the pool
		return shutdown_verdict::reinit;
	if (same_devices) // not closed, but no power was lost unsafely
		return recorded.dirty ? shutdown_verdict::reinit : shutdown_verdict::consistent;
	return recorded.dirty ? shutdown_verdict::adr_failure : shutdown_verdict::reinit;
}

void reset_shutdown_state(pool_hdr &hdr, const device_state &now)
{
	if (!(load_le(hdr.feat.incompat) & feat_incompat_sds))
		return;
	hdr.sds = shutdown_state{};
	store_le(hdr.sds.usc, now.usc);
	store_le(hdr.sds.uuid, now.id_sum);
	seal_shutdown_state(hdr.sds);
	seal(hdr);
}

std::optional<std::string> check_header_alone(const pool_hdr &hdr)
{
	if (is_zero(bytes_of(hdr)))
		return "the pool header is all zeros (the pool was never created, or was wiped)";
	if (load_le(hdr.checksum) != header_checksum(hdr))
		return fmt::format(
		    "invalid pool header checksum (stored {:#018x}, computed {:#018x})",
		    load_le(hdr.checksum), header_checksum(hdr));
	return std::nullopt;
}

std::optional<std::string> check_header(const pool_hdr &hdr, const pool_hdr &first,
                                        const uuid &prev_part, const uuid &next_part)
{
	if (auto wrong = check_header_alone(hdr))
		return wrong;
	if (hdr.signature != first.signature)
		return "its pool signature differs from part 0's";
	if (hdr.major != first.major)
		return "its pool format version (major) differs from part 0's";
	if (std::memcmp(&hdr.feat, &first.feat, sizeof(hdr.feat)) != 0)
		return "its feature flags differ from part 0's";
	if (hdr.poolset_uuid != first.poolset_uuid)
		return "its pool set UUID differs from part 0's";
	if (hdr.prev_repl_uuid != first.prev_repl_uuid ||
	    hdr.next_repl_uuid != first.next_repl_uuid)
		return "its replica UUIDs differ from part 0's";
	if (std::memcmp(&hdr.arch, &first.arch, sizeof(hdr.arch)) != 0)
		return "its architecture flags differ from part 0's";
	if (hdr.prev_part_uuid != prev_part || hdr.next_part_uuid != next_part)
		return fmt::format(
		    "its part links (prev {}, next {}) do not match the neighbouring "
		    "parts (prev {}, next {}): parts were reordered or replaced",
		    uuid_string(hdr.prev_part_uuid), uuid_string(hdr.next_part_uuid),
		    uuid_string(prev_part), uuid_string(next_part));
	return std::nullopt;
}

std::string uuid_string(const uuid &u)
{
	// PMDK's struct uuid keeps time_low/time_mid/time_hi as little-endian integers.
	return fmt::format("{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-"
	                   "{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
	                   u[3], u[2], u[1], u[0], u[5], u[4], u[7], u[6], u[8], u[9], u[10], u[11],
	                   u[12], u[13], u[14], u[15]);
}

} // namespace rpmem::pmdk
