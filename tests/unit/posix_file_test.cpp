// SPDX-License-Identifier: BSD-3-Clause
// A file replaced whole (lib/posix/file.cpp): through a new file no one else can have made or
// named in advance, and a failure that says which file and why.
#include "posix/file.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using rpmem::posix::replace_file;

namespace
{

struct temp_dir {
	fs::path path;
	temp_dir()
	{
		std::string t = (fs::temp_directory_path() / "rpmem-posix-XXXXXX").string();
		REQUIRE(::mkdtemp(t.data()) != nullptr);
		path = t;
	}
	~temp_dir()
	{
		std::error_code ec;
		fs::remove_all(path, ec);
	}
};

std::string slurp(const fs::path &p)
{
	std::ifstream f(p);
	std::stringstream s;
	s << f.rdbuf();
	return s.str();
}

/** The file a failure names: the word after `verb`. */
std::string named(const std::string &why, const std::string &verb)
{
	auto at = why.find(verb);
	REQUIRE(at != std::string::npos);
	at += verb.size();
	return why.substr(at, why.find(' ', at) - at);
}

} // namespace

TEST_CASE("replace_file writes through no link and adopts no file planted where a temporary "
          "file once was",
          "[posix]")
{
	temp_dir d;
	const auto path = d.path / "m.prom";
	const auto victim = d.path / "victim";
	std::ofstream(victim) << "precious\n";
	const fs::path pid_name = path.string() + "." + std::to_string(::getpid()) + ".tmp";
	const fs::path tmp_name = path.string() + ".tmp";
	fs::create_symlink(victim, pid_name);
	std::ofstream(tmp_name) << "planted\n";
	REQUIRE(replace_file(path.string(), "new\n", 0640) == 0);
	CHECK(slurp(path) == "new\n");
	CHECK(slurp(victim) == "precious\n");
	CHECK(slurp(tmp_name) == "planted\n");
	CHECK(fs::is_symlink(pid_name));
	struct stat st {
	};
	REQUIRE(::lstat(path.c_str(), &st) == 0);
	CHECK(S_ISREG(st.st_mode));
	CHECK((st.st_mode & 0777) == (0640 & ~[] {
		      mode_t m = ::umask(0);
		      ::umask(m);
		      return m;
	      }()));
	// A link at the target itself is replaced, not followed.
	fs::remove(path);
	fs::create_symlink(victim, path);
	REQUIRE(replace_file(path.string(), "newer\n", 0644) == 0);
	CHECK(!fs::is_symlink(path));
	CHECK(slurp(path) == "newer\n");
	CHECK(slurp(victim) == "precious\n");
}

TEST_CASE("replace_file's new file has another unpredictable name each time, and a failure names "
          "it and the reason, and leaves nothing",
          "[posix]")
{
	temp_dir d;
	const auto path = d.path / "target";
	fs::create_directories(path / "inside"); // a non-empty directory: the rename must fail
	std::string first, second;
	CHECK(replace_file(path.string(), "x", 0644, &first) != 0);
	CHECK(replace_file(path.string(), "x", 0644, &second) != 0);
	INFO(first << "\n" << second);
	CHECK_THAT(first, Catch::Contains("cannot rename " + path.string() + ".") &&
	                      Catch::Contains("(to replace " + path.string() + ")"));
	CHECK_THAT(first, Catch::Contains(std::strerror(EISDIR)));
	const auto a = named(first, "cannot rename "), b = named(second, "cannot rename ");
	CHECK(a != b);
	CHECK(a.find(std::to_string(::getpid())) == std::string::npos);
	std::size_t entries = 0;
	for ([[maybe_unused]] const auto &e : fs::directory_iterator(d.path))
		++entries;
	CHECK(entries == 1); // the new files were removed

	std::string why;
	const auto nowhere = d.path / "absent" / "m.prom";
	CHECK(replace_file(nowhere.string(), "x", 0644, &why) == ENOENT);
	CHECK_THAT(why, Catch::Contains("cannot create the new file " + nowhere.string() + ".") &&
	                    Catch::Contains(std::strerror(ENOENT)));
}
