// SPDX-License-Identifier: BSD-3-Clause
// PMDK's pool header (struct pool_hdr, PMDK 1.12 src/common/pool_hdr.h) as replicated_pool
// writes it into the first 4 KiB of every local part, so that a replicated pool set is a PMDK
// pool set (`pmempool info` reads it; rpmemd writes the same on remote replicas).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace rpmem::replication
{

using uuid = std::array<std::uint8_t, 16>;

inline constexpr std::size_t pool_hdr_size = 4096;
inline constexpr std::uint32_t feat_incompat_singlehdr = 0x1;
inline constexpr std::uint32_t feat_incompat_cksum_2k = 0x2;

struct header_fields {
	std::array<char, 8> signature{};
	std::uint32_t major = 0;
	std::uint32_t compat = 0;
	std::uint32_t incompat = 0;
	std::uint32_t ro_compat = 0;
	uuid poolset{};
	uuid self{};
	uuid prev_part{};
	uuid next_part{};
	uuid prev_repl{};
	uuid next_repl{};
	std::uint64_t crtime = 0;
	std::array<std::uint8_t, 16> arch{}; // arch_flags as stored (rpmem's user_flags)
};

/** Writes the 4 KiB header image (checksum included) to dst. */
void write_header(void *dst, const header_fields &h);
/** Decodes a header; nullopt and *why when it is all zeros or its checksum is wrong. */
std::optional<header_fields> read_header(const void *src, std::string *why);

/** This host's arch flags in PMDK's on-media layout. */
std::array<std::uint8_t, 16> host_arch_flags();
/** A random version-4 UUID in PMDK's byte layout. */
uuid generate_uuid();
std::string uuid_string(const uuid &u);

} // namespace rpmem::replication
