// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the pool set parser. Built with -DRPMEM_FUZZ=ON and clang
// (tests/fuzz/CMakeLists.txt); scripts/fuzz.sh runs it on a copy of tests/fuzz/corpus/poolset.
// Any input must either parse or throw parse_error; what parses must survive a round trip
// through to_string with the same meaning.
#include "poolset/poolset.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
	using namespace rpmem::poolset;
	std::string_view text(reinterpret_cast<const char *>(data), size);
	poolset ps;
	try {
		ps = parse(text, "fuzz.set");
	} catch (const parse_error &) {
		return 0;
	}
	for (std::size_t r = 0; r < ps.replicas.size(); ++r)
		if (!ps.replicas[r].is_remote() && ps.usable_size(r) > ps.pool_size(r))
			std::abort();
	// Everything parse() accepts can be written back, and reads back the same.
	std::string canonical = to_string(ps);
	if (to_string(parse(canonical, "fuzz.set")) != canonical)
		std::abort();
	return 0;
}
