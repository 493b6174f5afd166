// SPDX-License-Identifier: BSD-3-Clause
// A range of a pool's bytes, [begin, end): what a sync moves and a dirty map gives back.
#pragma once

#include <cstdint>

namespace rpmem::client
{

struct byte_span {
	std::uint64_t begin = 0, end = 0;
	std::uint64_t size() const { return end - begin; }
	bool operator==(const byte_span &) const = default;
};

} // namespace rpmem::client
