// SPDX-License-Identifier: BSD-3-Clause
// Pool set parser: every rule of poolset(5) we enforce, with the line and message it reports.
#include "poolset/poolset.hpp"

#include "rpmem/error.hpp"

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace rpmem::poolset;

namespace
{

constexpr std::uint64_t KiB = 1ULL << 10;
constexpr std::uint64_t MiB = 1ULL << 20;
constexpr std::uint64_t GiB = 1ULL << 30;

/** Parses text that must fail and returns the error. */
parse_error failure(const std::string &text)
{
	try {
		parse(text, "test.set");
	} catch (const parse_error &e) {
		return e;
	}
	FAIL("parsed without error:\n" << text);
	throw; // unreachable: FAIL throws
}

/** The error names the file and line, says what is wrong and, after the dash, what to do. */
void check_error(const std::string &text, unsigned line, const std::string &wrong)
{
	parse_error e = failure(text);
	std::string what = e.what();
	INFO("input:\n" << text << "\nerror: " << what);
	CHECK(e.file() == "test.set");
	CHECK(e.line() == line);
	CHECK(what.rfind("test.set:" + std::to_string(line) + ": ", 0) == 0);
	CHECK(what.find(wrong) != std::string::npos);
	CHECK(what.find(" \u2014 ") != std::string::npos);
}

const std::string header = "PMEMPOOLSET\n";

struct temp_file {
	std::filesystem::path path;
	explicit temp_file(const std::string &content)
	    : path(std::filesystem::temp_directory_path() /
	           ("rpmem-poolset-test-" + std::to_string(::getpid()) + ".set"))
	{
		std::ofstream(path, std::ios::binary) << content;
	}
	~temp_file() { std::filesystem::remove(path); }
};

} // namespace

TEST_CASE("poolset: a minimal pool set", "[poolset]")
{
	poolset ps = parse(header + "64M /pmem/pool.part0\n", "x.set");
	CHECK(ps.file == "x.set");
	REQUIRE(ps.replicas.size() == 1);
	const replica &r = ps.replicas[0];
	CHECK_FALSE(r.is_remote());
	CHECK(r.line == 1);
	REQUIRE(r.parts.size() == 1);
	CHECK(r.parts[0].size == 64 * MiB);
	CHECK(r.parts[0].path == "/pmem/pool.part0");
	CHECK(r.parts[0].line == 2);
	CHECK_FALSE(ps.has_remote());
	CHECK_FALSE(ps.opts.single_header);
	CHECK_FALSE(ps.opts.no_headers);
}

TEST_CASE("poolset: every feature together", "[poolset]")
{
	const std::string text = "PMEMPOOLSET  \t\r\n"
	                         "# the master replica\r\n"
	                         "\n"
	                         "   \t \n"
	                         "OPTION SINGLEHDR # one header for the whole pool\n"
	                         "1G /pmem0/a.part   # trailing comment\n"
	                         "\t 512MiB\t/pmem0/b.part\n"
	                         "REPLICA\n"
	                         "1536M /pmem1/a.part\n"
	                         "REPLICA user@node1:2222 pools/remote.set\n"
	                         "REPLICA node2 remote.set\n"
	                         "REPLICA\n"
	                         "2G /pmem2/a.part\n"
	                         "# trailing comment line without newline";
	poolset ps = parse(text);
	CHECK(ps.file == "<string>");
	CHECK(ps.opts.single_header);
	CHECK(ps.has_remote());
	REQUIRE(ps.replicas.size() == 5);

	CHECK(ps.replicas[0].parts.size() == 2);
	CHECK(ps.replicas[0].parts[1].size == 512 * MiB);
	CHECK(ps.replicas[0].parts[1].path == "/pmem0/b.part");
	CHECK(ps.replicas[0].parts[1].line == 7);
	CHECK(ps.replicas[0].total_size() == 1536 * MiB);

	CHECK(ps.replicas[1].line == 8);
	CHECK(ps.replicas[1].parts.size() == 1);

	CHECK(ps.replicas[2].is_remote());
	CHECK(ps.replicas[2].target == "user@node1:2222");
	CHECK(ps.replicas[2].descriptor == "pools/remote.set");
	CHECK(ps.replicas[2].parts.empty());
	CHECK(ps.replicas[2].line == 10);
	CHECK(ps.replicas[3].target == "node2");

	// A local replica may follow a remote one (PMDK accepts it too).
	CHECK_FALSE(ps.replicas[4].is_remote());
	CHECK(ps.replicas[4].parts[0].size == 2 * GiB);
}

TEST_CASE("poolset: options", "[poolset]")
{
	SECTION("NOHDRS")
	{
		poolset ps = parse(header + "OPTION NOHDRS\n8M /p\n");
		CHECK(ps.opts.no_headers);
		CHECK_FALSE(ps.opts.single_header);
	}
	SECTION("anywhere in the file, repeated, several on a line")
	{
		poolset ps =
		    parse(header + "8M /p\nOPTION SINGLEHDR SINGLEHDR\nOPTION SINGLEHDR\n");
		CHECK(ps.opts.single_header);
	}
}

TEST_CASE("poolset: usable and pool sizes follow PMDK's header rules", "[poolset]")
{
	const std::string parts = "8M /a\n8M /b\n16M /c\n";
	SECTION("a header in every part")
	{
		poolset ps = parse(header + parts);
		CHECK(ps.header_count() == 3);
		CHECK(ps.usable_size() == 32 * MiB - 3 * 4096);
		CHECK(ps.pool_size() == 32 * MiB - 2 * 4096);
	}
	SECTION("SINGLEHDR")
	{
		poolset ps = parse(header + "OPTION SINGLEHDR\n" + parts);
		CHECK(ps.header_count() == 1);
		CHECK(ps.usable_size() == 32 * MiB - 4096);
		CHECK(ps.pool_size() == 32 * MiB);
	}
	SECTION("NOHDRS")
	{
		poolset ps = parse(header + "OPTION NOHDRS\n" + parts);
		CHECK(ps.header_count() == 0);
		CHECK(ps.usable_size() == 32 * MiB);
		CHECK(ps.pool_size() == 32 * MiB);
	}
	SECTION("parts are rounded down to 4 KiB as PMDK maps them")
	{
		poolset ps = parse(header + "10000 /a\n8195 /b\n");
		CHECK(ps.pool_size() == 8192 + 8192 - 4096);
		CHECK(ps.usable_size() == 8192 + 8192 - 2 * 4096);
	}
	SECTION("headers larger than the parts give 0, not a wrapped number")
	{
		poolset ps = parse(header + "100 /a\n");
		CHECK(ps.usable_size() == 0);
	}
	SECTION("per replica; remote and missing replicas are EINVAL")
	{
		poolset ps = parse(header + "8M /a\nREPLICA\n16M /b\nREPLICA host r.set\n");
		CHECK(ps.usable_size(1) == 16 * MiB - 4096);
		try {
			(void)ps.usable_size(2);
			FAIL("remote replica has a size");
		} catch (const rpmem::error &e) {
			CHECK(e.errnum() == EINVAL);
			CHECK(std::string(e.what()).find(
			          "<string>:5: replica 2 is remote (host)") != std::string::npos);
		}
		CHECK_THROWS_AS(ps.usable_size(3), rpmem::error);
	}
}

TEST_CASE("poolset: size suffixes are util_parse_size's", "[poolset]")
{
	struct row {
		const char *text;
		std::uint64_t value;
	};
	const row good[] = {
	    {"1", 1},
	    {"4096", 4096},
	    {"7B", 7},
	    {"2K", 2 * KiB},
	    {"2KiB", 2 * KiB},
	    {"3M", 3 * MiB},
	    {"3MiB", 3 * MiB},
	    {"5G", 5 * GiB},
	    {"5GiB", 5 * GiB},
	    {"1T", 1ULL << 40},
	    {"1TiB", 1ULL << 40},
	    {"1P", 1ULL << 50},
	    {"1PiB", 1ULL << 50},
	    {"2kB", 2000},
	    {"2MB", 2000000},
	    {"2GB", 2000000000},
	    {"2TB", 2000000000000},
	    {"2PB", 2000000000000000},
	    {"007M", 7 * MiB},
	    {"18446744073709551615", 18446744073709551615ULL},
	    {"16383P", 16383ULL << 50},
	};
	for (const auto &r : good) {
		std::uint64_t v = 0;
		INFO(r.text);
		CHECK(parse_size(r.text, v));
		CHECK(v == r.value);
	}
	// PMDK's table is case sensitive: no "KB", "k", "mib"; no signs, blanks, hex or fractions.
	const char *bad[] = {"",       "M",
	                     "KB",     "k",
	                     "m",      "mib",
	                     "1KB",    "1k",
	                     "1mib",   "1Ki",
	                     "1 M",    "+1",
	                     "-1",     " 1",
	                     "1 ",     "0x10",
	                     "1.5G",   "1e3",
	                     "1MM",    "1iB",
	                     "1E",     "18446744073709551616",
	                     "16384P", "99999999999999999999999",
	                     "20000PB"};
	for (const char *b : bad) {
		std::uint64_t v = 12345;
		INFO(b);
		CHECK_FALSE(parse_size(b, v));
		CHECK(v == 12345);
	}
}

TEST_CASE("poolset: errors name the file, the line and the offending token", "[poolset]")
{
	SECTION("signature")
	{
		check_error("", 1, "the file is empty");
		check_error("PMEMPOOLSET2\n1M /a\n", 1, "'PMEMPOOLSET2', not PMEMPOOLSET");
		check_error(" PMEMPOOLSET\n1M /a\n", 1, "' PMEMPOOLSET', not PMEMPOOLSET");
		check_error("pmempoolset\n1M /a\n", 1, "'pmempoolset'");
		check_error("# comment\nPMEMPOOLSET\n1M /a\n", 1, "'# comment'");
	}
	SECTION("no parts")
	{
		check_error(header, 1, "the pool set has no parts");
		check_error(header + "# nothing\n\n", 3, "the pool set has no parts");
		check_error(header + "OPTION SINGLEHDR\n", 2, "the pool set has no parts");
	}
	SECTION("part lines")
	{
		check_error(header + "64M\n", 2, "part line '64M' has a size but no path");
		check_error(header + "/pmem/a\n", 2, "part line '/pmem/a' has a path but no size");
		check_error(header + "1M /a\n64M /my pool\n", 3,
		            "unexpected token 'pool' after path '/my'");
		CHECK(std::string(failure(header + "64M /my pool\n").what())
		          .find("paths with spaces are not supported") != std::string::npos);
		check_error(header + "64M pool.part\n", 2, "part path 'pool.part' is not absolute");
		check_error(header + "64M ./pool.part\n", 2, "'./pool.part' is not absolute");
		check_error(header + "1M /a\n2M /b\n3M /a\n", 4,
		            "part path '/a' is already used at line 2");
		check_error(header + "1M /a\nREPLICA\n3M /a\n", 4, "already used at line 2");
	}
	SECTION("part sizes")
	{
		check_error(header + "0 /a\n", 2, "part size '0' is zero");
		check_error(header + "0G /a\n", 2, "part size '0G' is zero");
		check_error(header + "64X /a\n", 2, "invalid part size '64X'");
		check_error(header + "64KB /a\n", 2, "invalid part size '64KB'");
		check_error(header + "1.5G /a\n", 2, "invalid part size '1.5G'");
		check_error(header + "-1 /a\n", 2, "unexpected '-1' at the start of a line");
		check_error(header + "18446744073709551616 /a\n", 2,
		            "part size '18446744073709551616' does not fit in 64 bits");
		check_error(header + "16384P /a\n", 2, "'16384P' does not fit in 64 bits");
		check_error(header + "16383P /a\n16383P /b\n", 3,
		            "part size '16383P' makes the replica larger than 2^64 bytes");
		check_error(header + "AUTO /dev/dax0.0\n", 2, "AUTO (size of a Device DAX)");
	}
	SECTION("unknown keywords")
	{
		check_error(header + "1M /a\nreplica\n", 3, "unexpected 'replica' at the start");
		check_error(header + "1M /a\nREPLICAS\n", 3, "unexpected 'REPLICAS' at the start");
		check_error(header + "1M /a\nOPTIONS SINGLEHDR\n", 3, "unexpected 'OPTIONS'");
	}
	SECTION("options")
	{
		check_error(header + "OPTION\n1M /a\n", 2, "OPTION without a name");
		check_error(header + "OPTION FOO\n1M /a\n", 2, "unknown option 'FOO'");
		check_error(header + "OPTION singlehdr\n1M /a\n", 2, "unknown option 'singlehdr'");
		check_error(header + "OPTION SINGLEHDR BAR\n1M /a\n", 2, "unknown option 'BAR'");
		check_error(header + "OPTION SINGLEHDR\n1M /a\nOPTION NOHDRS\n", 4,
		            "OPTION SINGLEHDR and OPTION NOHDRS are both given (first at line 2)");
		check_error(header + "OPTION NOHDRS SINGLEHDR\n1M /a\n", 2, "are both given");
	}
	SECTION("local replicas")
	{
		check_error(header + "REPLICA\n1M /a\n", 2,
		            "REPLICA before any part of the master replica");
		check_error(header + "1M /a\nREPLICA\n# nothing\nREPLICA\n2M /b\n", 3,
		            "the local REPLICA has no parts");
		check_error(header + "1M /a\nREPLICA\n\n", 3, "the local REPLICA has no parts");
		check_error(header + "1M /a\nREPLICA host r.set\nREPLICA\n", 4,
		            "the local REPLICA has no parts");
	}
	SECTION("remote replicas")
	{
		check_error(header + "REPLICA host r.set\n", 2,
		            "REPLICA before any part of the master replica");
		check_error(header + "1M /a\nREPLICA host\n", 3,
		            "REPLICA 'host' has a target but no pool set descriptor");
		check_error(header + "1M /a\nREPLICA host r.set extra\n", 3,
		            "unexpected token 'extra' after REPLICA host r.set");
		check_error(header + "1M /a\nREPLICA host /abs/r.set\n", 3,
		            "remote pool set descriptor '/abs/r.set' is absolute");
		check_error(header + "1M /a\nREPLICA host r.set\n1M /b\n", 4,
		            "part line after the remote REPLICA at line 3");
	}
	SECTION("binary junk")
	{
		check_error(header + std::string("1M /a\0b\n", 8), 2, "control character 0x00");
		check_error(header + "1M /a\r\r\n", 2, "control character 0x0d");
		check_error(header + "1M /a\rb\n", 2, "control character 0x0d");
		check_error(header + "1M /a\x7f\n", 2, "control character 0x7f");
	}
}

TEST_CASE("poolset: to_string writes a canonical file that parses back", "[poolset]")
{
	const std::string text = "PMEMPOOLSET\n"
	                         "1G /pmem0/a\n"
	                         "4097 /pmem0/b # odd size\n"
	                         "OPTION SINGLEHDR\n"
	                         "REPLICA\n"
	                         "2000kB /pmem1/a\n"
	                         "REPLICA user@host:22 dir/remote.set\n";
	poolset ps = parse(text);
	std::string canonical = to_string(ps);
	CHECK(canonical == "PMEMPOOLSET\n"
	                   "OPTION SINGLEHDR\n"
	                   "1G /pmem0/a\n"
	                   "4097 /pmem0/b\n"
	                   "REPLICA\n"
	                   "2000000 /pmem1/a\n"
	                   "REPLICA user@host:22 dir/remote.set\n");
	poolset again = parse(canonical);
	CHECK(to_string(again) == canonical);
	REQUIRE(again.replicas.size() == ps.replicas.size());
	CHECK(again.replicas[0].parts[1].size == 4097);
	CHECK(again.usable_size() == ps.usable_size());

	SECTION("every suffix")
	{
		poolset big = parse(header + "OPTION NOHDRS\n3K /a\n5M /b\n7G /c\n9T /d\n11P /e\n");
		CHECK(to_string(big) ==
		      header + "OPTION NOHDRS\n3K /a\n5M /b\n7G /c\n9T /d\n11P /e\n");
	}
	SECTION("a pool set that cannot be written is EINVAL")
	{
		poolset bad = ps;
		bad.replicas[0].parts[0].path = "/with space";
		CHECK_THROWS_AS(to_string(bad), rpmem::error);
		bad = ps;
		bad.replicas[0].parts[0].path = "/with#hash";
		CHECK_THROWS_AS(to_string(bad), rpmem::error);
		bad = ps;
		bad.replicas[2].parts.push_back(part{});
		CHECK_THROWS_AS(to_string(bad), rpmem::error);
		bad = ps;
		bad.replicas[1].parts.clear();
		try {
			(void)to_string(bad);
			FAIL("empty replica written");
		} catch (const rpmem::error &e) {
			CHECK(e.errnum() == EINVAL);
			CHECK(e.message().find("the local REPLICA has no parts") !=
			      std::string::npos);
		}
	}
}

TEST_CASE("poolset: files", "[poolset]")
{
	SECTION("parse_file names the file in errors")
	{
		temp_file f(header + "1M /a\n1M relative\n");
		try {
			parse_file(f.path.string());
			FAIL("parsed");
		} catch (const parse_error &e) {
			CHECK(e.file() == f.path.string());
			CHECK(e.line() == 3);
			CHECK(std::string(e.what()).rfind(f.path.string() + ":3: ", 0) == 0);
		}
	}
	SECTION("an unreadable file is line 0 with the errno text")
	{
		try {
			parse_file("/nonexistent/dir/x.set");
			FAIL("parsed");
		} catch (const parse_error &e) {
			CHECK(e.line() == 0);
			CHECK(
			    std::string(e.what()) ==
			    "/nonexistent/dir/x.set: cannot open: No such file or directory \u2014 "
			    "check the path and its permissions");
		}
		CHECK_THROWS_AS(is_poolset_file("/nonexistent/dir/x.set"), parse_error);
	}
	SECTION("is_poolset_file tells pool set files from pool files")
	{
		temp_file set(header + "1M /a\n");
		CHECK(is_poolset_file(set.path.string()));
		temp_file pool(std::string("PMEMOBJ\0\0\0\0\0\0", 14));
		CHECK_FALSE(is_poolset_file(pool.path.string()));
		temp_file tiny("PMEM");
		CHECK_FALSE(is_poolset_file(tiny.path.string()));
	}
	SECTION("a huge file is refused before it is read whole")
	{
		temp_file big(header + std::string(2 << 20, '#'));
		try {
			parse_file(big.path.string());
			FAIL("parsed");
		} catch (const parse_error &e) {
			CHECK(e.line() == 0);
			CHECK(std::string(e.what()).find("too large for a pool set file") !=
			      std::string::npos);
		}
	}
}

TEST_CASE("poolset: the sample pool sets in poolsets/ parse", "[poolset]")
{
	const std::string dir = RPMEM_SOURCE_DIR "/poolsets/";

	poolset lr = parse_file(dir + "local-with-remote.set");
	REQUIRE(lr.replicas.size() == 2);
	CHECK(lr.replicas[0].parts.at(0).size == 64 * MiB);
	CHECK(lr.replicas[0].parts.at(0).path.rfind("/tmp/rpmem-example/", 0) == 0);
	CHECK(lr.replicas[1].target == "root@127.0.0.1");
	CHECK(lr.replicas[1].descriptor == "remote.set");

	// The replica must hold the local pool: PMDK compares the pool sizes.
	poolset remote = parse_file(dir + "remote.set");
	REQUIRE(remote.replicas.size() == 1);
	CHECK_FALSE(remote.has_remote());
	CHECK(remote.replicas[0].parts.at(0).path.rfind("/tmp/rpmem-example/remote/", 0) == 0);
	CHECK(remote.pool_size() >= lr.pool_size());

	poolset multi = parse_file(dir + "multipart.set");
	CHECK(multi.replicas.size() == 1);
	CHECK(multi.replicas[0].parts.size() == 3);

	poolset single = parse_file(dir + "singlehdr.set");
	CHECK(single.opts.single_header);
	CHECK(single.usable_size() == single.replicas[0].total_size() - header_size);
}
