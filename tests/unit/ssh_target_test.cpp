// SPDX-License-Identifier: BSD-3-Clause
// Target strings as PMDK's rpmem_target_parse() reads them, plus the stricter checks, and the
// RPMEM_SSH* environment options.
#include "ssh/options.hpp"
#include "ssh/target.hpp"

#include <rpmem/error.hpp>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>

using rpmem::ssh::destination;
using rpmem::ssh::parse_target;

namespace
{

/** The EINVAL message for text, checked to name the target. */
std::string rejection(const std::string &text)
{
	try {
		parse_target(text);
	} catch (const rpmem::error &e) {
		CHECK(e.errnum() == EINVAL);
		CHECK_THAT(e.message(), Catch::Contains("'" + text + "'"));
		return e.message();
	}
	FAIL("accepted: " << text);
	return {};
}

} // namespace

TEST_CASE("valid targets split into user, host and port", "[ssh][target]")
{
	struct example {
		const char *text;
		destination expected;
	};
	auto [text, expected] = GENERATE(values<example>({
	    {"node", {"", "node", {}}},
	    {"alice@node", {"alice", "node", {}}},
	    {"node:2222", {"", "node", 2222}},
	    {"alice@node:22", {"alice", "node", 22}},
	    {"10.0.0.1", {"", "10.0.0.1", {}}},
	    {"root@10.0.0.1:1", {"root", "10.0.0.1", 1}},
	    {"node:65535", {"", "node", 65535}},
	    {"node:0022", {"", "node", 22}},
	    {"[::1]", {"", "::1", {}}},
	    {"[::1]:2222", {"", "::1", 2222}},
	    {"bob@[fe80::1%eth0]:22", {"bob", "fe80::1%eth0", 22}},
	    {"[node]:22", {"", "node", 22}},
	    {"::1", {"", "::1", {}}},             // two or more colons: a bare IPv6 host
	    {"fe80::1:2", {"", "fe80::1:2", {}}}, // ... even if it ends in something port-like
	    {"bob@2001:db8::7", {"bob", "2001:db8::7", {}}},
	    {"a@b@c", {"a", "b@c", {}}}, // the first '@' ends the user, as in PMDK
	    {"user.name-1@host-1.example.com:2200", {"user.name-1", "host-1.example.com", 2200}},
	}));
	INFO(text);
	CHECK(parse_target(text) == expected);
}

TEST_CASE("str() gives back a string that parses to the same target", "[ssh][target]")
{
	auto text = GENERATE("node", "alice@node", "node:2222", "alice@node:22", "[::1]:2222",
	                     "::1", "bob@fe80::1", "10.0.0.1:7");
	INFO(text);
	auto t = parse_target(text);
	CHECK(t.str() == text);
	CHECK(parse_target(t.str()) == t);
}

TEST_CASE("str() brackets an IPv6 host only when a port follows", "[ssh][target]")
{
	CHECK(destination{"u", "::1", 22}.str() == "u@[::1]:22");
	CHECK(destination{"", "::1", {}}.str() == "::1");
	CHECK(destination{"", "h", {}}.str() == "h");
}

TEST_CASE("empty hosts are rejected", "[ssh][target]")
{
	auto text = GENERATE("", "alice@", "[]", "[]:22", ":22", "alice@:22");
	CHECK_THAT(rejection(text), Catch::Contains("empty host"));
}

TEST_CASE("bad ports are rejected", "[ssh][target]")
{
	SECTION("out of range")
	{
		auto text = GENERATE("node:0", "node:65536", "node:99999999999999999999", "[::1]:0",
		                     "u@node:000");
		CHECK_THAT(rejection(text), Catch::Contains("1..65535"));
	}
	SECTION("not decimal")
	{
		auto text = GENERATE("node:ssh", "node:22a", "node:-1", "node:+22", "node: 22",
		                     "node:0x16", "[::1]:2a");
		CHECK_THAT(rejection(text), Catch::Contains("not a decimal"));
	}
	SECTION("empty")
	{
		auto text = GENERATE("node:", "[::1]:", "u@node:");
		CHECK_THAT(rejection(text), Catch::Contains("empty port"));
	}
}

TEST_CASE("malformed brackets are rejected", "[ssh][target]")
{
	CHECK_THAT(rejection("[::1"), Catch::Contains("']'"));
	CHECK_THAT(rejection("u@[::1:22"), Catch::Contains("']'"));
	CHECK_THAT(rejection("[::1]22"), Catch::Contains("after ']'"));
	CHECK_THAT(rejection("[::1]x:22"), Catch::Contains("after ']'"));
}

TEST_CASE("users and hosts ssh would misread are rejected", "[ssh][target]")
{
	CHECK_THAT(rejection("@node"), Catch::Contains("empty user"));
	// A leading '-' would make ssh read the argument as an option (-oProxyCommand=...).
	CHECK_THAT(rejection("-oProxyCommand=touch /tmp/x"), Catch::Contains("starts with '-'"));
	CHECK_THAT(rejection("-lroot@node"), Catch::Contains("user"));
	CHECK_THAT(rejection("u@-node"), Catch::Contains("host '-node'"));
	CHECK_THAT(rejection("no de"), Catch::Contains("whitespace"));
	CHECK_THAT(rejection("u ser@node"), Catch::Contains("whitespace"));
	CHECK_THAT(rejection("node\n"), Catch::Contains("control"));
	CHECK_THAT(rejection("[a b]:22"), Catch::Contains("whitespace"));
}

TEST_CASE("options come from the RPMEM_SSH* environment", "[ssh][options]")
{
	auto clear = [] {
		for (auto v : {"RPMEM_SSH", "RPMEM_SSH_CONFIG", "RPMEM_SSH_KNOWN_HOSTS",
		               "RPMEM_SSH_IDENTITY", "RPMEM_SSH_TIMEOUT"})
			unsetenv(v);
	};
	clear();
	SECTION("defaults")
	{
		auto o = rpmem::ssh::options::from_environment();
		CHECK(o.config_file.empty());
		CHECK(o.known_hosts_file.empty());
		CHECK(o.identity_files.empty());
		CHECK(o.external_program.empty());
		CHECK(o.connect_timeout == std::chrono::milliseconds(10000));
	}
	SECTION("every variable")
	{
		setenv("RPMEM_SSH", "/usr/bin/ssh", 1);
		setenv("RPMEM_SSH_CONFIG", "/etc/cfg", 1);
		setenv("RPMEM_SSH_KNOWN_HOSTS", "/etc/kh", 1);
		setenv("RPMEM_SSH_IDENTITY", "/k1::/k 2:", 1);
		setenv("RPMEM_SSH_TIMEOUT", "2500", 1);
		auto o = rpmem::ssh::options::from_environment();
		CHECK(o.external_program == "/usr/bin/ssh");
		CHECK(o.config_file == "/etc/cfg");
		CHECK(o.known_hosts_file == "/etc/kh");
		CHECK(o.identity_files == std::vector<std::string>{"/k1", "/k 2"});
		CHECK(o.connect_timeout == std::chrono::milliseconds(2500));
	}
	SECTION("a bad timeout names the variable")
	{
		auto bad = GENERATE("0", "-5", "10s", "", " 5", "99999999999999999999999");
		setenv("RPMEM_SSH_TIMEOUT", bad, 1);
		if (std::string(bad).empty()) {
			CHECK_NOTHROW(rpmem::ssh::options::from_environment()); // empty = unset
		} else {
			try {
				rpmem::ssh::options::from_environment();
				FAIL("accepted RPMEM_SSH_TIMEOUT=" << bad);
			} catch (const rpmem::error &e) {
				CHECK(e.errnum() == EINVAL);
				CHECK_THAT(e.message(), Catch::Contains("RPMEM_SSH_TIMEOUT"));
			}
		}
	}
	SECTION("a timeout too short for any SSH setup is refused as seconds meant as ms")
	{
		setenv("RPMEM_SSH_TIMEOUT", "30", 1);
		try {
			rpmem::ssh::options::from_environment();
			FAIL("accepted RPMEM_SSH_TIMEOUT=30 (30 ms)");
		} catch (const rpmem::error &e) {
			CHECK(e.errnum() == EINVAL);
			CHECK_THAT(e.message(), Catch::Contains("RPMEM_SSH_TIMEOUT=30 is in "
			                                        "milliseconds") &&
			                            Catch::Contains("did you mean 30000"));
		}
		setenv("RPMEM_SSH_TIMEOUT", "1000", 1);
		CHECK(rpmem::ssh::options::from_environment().connect_timeout ==
		      std::chrono::milliseconds(1000));
	}
	clear();
}
