// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for rpmem top's reader of metrics files (tools/rpmem/metrics_read: the
// Prometheus text format and the JSON object). Built with -DRPMEM_FUZZ=ON and clang
// (tests/fuzz/CMakeLists.txt); scripts/fuzz.sh runs it on a copy of tests/fuzz/corpus/metrics.
// Any input must either parse or be refused with a reason; no pool comes without its names.
#include "metrics_read.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
	std::string_view text(reinterpret_cast<const char *>(data), size);
	std::string why;
	const auto file = rpmem::tool::parse_metrics(text, &why);
	if (!file && why.empty())
		std::abort();
	if (file && !why.empty())
		std::abort();
	return 0;
}
