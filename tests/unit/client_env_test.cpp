// SPDX-License-Identifier: BSD-3-Clause
// The client's RPMEM_* settings: what is read, and what is refused with a message naming the
// variable instead of being silently ignored.
#include "client/env.hpp"

#include <rpmem/error.hpp>

#include <catch2/catch.hpp>

#include <cerrno>
#include <map>
#include <string>

using rpmem::client::read_settings;

namespace
{

std::map<std::string, std::string> vars;

const char *fake_getenv(const char *name)
{
	auto it = vars.find(name);
	return it == vars.end() ? nullptr : it->second.c_str();
}

} // namespace

TEST_CASE("numeric RPMEM_* settings are read", "[client][env]")
{
	vars = {{"RPMEM_TIMEOUT", "2500"},         {"RPMEM_MAX_NLANES", "8"},
	        {"RPMEM_CONTROL_TIMEOUT", "3000"}, {"RPMEM_KEEPALIVE", "0"},
	        {"RPMEM_INLINE_MAX", "0"},         {"RPMEM_PIPELINE_CHUNK", "65536"},
	        {"RPMEM_LOG_LEVEL", "4"},          {"RPMEM_STATS_INTERVAL", "100"},
	        {"RPMEM_CATCH_UP_HOLD_BYTES", "0"}};
	auto s = read_settings(fake_getenv);
	CHECK(s.op_timeout == std::chrono::milliseconds(2500));
	CHECK(s.max_nlanes == 8);
	CHECK(s.control_timeout == std::chrono::milliseconds(3000));
	CHECK(s.keepalive == std::chrono::milliseconds(0));
	CHECK(s.inline_max == 0);
	CHECK(s.ignored.empty());
	CHECK(s.pipeline_chunk == std::optional<std::uint64_t>(65536));
	CHECK(s.catch_up_hold_bytes == 0);
	vars = {{"RPMEM_TIMEOUT", ""}};
	CHECK(read_settings(fake_getenv).op_timeout == std::chrono::milliseconds(5000));
	CHECK(read_settings(fake_getenv).catch_up_hold_bytes == 1u << 20);
	// Unset: each connection chooses by its provider; 0 is a choice too (off).
	CHECK_FALSE(read_settings(fake_getenv).pipeline_chunk);
	vars = {{"RPMEM_PIPELINE_CHUNK", "0"}};
	CHECK(read_settings(fake_getenv).pipeline_chunk == std::optional<std::uint64_t>(0));
}

TEST_CASE("RPMEM_CALL_TIMEOUT bounds a call by default as the silence and reconnect timeouts "
          "together do, and is read when set",
          "[client][env]")
{
	vars = {};
	CHECK(read_settings(fake_getenv).call_timeout == std::chrono::milliseconds(15000));
	// Unset, it follows the two: a frozen replica is reconnected first, as before.
	vars = {{"RPMEM_TIMEOUT", "2000"}, {"RPMEM_RECONNECT_TIMEOUT", "1000"}};
	CHECK(read_settings(fake_getenv).call_timeout == std::chrono::milliseconds(3000));
	vars = {{"RPMEM_TIMEOUT", "2000"}, {"RPMEM_CALL_TIMEOUT", "700"}};
	CHECK(read_settings(fake_getenv).call_timeout == std::chrono::milliseconds(700));
	vars = {{"RPMEM_CALL_TIMEOUT", "0"}}; // no bound
	CHECK(read_settings(fake_getenv).call_timeout == std::chrono::milliseconds(0));
}

TEST_CASE("a bad RPMEM_* number is refused, naming the variable", "[client][env]")
{
	auto [name, value] = GENERATE(table<std::string, std::string>({
	    {"RPMEM_TIMEOUT", "abc"},
	    {"RPMEM_TIMEOUT", "0"},
	    {"RPMEM_TIMEOUT", "-5"},
	    {"RPMEM_MAX_NLANES", "abc"},
	    {"RPMEM_MAX_NLANES", "0"},
	    {"RPMEM_CONTROL_TIMEOUT", "10s"},
	    {"RPMEM_KEEPALIVE", "-1"},
	    {"RPMEM_LOG_LEVEL", "abc"},
	    {"RPMEM_LOG_LEVEL", "5"},
	    {"RPMEM_LOG_LEVEL", "-1"},
	    {"RPMEM_STATS_INTERVAL", "99"},
	    {"RPMEM_STATS_INTERVAL", "10s"},
	    {"RPMEM_INLINE_MAX", "big"},
	    {"RPMEM_PIPELINE_CHUNK", "1e6"},
	    {"RPMEM_CATCH_UP_HOLD_BYTES", "-1"},
	    {"RPMEM_CATCH_UP_HOLD_BYTES", "1M"},
	    {"RPMEM_CALL_TIMEOUT", "-1"},
	    {"RPMEM_CALL_TIMEOUT", "2s"},
	    {"RPMEM_SPIN", "2"},
	    {"RPMEM_SPIN", "yes"},
	    {"RPMEM_MR_MODE", "BASIC"},
	    {"RPMEM_MR_MODE", "virt"},
	    {"RPMEM_REPLICATION", "asynchronous"},
	    {"RPMEM_REPLICATION", "1"},
	    {"RPMEM_ASYNC_ON_FAILURE", "degrade"},
	    {"RPMEM_ASYNC_MAX_LAG_BYTES", "0"},
	    {"RPMEM_ASYNC_MAX_LAG_BYTES", "64M"},
	    {"RPMEM_ASYNC_MAX_LAG_MS", "-1"},
	}));
	INFO(name << "=" << value);
	vars = {{name, value}};
	try {
		read_settings(fake_getenv);
		FAIL("accepted " << name << "=" << value);
	} catch (const rpmem::error &e) {
		CHECK(e.errnum() == EINVAL);
		CHECK_THAT(e.message(), Catch::Contains(name + "='" + value + "'"));
	}
}

TEST_CASE("RPMEM_WORK_QUEUE_SIZE, PMDK's queue depth, is ignored whatever its value, and said "
          "so",
          "[client][env]")
{
	// rpmem sizes its queues from the lanes and what the provider grants: nothing reads the
	// variable, so no value of it can fail a call; the log says it is ignored.
	for (auto value : {"16", "0", "abc"}) {
		INFO(value);
		vars = {{"RPMEM_WORK_QUEUE_SIZE", value}};
		auto s = read_settings(fake_getenv);
		REQUIRE(s.ignored.size() == 1);
		CHECK_THAT(s.ignored[0],
		           Catch::Contains(std::string("RPMEM_WORK_QUEUE_SIZE=") + value +
		                           " is ignored: rpmem sizes its queues from the lanes"));
	}
}

TEST_CASE("RPMEM_SPIN forces one end of the adaptive wait, RPMEM_MR_MODE picks the MR mode",
          "[client][env]")
{
	using rpmem::fabric::mr_mode;
	using rpmem::fabric::wait_mode;
	vars = {};
	auto s = read_settings(fake_getenv);
	CHECK(s.wait == wait_mode::adaptive);
	CHECK(s.mr_mode == mr_mode::automatic);
	vars = {{"RPMEM_SPIN", "1"}, {"RPMEM_MR_MODE", "basic"}};
	s = read_settings(fake_getenv);
	CHECK(s.wait == wait_mode::spin);
	CHECK(s.mr_mode == mr_mode::basic);
	vars = {{"RPMEM_SPIN", "0"}, {"RPMEM_MR_MODE", "scalable"}};
	s = read_settings(fake_getenv);
	CHECK(s.wait == wait_mode::block);
	CHECK(s.mr_mode == mr_mode::scalable);
	vars = {{"RPMEM_MR_MODE", "auto"}};
	CHECK(read_settings(fake_getenv).mr_mode == mr_mode::automatic);
}

TEST_CASE("rpmem::describe adds the system's reason once", "[error]")
{
	rpmem::error plain(ETIMEDOUT, "node1: rpmemd ('cat') did not answer within 10000 ms");
	CHECK(rpmem::describe(plain) ==
	      "node1: rpmemd ('cat') did not answer within 10000 ms: Connection timed out");
	CHECK(rpmem::describe(plain) == plain.what());
	// A message that already quotes the reason (storage errors do, mid-sentence, before
	// what to do) is not followed by it a second time.
	rpmem::error quoted(ENOENT, "cannot use poolset directory /x: No such file or directory; "
	                            "create it");
	CHECK(rpmem::describe(quoted) == quoted.message());
	// Another errno's text in the message does not count.
	rpmem::error other(EACCES, "cannot open /x: No such file or directory");
	CHECK(rpmem::describe(other) ==
	      "cannot open /x: No such file or directory: Permission denied");
}

TEST_CASE("RPMEM_REPLICATION picks librpmem's mode, the RPMEM_ASYNC_* variables its bounds",
          "[client][env]")
{
	vars = {};
	auto s = read_settings(fake_getenv);
	CHECK_FALSE(s.async);
	CHECK(s.async_keep_going); // availability first, as RPMEM_ON_OUTAGE
	CHECK(s.async_max_lag_bytes == 64u << 20);
	CHECK(s.async_max_lag_time == std::chrono::milliseconds(1000));
	vars = {{"RPMEM_REPLICATION", "async"},
	        {"RPMEM_ASYNC_ON_FAILURE", "continue"},
	        {"RPMEM_ASYNC_MAX_LAG_BYTES", "1048576"},
	        {"RPMEM_ASYNC_MAX_LAG_MS", "50"}};
	s = read_settings(fake_getenv);
	CHECK(s.async);
	CHECK(s.async_keep_going);
	CHECK(s.async_max_lag_bytes == 1048576);
	CHECK(s.async_max_lag_time == std::chrono::milliseconds(50));
	vars = {{"RPMEM_REPLICATION", "sync"}, {"RPMEM_ASYNC_ON_FAILURE", "fail"}};
	s = read_settings(fake_getenv);
	CHECK_FALSE(s.async);
	CHECK_FALSE(s.async_keep_going);
}
