// SPDX-License-Identifier: BSD-3-Clause
// PMDK's pool header (struct pool_hdr, PMDK 1.12.1 src/common/pool_hdr.h): the first 4 KiB of every
// part file of a pool with headers. rpmemd writes exactly PMDK's bytes so a replica can be
// read by `pmempool info`, opened by libpmemobj on the replica host (docs/design.md, decision 12).
//
// A pool_hdr value is the on-media image: multi-byte integers are little-endian, whatever the
// host. Read and write them through load_le()/store_le(), never directly.
#pragma once

#include "rpmem/pool_attr.hpp"

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rpmem::pmdk
{

using uuid = std::array<std::uint8_t, 16>;

inline constexpr std::size_t pool_hdr_size = 4096;

// Feature flags (pool_hdr.h). Values are part of the on-media format.
inline constexpr std::uint32_t feat_compat_check_bad_blocks = 0x1;
inline constexpr std::uint32_t feat_incompat_singlehdr = 0x1; // header only in part 0
inline constexpr std::uint32_t feat_incompat_cksum_2k = 0x2;  // checksum covers the first 2 KiB
inline constexpr std::uint32_t feat_incompat_sds = 0x4;       // shutdown state is kept
/** rpmem's own compat bit, set on a replica while a replicated_pool writes it asynchronously and
 * cleared by a clean close or a completed resync: a replica that still carries it after its
 * writer ended may lack the master's last persists (up to the lag bound). A compat bit: PMDK
 * tools that do not know it still open the pool. */
inline constexpr std::uint32_t feat_compat_rpmem_behind = 0x40000000;
/** rpmem's own incompat feature bit: the master is being rebuilt from a replica (rpmem sync
 *  --from) and is not whole. Unknown to libpmemobj, which therefore refuses to open it. */
inline constexpr std::uint32_t feat_incompat_rpmem_rebuilding = 0x40000000;

/** Identifies the architecture that created a pool (ELF-like values; rpmem's user_flags). */
struct arch_flags {
	std::uint64_t alignment_desc; // 4 bits per basic type: its alignment - 1
	std::uint8_t machine_class;   // 2: 64-bit
	std::uint8_t data;            // 1: little endian, 2: big endian
	std::array<std::uint8_t, 4> reserved;
	std::uint16_t machine; // ELF e_machine: 62 = x86-64
};

/** Unsafe-shutdown detection state, kept in part 0 when feat_incompat_sds is set. */
struct shutdown_state {
	std::uint64_t usc;  // sum of the unsafe shutdown counts of the devices under the parts
	std::uint64_t uuid; // sum of checksums of those devices' ids
	std::uint8_t dirty; // 1 while the pool is open
	std::array<std::uint8_t, 39> reserved;
	std::uint64_t checksum; // of this struct, checksum field as zero
};

struct features {
	std::uint32_t compat;    // "may" features
	std::uint32_t incompat;  // "must support" features
	std::uint32_t ro_compat; // force read-only if unsupported
};

struct pool_hdr {
	std::array<char, 8> signature;
	std::uint32_t major;
	features feat;
	uuid poolset_uuid;
	uuid part_uuid; // PMDK: uuid, this part's UUID
	uuid prev_part_uuid;
	uuid next_part_uuid;
	uuid prev_repl_uuid;
	uuid next_repl_uuid;
	std::uint64_t crtime; // seconds since the epoch: st_ctime of the part when created
	arch_flags arch;
	std::array<std::uint8_t, 1904> unused; // zero; end of the 2 KiB checksummed area
	std::array<std::uint8_t, 1976> unused2;
	shutdown_state sds;
	std::uint64_t checksum; // Fletcher64 variant, see header_checksum()
};

static_assert(sizeof(arch_flags) == 16 && offsetof(arch_flags, machine) == 14);
static_assert(sizeof(shutdown_state) == 64 && offsetof(shutdown_state, dirty) == 16 &&
              offsetof(shutdown_state, checksum) == 56);
static_assert(offsetof(pool_hdr, major) == 8 && offsetof(pool_hdr, feat) == 12);
static_assert(offsetof(pool_hdr, poolset_uuid) == 24 && offsetof(pool_hdr, part_uuid) == 40);
static_assert(offsetof(pool_hdr, prev_part_uuid) == 56 && offsetof(pool_hdr, next_part_uuid) == 72);
static_assert(offsetof(pool_hdr, prev_repl_uuid) == 88 &&
              offsetof(pool_hdr, next_repl_uuid) == 104);
static_assert(offsetof(pool_hdr, crtime) == 120 && offsetof(pool_hdr, arch) == 128);
static_assert(offsetof(pool_hdr, unused) == 144 && offsetof(pool_hdr, unused2) == 2048);
static_assert(offsetof(pool_hdr, sds) == 4024 && offsetof(pool_hdr, checksum) == 4088);
static_assert(sizeof(pool_hdr) == pool_hdr_size);
static_assert(sizeof(rpmem::pool_attr().user_flags) == sizeof(arch_flags));

/** POOL_HDR_CSUM_2K_END_OFF / POOL_HDR_CSUM_4K_END_OFF: first byte not checksummed. */
inline constexpr std::size_t csum_2k_end = offsetof(pool_hdr, unused2);
inline constexpr std::size_t csum_4k_end = offsetof(pool_hdr, checksum);

template <class T> constexpr T byteswap_if_big(T v) noexcept
{
	if constexpr (std::endian::native == std::endian::little || sizeof(T) == 1) {
		return v;
	} else if constexpr (sizeof(T) == 2) {
		return static_cast<T>(__builtin_bswap16(v));
	} else if constexpr (sizeof(T) == 4) {
		return static_cast<T>(__builtin_bswap32(v));
	} else {
		return static_cast<T>(__builtin_bswap64(v));
	}
}
template <class T> constexpr T load_le(T media) noexcept
{
	return byteswap_if_big(media);
}
template <class T> constexpr void store_le(T &media, T host) noexcept
{
	media = byteswap_if_big(host);
}

/**
 * PMDK's util_checksum_compute: Fletcher64 over little-endian 32-bit words. The 8 bytes at
 * csum_off and every word at or past end_off count as zero but still advance the high sum.
 * data.size() must be a multiple of 8.
 */
std::uint64_t fletcher64(std::span<const std::uint8_t> data, std::size_t csum_off,
                         std::size_t end_off) noexcept;

/** The checksum the header must carry (2 KiB or 4 KiB range per feat_incompat_cksum_2k). */
std::uint64_t header_checksum(const pool_hdr &hdr) noexcept;
/** Stores header_checksum() in hdr.checksum. */
void seal(pool_hdr &hdr) noexcept;

/** This host's arch flags as PMDK's util_get_arch_flags + util_convert2le_hdr store them. */
arch_flags host_arch_flags() noexcept;
/** A random (version 4) UUID in PMDK's byte layout. Throws rpmem::error if no entropy. */
uuid generate_uuid();

/** UUIDs that tie one part header into its pool set and replica ring. */
struct header_links {
	uuid poolset{};
	uuid self{};
	uuid prev_part{};
	uuid next_part{};
	uuid prev_repl{};
	uuid next_repl{};
};

/** The links of part i of a replica whose parts carry `parts` (a ring, as in PMDK), in pool
 *  set `poolset`, between the replicas whose part 0 UUIDs are prev_repl and next_repl. */
header_links ring_links(std::span<const uuid> parts, std::size_t i, const uuid &poolset,
                        const uuid &prev_repl, const uuid &next_repl);

/** A part's header decoded to host byte order; arch is the media image of arch_flags (what
 *  rpmem_pool_attr's user_flags carry), kept byte for byte. */
struct header_fields {
	std::array<char, 8> signature{};
	std::uint32_t major = 0;
	std::uint32_t compat = 0;
	std::uint32_t incompat = 0;
	std::uint32_t ro_compat = 0;
	header_links links;
	std::uint64_t crtime = 0;
	std::array<std::uint8_t, 16> arch{};
};

/** The one encoder: the header image of `h`, sealed (no shutdown state). */
pool_hdr encode(const header_fields &h);
/** The fields of a header (check it first: check_header_alone). */
header_fields decode(const pool_hdr &hdr);

/** The attributes a part 0 header carries (librpmem's util_get_rpmem_attr: the part's own
 *  UUID, the replica links as prev/next, the arch flags as user_flags), and back. */
rpmem::pool_attr to_attr(const header_fields &h);
header_fields from_attr(const rpmem::pool_attr &a);

/** This host's arch flags as the 16 bytes a header and user_flags hold. */
std::array<std::uint8_t, 16> host_arch_bytes() noexcept;

/**
 * The header of one part as PMDK's util_header_create writes it: fields from attr, links,
 * arch flags = attr.user_flags or this host's when those are zero, crtime, shutdown state
 * (part 0 of an SDS pool), checksum.
 */
pool_hdr make_header(const rpmem::pool_attr &attr, const header_links &links, std::uint64_t crtime,
                     bool first_part);

/** The attributes a header carries (util_get_rpmem_attr: uuid is the part's own UUID). */
rpmem::pool_attr header_attr(const pool_hdr &hdr);

/**
 * Overwrites what set_attr may change (util_replica_set_attr): signature, major, features,
 * pool set UUID, replica links, arch flags (verbatim). Part UUIDs and links are the caller's.
 */
void apply_attr(pool_hdr &hdr, const rpmem::pool_attr &attr);

// rpmem's marks, beside the header that carries them (inline: the C ABI uses them without
// linking the rest of this layer, or libpmem).
/** A replica carries feat_compat_rpmem_behind ("possibly behind"): it may lack persists its
 *  master acknowledged, so nothing takes it as current without force or a sync. */
inline bool marked_behind(const rpmem::pool_attr &a) noexcept
{
	return (a.compat_features & feat_compat_rpmem_behind) != 0;
}
inline bool marked_behind(const pool_hdr &hdr) noexcept
{
	return (load_le(hdr.feat.compat) & feat_compat_rpmem_behind) != 0;
}
/** attr with the "possibly behind" mark set or cleared. */
inline rpmem::pool_attr with_behind_mark(rpmem::pool_attr a, bool behind) noexcept
{
	if (behind)
		a.compat_features |= feat_compat_rpmem_behind;
	else
		a.compat_features &= ~feat_compat_rpmem_behind;
	return a;
}
/** Sets or clears the mark in a header image (the caller reseals and writes it). */
inline void set_behind_mark(pool_hdr &hdr, bool behind) noexcept
{
	const auto compat = load_le(hdr.feat.compat);
	store_le(hdr.feat.compat,
	         behind ? compat | feat_compat_rpmem_behind : compat & ~feat_compat_rpmem_behind);
}
/** A replica carries feat_incompat_rpmem_rebuilding while an asynchronous writer catches it up
 *  from its master's memory after an outage: the blocks move in no order of the persists, so it
 *  is neither a prefix of them nor the master's state at any moment until the catch-up's last
 *  round. libpmemobj refuses it (an unknown incompat bit), and so do librpmem and `rpmem
 *  promote`, with or without force; only a sync from the master makes it whole. */
inline bool marked_rebuilding(const rpmem::pool_attr &a) noexcept
{
	return (a.incompat_features & feat_incompat_rpmem_rebuilding) != 0;
}
/** attr with that mark set or cleared. */
inline rpmem::pool_attr with_rebuilding_mark(rpmem::pool_attr a, bool on) noexcept
{
	if (on)
		a.incompat_features |= feat_incompat_rpmem_rebuilding;
	else
		a.incompat_features &= ~feat_incompat_rpmem_rebuilding;
	return a;
}
/** A master carries feat_incompat_rpmem_rebuilding: a rebuild from a replica began and did not
 *  finish (libpmemobj refuses the pool meanwhile). */
inline bool marked_rebuilding(const pool_hdr &hdr) noexcept
{
	return (load_le(hdr.feat.incompat) & feat_incompat_rpmem_rebuilding) != 0;
}
inline void set_rebuilding_mark(pool_hdr &hdr, bool rebuilding) noexcept
{
	const auto incompat = load_le(hdr.feat.incompat);
	store_le(hdr.feat.incompat, rebuilding ? incompat | feat_incompat_rpmem_rebuilding
	                                       : incompat & ~feat_incompat_rpmem_rebuilding);
}

/** Records whether the pool is open in the shutdown state (no-op without the SDS feature). */
void set_shutdown_dirty(pool_hdr &hdr, bool dirty);

/** What the devices under a pool's parts say now (PMDK's shutdown_state_add_part): the sum of
 *  their unsafe shutdown counts and the sum of the checksums of their ids; zeros where the
 *  devices keep no count (any file system that is not on persistent memory). */
struct device_state {
	std::uint64_t usc = 0;
	std::uint64_t id_sum = 0;
};

/** PMDK's checksum of a device id as shutdown_state_add_part sums it (the id padded with
 *  zeros to the next multiple of 4 bytes, always at least one byte more). */
std::uint64_t device_id_checksum(std::string_view id) noexcept;

enum class shutdown_verdict {
	consistent, // nothing to do
	reinit,     // record the devices' state anew: no sign of lost data
	adr_failure // dirty and the devices lost power unsafely since: the pool may be corrupt
};

/** PMDK 1.12.1 shutdown_state_check: compares part 0's recorded state with the devices'. */
shutdown_verdict check_shutdown_state(const shutdown_state &recorded, const device_state &now);

/** Records `now` as a clean shutdown state (PMDK's shutdown_state_reinit); no-op without the
 *  SDS feature. */
void reset_shutdown_state(pool_hdr &hdr, const device_state &now);

/** What is wrong with a header on its own (all zeros, bad checksum); nullopt when valid. */
std::optional<std::string> check_header_alone(const pool_hdr &hdr);

/**
 * What is wrong with a part's header, checked as PMDK's util_header_check_remote does: on its
 * own, then against part 0's header and the UUIDs of its neighbouring parts; nullopt if valid.
 */
std::optional<std::string> check_header(const pool_hdr &hdr, const pool_hdr &first,
                                        const uuid &prev_part, const uuid &next_part);

std::string uuid_string(const uuid &u);

} // namespace rpmem::pmdk
