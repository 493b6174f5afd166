// SPDX-License-Identifier: BSD-3-Clause
// lib/pmdk/part_file and part_set: the one part layer of rpmemd, replicated_pool and the rpmem
// tool, on real files in a temporary directory (Device DAX through a fake sysfs tree lives in
// store_test.cpp: no such device exists here).
#include "pmdk/part_set.hpp"

#include "rpmem/error.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace rpmem::pmdk;

namespace
{

constexpr std::uint64_t MiB = 1u << 20;

struct tmp_dir {
	fs::path root;
	tmp_dir()
	{
		std::string tmpl = (fs::temp_directory_path() / "rpmem-parts-XXXXXX").string();
		REQUIRE(mkdtemp(tmpl.data()) != nullptr);
		root = tmpl;
	}
	~tmp_dir() { fs::remove_all(root); }
	/** Part specs part0..partN-1 of the given sizes, on pool set lines 2, 3... */
	std::vector<rpmem::poolset::part> parts(const std::vector<std::uint64_t> &sizes) const
	{
		std::vector<rpmem::poolset::part> out;
		for (std::size_t i = 0; i < sizes.size(); ++i)
			out.push_back({.size = sizes[i],
			               .path = (root / fmt::format("part{}", i)).string(),
			               .line = static_cast<unsigned>(i + 2)});
		return out;
	}
};

/** What a call threw: its errno and message (0 and "" when it did not throw). */
template <class F> std::pair<int, std::string> failure_of(F &&f)
{
	try {
		f();
	} catch (const rpmem::error &e) {
		return {e.errnum(), e.message()};
	}
	return {0, ""};
}

/** Whether another process can take the part's lock (flock is per open file description,
 *  so a child process is the honest second holder). */
bool locked_elsewhere(const std::string &path)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
		_exit(fd >= 0 && try_lock(fd) == EWOULDBLOCK ? 0 : 1);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void write_file(const std::string &path, std::uint64_t size, char fill_head)
{
	std::ofstream f(path, std::ios::binary);
	std::string head(4096, fill_head);
	f.write(head.data(), static_cast<std::streamsize>(std::min<std::uint64_t>(size, 4096)));
	f.close();
	fs::resize_file(path, size);
}

} // namespace

TEST_CASE("part_set::create makes, allocates and locks every part, 0600", "[pmdk][parts]")
{
	tmp_dir d;
	auto specs = d.parts({2 * MiB, 4 * MiB});
	auto set = part_set::create(specs, specs.size(), part_rules{});
	REQUIRE(set.size() == 2);
	for (std::size_t i = 0; i < set.size(); ++i) {
		struct stat st = {};
		REQUIRE(stat(specs[i].path.c_str(), &st) == 0);
		CHECK((st.st_mode & 0777) == (0600 & ~0022));
		CHECK(static_cast<std::uint64_t>(st.st_size) == specs[i].size);
		CHECK(static_cast<std::uint64_t>(st.st_blocks) * 512 >= specs[i].size); // allocated
		CHECK(set[i].created);
		CHECK(set[i].file_size == specs[i].size);
		CHECK(locked_elsewhere(specs[i].path));
	}
	// Part 0 whole, part 1 past its own header: PMDK's layout.
	CHECK(set.extent_of(0).offset == 0);
	CHECK(set.extent_of(1).offset == pool_hdr_size);
	CHECK(set.pool_size() == 6 * MiB - pool_hdr_size);
}

TEST_CASE("part_set::open locks, and a second open is EBUSY naming the holder", "[pmdk][parts]")
{
	tmp_dir d;
	auto specs = d.parts({2 * MiB});
	part_rules rules;
	rules.in_use_remedy = "close it over there";
	auto first = part_set::create(specs, 1, rules);
	pid_t pid = fork();
	if (pid == 0) {
		auto [e, msg] = failure_of([&] { part_set::open(specs, 1, rules); });
		bool ok = e == EBUSY &&
		          msg.find(specs[0].path + " is in use") != std::string::npos &&
		          msg.find(fmt::format("(pid {})", getppid())) != std::string::npos &&
		          msg.find("close it over there") != std::string::npos;
		_exit(ok ? 0 : 1);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status));
	CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("create adopts an unused part and refuses one in use, removing what it made",
          "[pmdk][parts]")
{
	tmp_dir d;
	auto specs = d.parts({2 * MiB, 2 * MiB});
	part_rules rules;
	rules.owner = "pool p.set";
	SECTION("an empty file and one of the declared size with a zero head are adopted")
	{
		write_file(specs[0].path, 0, 0);
		write_file(specs[1].path, 2 * MiB, 0);
		auto set = part_set::create(specs, 2, rules);
		CHECK_FALSE(set[0].created);
		CHECK_FALSE(set[1].created);
		CHECK(fs::file_size(specs[0].path) == 2 * MiB);
	}
	SECTION("a part whose head is not zero belongs to a pool: EEXIST, and part 0 goes again")
	{
		write_file(specs[1].path, 2 * MiB, 'x');
		auto [e, msg] = failure_of([&] { part_set::create(specs, 2, rules); });
		CHECK(e == EEXIST);
		CHECK_THAT(msg, Catch::Contains("cannot create pool p.set") &&
		                    Catch::Contains(specs[1].path) &&
		                    Catch::Contains("first 4 KiB are not zero"));
		CHECK_FALSE(fs::exists(specs[0].path)); // created by the failed call: removed
		CHECK(fs::exists(specs[1].path));       // not ours: kept
	}
	SECTION("rpmemd's exact rule: a part of another size is declared wrongly")
	{
		rules.sizes = part_rules::size_rule::exact;
		write_file(specs[0].path, 4 * MiB, 0);
		auto [e, msg] = failure_of([&] { part_set::create(specs, 2, rules); });
		CHECK(e == EINVAL);
		CHECK_THAT(msg, Catch::Contains("part " + specs[0].path +
		                                " of pool p.set is 4194304 "
		                                "bytes but the pool set declares 2097152"));
	}
}

TEST_CASE("open checks each part's size by the caller's rule", "[pmdk][parts]")
{
	tmp_dir d;
	auto specs = d.parts({2 * MiB});
	write_file(specs[0].path, 3 * MiB, 0);
	part_rules rules;
	CHECK(failure_of([&] { part_set::open(specs, 1, rules); }).first == 0); // at least
	rules.sizes = part_rules::size_rule::exact;
	CHECK(failure_of([&] { part_set::open(specs, 1, rules); }).first == EINVAL);
	specs[0].size = 4 * MiB;
	rules.sizes = part_rules::size_rule::at_least;
	auto [e, msg] = failure_of([&] { part_set::open(specs, 1, rules); });
	CHECK(e == EINVAL);
	CHECK_THAT(msg, Catch::Contains("fix the size on line 2"));
	rules.sizes = part_rules::size_rule::any;
	CHECK(failure_of([&] { part_set::open(specs, 1, rules); }).first == 0);
}

TEST_CASE("a missing part, or one that is not a file, is refused with its name and why",
          "[pmdk][parts]")
{
	tmp_dir d;
	auto specs = d.parts({2 * MiB});
	auto [e, msg] = failure_of([&] { part_set::open(specs, 1, part_rules{}); });
	CHECK(e == ENOENT);
	CHECK_THAT(msg, Catch::Contains("cannot open " + specs[0].path) &&
	                    Catch::Contains("No such file or directory"));
	specs[0].path = "/dev/null"; // a character device sysfs does not call a Device DAX
	auto [e2, msg2] = failure_of([&] { part_set::open(specs, 1, part_rules{}); });
	CHECK(e2 == EINVAL);
	CHECK_THAT(msg2, Catch::Contains("/dev/null"));
}

TEST_CASE("map() lays the parts back to back, up to a limit", "[pmdk][parts]")
{
	tmp_dir d;
	auto specs = d.parts({2 * MiB, 2 * MiB});
	auto set = part_set::create(specs, 2, part_rules{});
	auto whole = set.map();
	CHECK(whole->size() == set.pool_size());
	// Bytes written past part 0 land in part 1 past its header.
	auto *base = static_cast<std::uint8_t *>(whole->base());
	std::memcpy(base + 2 * MiB, "part one", 8);
	whole->persist(2 * MiB, 8);
	std::ifstream f(specs[1].path, std::ios::binary);
	f.seekg(static_cast<std::streamoff>(pool_hdr_size));
	char got[8];
	f.read(got, 8);
	CHECK(std::string(got, 8) == "part one");
	auto part = set.map(3 * MiB);
	CHECK(part->size() == 3 * MiB);
}

TEST_CASE("headers are written durably through one path and read back", "[pmdk][parts]")
{
	tmp_dir d;
	auto specs = d.parts({2 * MiB, 2 * MiB});
	auto set = part_set::create(specs, 2, part_rules{});
	auto m = set.map();
	header_fields f;
	std::memcpy(f.signature.data(), "TESTSIG", 8);
	f.major = 3;
	f.links.poolset = generate_uuid();
	f.links.self = generate_uuid();
	{
		auto w = set.header(1, *m);
		w.hdr() = encode(f);
		w.persist();
	}
	auto h = set.read_header(1);
	CHECK_FALSE(check_header_alone(h));
	CHECK(decode(h).links.self == f.links.self);
	// The free function takes the same path for a part opened on its own.
	auto g = f;
	g.major = 4;
	write_header(set[0], encode(g));
	CHECK(decode(read_header(set[0])).major == 4);
	CHECK(peek_header(specs[0].path)->part_uuid == f.links.self);
	CHECK(lock_holder_pid(specs[0].path) == getpid());
}

TEST_CASE("a header cannot be read from a part shorter than 4 KiB", "[pmdk][parts]")
{
	tmp_dir d;
	auto specs = d.parts({100});
	write_file(specs[0].path, 100, 'x');
	part_rules rules;
	rules.sizes = part_rules::size_rule::any;
	auto f = open_part(specs[0].path, specs[0].size, specs[0].line, rules);
	auto [e, msg] = failure_of([&] { read_header(f); });
	CHECK(e == EINVAL);
	CHECK_THAT(msg, Catch::Contains("shorter than 4096 bytes"));
}

TEST_CASE("discard removes what create made and zeroes the heads it adopted", "[pmdk][parts]")
{
	tmp_dir d;
	auto specs = d.parts({2 * MiB, 2 * MiB});
	write_file(specs[1].path, 2 * MiB, 0);
	auto set = part_set::create(specs, 2, part_rules{});
	header_fields f;
	f.major = 1;
	write_header(set[1], encode(f));
	set.discard();
	CHECK_FALSE(fs::exists(specs[0].path));
	REQUIRE(fs::exists(specs[1].path));
	auto head = peek_header(specs[1].path);
	REQUIRE(head);
	const auto *b = reinterpret_cast<const std::uint8_t *>(&*head);
	CHECK(std::all_of(b, b + sizeof(*head), [](auto x) { return x == 0; }));
}

TEST_CASE("create never writes a pool through a link planted at a part's name", "[pmdk][parts]")
{
	tmp_dir d;
	auto specs = d.parts({2 * MiB});
	const auto victim = d.root / "victim";
	write_file(victim.string(), 0, 0); // empty: would be adopted as an unused part
	fs::create_symlink(victim, specs[0].path);
	auto [e, msg] = failure_of([&] { part_set::create(specs, 1, part_rules{}); });
	CHECK(e == EEXIST);
	CHECK_THAT(msg, Catch::Contains(specs[0].path) && Catch::Contains("symbolic link"));
	CHECK(fs::file_size(victim) == 0); // untouched
}
