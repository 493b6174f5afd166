// SPDX-License-Identifier: BSD-3-Clause
// rpmem::pool_attr — the attributes kept in a pool's header: the same fields, in the same
// order and sizes, as struct rpmem_pool_attr (librpmem.h, 104 bytes). The one declaration of
// that block: the C++ API, the control protocol (lib/control) and PMDK's on-media header
// (lib/pmdk) all use it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

namespace rpmem
{

struct pool_attr {
	std::array<char, 8> signature{};
	std::uint32_t major = 0;
	std::uint32_t compat_features = 0;
	std::uint32_t incompat_features = 0;
	std::uint32_t ro_compat_features = 0;
	std::array<std::uint8_t, 16> poolset_uuid{};
	std::array<std::uint8_t, 16> uuid{};
	std::array<std::uint8_t, 16> next_uuid{};
	std::array<std::uint8_t, 16> prev_uuid{};
	std::array<std::uint8_t, 16> user_flags{};

	bool operator==(const pool_attr &) const = default;
	/** All fields zero: PMDK's "no attributes" (a pool without headers). */
	bool is_zero() const noexcept { return *this == pool_attr{}; }
};

static_assert(sizeof(pool_attr) == 104, "struct rpmem_pool_attr is 104 bytes");

} // namespace rpmem
