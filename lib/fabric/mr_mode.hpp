// SPDX-License-Identifier: BSD-3-Clause
// Which memory-registration mode to ask a provider for (RPMEM_MR_MODE, rpmemd --mr-mode).
// Pure: parsed by the client's settings and rpmemd's configuration alike.
#pragma once

#include <optional>
#include <string_view>

namespace rpmem::fabric
{

enum class mr_mode {
	// API 1.10 hints listing every mode bit rpmem handles (local descriptors, virtual
	// addresses, provider keys, allocated memory): the provider picks what it needs.
	automatic,
	// API 1.4 and FI_MR_BASIC, as PMDK's librpmem asked and RDMA hardware grants: virtual
	// addresses, provider-chosen keys, allocated memory only (tcp and sockets grant it too).
	basic,
	// API 1.4 and FI_MR_SCALABLE: offsets into the region and requested keys.
	scalable,
};

inline std::optional<mr_mode> parse_mr_mode(std::string_view text)
{
	if (text == "auto")
		return mr_mode::automatic;
	if (text == "basic")
		return mr_mode::basic;
	if (text == "scalable")
		return mr_mode::scalable;
	return std::nullopt;
}

inline const char *to_string(mr_mode m)
{
	switch (m) {
	case mr_mode::basic:
		return "basic";
	case mr_mode::scalable:
		return "scalable";
	case mr_mode::automatic:
		break;
	}
	return "auto";
}

} // namespace rpmem::fabric
