// SPDX-License-Identifier: BSD-3-Clause
// The PMDK pool header replicated_pool writes into the first 4 KiB of every local part, so that
// a replicated pool set is a PMDK pool set (`pmempool info` reads it; rpmemd writes the same on
// remote replicas). A thin view over lib/pmdk/pool_header.hpp, the one implementation.
#pragma once

#include "pmdk/pool_header.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace rpmem::replication
{

using pmdk::generate_uuid;
using pmdk::pool_hdr_size;
using pmdk::uuid;
using pmdk::uuid_string;
inline constexpr std::uint32_t feat_incompat_singlehdr = pmdk::feat_incompat_singlehdr;
inline constexpr std::uint32_t feat_incompat_cksum_2k = pmdk::feat_incompat_cksum_2k;
inline constexpr std::uint32_t feat_compat_behind = pmdk::feat_compat_rpmem_behind;

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

/** The attributes rpmemd writes into a remote replica's header for part 0 fields `h`
 * (librpmem's util_get_rpmem_attr: the replica links as prev/next, the arch flags as
 * user_flags), and back. */
control::pool_attr to_attr(const header_fields &h);
header_fields from_attr(const control::pool_attr &a);

/** This host's arch flags in PMDK's on-media layout. */
std::array<std::uint8_t, 16> host_arch_flags();

} // namespace rpmem::replication
