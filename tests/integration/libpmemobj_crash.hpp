// SPDX-License-Identifier: BSD-3-Clause
// A writer that stock libpmemobj is expected to end (the fail policy), under the sanitizers:
// its reports go to a directory of the test's, which checks they are libpmemobj's own crash.
#pragma once

#include "replica_fixture.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace rpmem::test
{

inline std::string sanitizer_env(const char *name, const char *extra)
{
	const char *v = std::getenv(name);
	return fmt::format("{}={}{}", name, v ? v : "", extra);
}

/**
 * For a writer that stock libpmemobj is expected to end: when a persist fails under the fail
 * policy, Debian's libpmemobj crashes in its own clean-up (obj_handle_remote_persist_error
 * frees the pool under the running transaction, then FATAL). Under a sanitizer that SIGSEGV
 * is reported like any other; the report goes to `reports` (not to the sanitizer run's
 * directory, which fails the run), where only_libpmemobj_crashes() checks that each report is
 * that crash and nothing of ours. ThreadSanitizer cannot report it: its handler fails on this
 * crash ("nested bug in the same thread, aborting", no stack), so under TSan the SIGSEGV is
 * left to kill the writer (handle_segv=0) and only ASan checks whose crash it is. (First in
 * the environment: the first value of a variable wins; a later option in one variable
 * overrides an earlier one.)
 */
inline std::vector<std::string> ended_by_libpmemobj_env(const fs::path &reports)
{
	fs::create_directories(reports);
	const auto asan = fmt::format(":detect_leaks=0:log_path={}/asan", reports.string());
	const auto tsan = fmt::format(":log_path={}/tsan:handle_segv=0", reports.string());
	return {sanitizer_env("ASAN_OPTIONS", asan.c_str()),
	        sanitizer_env("TSAN_OPTIONS", tsan.c_str())};
}

/** The sanitizer reports in `reports` (ended_by_libpmemobj_env), all of them, as text. */
inline std::string sanitizer_reports(const fs::path &reports)
{
	std::string all;
	std::error_code ec;
	for (const auto &f : fs::directory_iterator(reports, ec))
		all += "==== " + f.path().string() + "\n" + slurp(f.path());
	return all;
}

/** Each report in `reports` is a SEGV whose innermost frame is libpmemobj's: its own crash. */
inline void only_libpmemobj_crashes(const fs::path &reports)
{
	std::error_code ec;
	for (const auto &f : fs::directory_iterator(reports, ec)) {
		const std::string text = slurp(f.path());
		INFO("a sanitizer's report of the writer libpmemobj ended, " << f.path() << ":\n"
		                                                             << text);
		const std::string crash = "Sanitizer: SEGV on unknown address";
		const auto segv = text.find(crash);
		REQUIRE(segv != std::string::npos);
		const auto frame0 = text.find("#0 ", segv);
		REQUIRE(frame0 != std::string::npos);
		const auto line = text.substr(frame0, text.find('\n', frame0) - frame0);
		CHECK(line.find("/libpmemobj.so") != std::string::npos);
		CHECK(text.find(crash, segv + 1) == std::string::npos); // one report, this one
	}
}

} // namespace rpmem::test
