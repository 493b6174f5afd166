// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: arbitrary bytes as an rpmemd config file (daemon/config.cpp).
// The parser must either accept the text or throw config_error; anything else (another
// exception, a crash, a sanitizer report) is a bug. Built with -DRPMEM_FUZZ=ON and clang
// (tests/fuzz/CMakeLists.txt); scripts/fuzz.sh runs it on a copy of tests/fuzz/corpus/config.
#include "config.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
	std::string_view text(reinterpret_cast<const char *>(data), size);
	rpmemd::config cfg;
	rpmemd::cmdline_mask none;
	try {
		rpmemd::parse_config_text(cfg, text, "fuzz.conf", none);
	} catch (const rpmemd::config_error &) {
		return 0;
	}
	// Accepted text must leave values the rest of rpmemd can rely on.
	if (cfg.log_file.empty() || cfg.poolset_dir.empty() || cfg.heartbeat_timeout.count() <= 0)
		__builtin_trap();
	// A setting protected by the command line is checked but never changed.
	rpmemd::config kept;
	rpmemd::cmdline_mask all;
	for (int s = 0; s < static_cast<int>(rpmemd::setting::count_); ++s)
		all.set(static_cast<rpmemd::setting>(s));
	rpmemd::parse_config_text(kept, text, "fuzz.conf", all);
	rpmemd::config defaults;
	if (kept.log_file != defaults.log_file || kept.poolset_dir != defaults.poolset_dir ||
	    kept.use_syslog != defaults.use_syslog || kept.level != defaults.level ||
	    kept.persist_apm != defaults.persist_apm ||
	    kept.persist_general != defaults.persist_general ||
	    kept.heartbeat_timeout != defaults.heartbeat_timeout)
		__builtin_trap();
	return 0;
}
