// SPDX-License-Identifier: BSD-3-Clause
// The .deb packages on a "clean machine": CPack builds them from this build tree once, dpkg-deb
// extracts them into a temporary root, and nothing from the build tree is used but the stock
// libpmemobj example (which links only Debian's libpmemobj).
#include "process.hpp"
#include "replica_fixture.hpp"

#include <fstream>
#include <sstream>

using namespace rpmem::test;

namespace
{

void require_ok(const process_result &r, const std::string &what)
{
	INFO(what << " printed:\n" << r.output);
	REQUIRE(r.status == 0);
}

/** The packages, built and extracted once for the whole test binary. */
struct packages {
	fs::path dir = make_temp_dir("/tmp", "rpmem-packages-");
	fs::path root = dir / "root";
	std::vector<fs::path> debs;

	packages()
	{
		auto r = run(fmt::format("cpack --config {}/CPackConfig.cmake -B {}",
		                         RPMEM_BINARY_DIR, (dir / "out").string()));
		INFO("cpack printed:\n" << r.output);
		REQUIRE(r.status == 0);
		for (const auto &e : fs::directory_iterator(dir / "out"))
			if (e.path().extension() == ".deb")
				debs.push_back(e.path());
		std::sort(debs.begin(), debs.end());
		for (const auto &deb : debs)
			require_ok(
			    run(fmt::format("dpkg-deb -x {} {}", deb.string(), root.string())),
			    "dpkg-deb -x " + deb.string());
	}
	~packages()
	{
		std::error_code ec;
		fs::remove_all(dir, ec);
	}
	fs::path prefix() const { return root / fs::path(RPMEM_INSTALL_PREFIX).relative_path(); }
	fs::path libdir() const { return prefix() / RPMEM_INSTALL_LIBDIR; }
	fs::path bindir() const { return prefix() / RPMEM_INSTALL_BINDIR; }
	/** The paths a package holds (dpkg-deb -c), relative to the root: "usr/local/lib/...". */
	std::vector<std::string> contents(const std::string &name) const
	{
		std::vector<std::string> paths;
		for (const auto &d : debs)
			if (d.filename().string().rfind(name + "_", 0) == 0) {
				std::istringstream in(
				    run("dpkg-deb -c " + d.string() + " | awk '{print $6}'")
				        .output);
				for (std::string line; std::getline(in, line);)
					if (line.rfind("./", 0) == 0)
						paths.push_back(line.substr(2));
			}
		return paths;
	}
	std::string field(const std::string &name, const std::string &f) const
	{
		for (const auto &d : debs)
			if (d.filename().string().rfind(name + "_", 0) == 0)
				return run("dpkg-deb -f " + d.string() + " " + f).output;
		return "<no package " + name + ">";
	}
};

packages &pkgs()
{
	static packages p;
	return p;
}

} // namespace

TEST_CASE("CPack builds librpmem1, librpmem-dev, rpmemd and rpmem-tools with Debian's layout",
          "[package]")
{
	auto &p = pkgs();
	REQUIRE(p.debs.size() == 4);
	CHECK(has({0, p.field("librpmem1", "Package")}, "librpmem1"));
	CHECK(has({0, p.field("librpmem-dev", "Depends")}, "librpmem1 (= "));
	// Epoch 1: an upgrade from PMDK-era librpmem1/rpmemd 1.10 (Debian bullseye).
	for (auto pkg : {"librpmem1", "librpmem-dev", "rpmemd", "rpmem-tools"}) {
		auto version = p.field(pkg, "Version");
		INFO(pkg << " " << version);
		CHECK(version.rfind("1:", 0) == 0);
		CHECK(run("dpkg --compare-versions '" + version.substr(0, version.size() - 1) +
		          "' gt 1.10-1")
		          .status == 0);
		auto doc = p.root / "usr/share/doc" / pkg;
		if (fs::path(RPMEM_INSTALL_PREFIX) != "/usr")
			doc = p.prefix() / "share/doc" / pkg;
		CHECK(fs::exists(doc / "copyright"));
		CHECK(fs::exists(doc / "changelog.Debian.gz"));
	}
	// Application hosts install librpmem1 (and rpmem-tools): no SSH server comes with them.
	for (auto pkg : {"librpmem1", "rpmem-tools"}) {
		CHECK(!has({0, p.field(pkg, "Depends")}, "openssh-server"));
		CHECK(!has({0, p.field(pkg, "Recommends")}, "openssh-server"));
	}
	CHECK(!has({0, p.field("librpmem1", "Description")}, ";"));
	// libfabric is loaded at run time (lib/fabric/library.cpp), so dpkg-shlibdeps cannot see
	// it: the packages that open fabric connections name it themselves.
	for (auto pkg : {"librpmem1", "rpmemd", "rpmem-tools"})
		CHECK(has({0, p.field(pkg, "Depends")}, "libfabric1"));
	CHECK(has({0, p.field("rpmemd", "Depends")}, "libpmem1"));

	CHECK(fs::exists(p.libdir() / "librpmem.so.1"));
	CHECK(fs::is_symlink(p.libdir() / "librpmem.so"));
	CHECK(fs::exists(p.prefix() / RPMEM_INSTALL_INCLUDEDIR / "librpmem.h"));
	CHECK(fs::exists(p.libdir() / "pkgconfig" / "librpmem.pc"));
	CHECK(fs::exists(p.libdir() / "cmake" / "rpmem" / "rpmemConfig.cmake"));

	// The C++ API: librpmemcpp.so.0 in the runtime package, the link and headers in -dev.
	auto in = [&](const std::string &pkg, const fs::path &path) {
		auto c = p.contents(pkg);
		auto rel = (fs::path(RPMEM_INSTALL_PREFIX).relative_path() / path).string();
		return std::find(c.begin(), c.end(), rel) != c.end();
	};
	const fs::path lib = RPMEM_INSTALL_LIBDIR, inc = RPMEM_INSTALL_INCLUDEDIR;
	CHECK(in("librpmem1", lib / "librpmemcpp.so.0"));
	CHECK_FALSE(in("librpmem1", lib / "librpmemcpp.so"));
	CHECK(in("librpmem-dev", lib / "librpmemcpp.so"));
	CHECK_FALSE(in("librpmem-dev", lib / "librpmemcpp.so.0"));
	for (auto h : {"pool.hpp", "replicated_pool.hpp", "error.hpp", "export.hpp"})
		CHECK(in("librpmem-dev", inc / "rpmem" / h));
	CHECK(fs::is_symlink(p.libdir() / "librpmemcpp.so"));
	CHECK(has(run("readelf -d " + (p.libdir() / "librpmemcpp.so.0").string()),
	          "Library soname: [librpmemcpp.so.0]"));
	CHECK(has(run("cat " + (p.libdir() / "cmake" / "rpmem").string() + "/rpmemTargets*.cmake"),
	          "rpmem::cpp"));
	for (auto bin : {"rpmemd", "rpmem", "rpmem-bench"}) {
		CHECK(fs::exists(p.bindir() / bin));
		// Stripped: the symbols are in the -dbgsym packages.
		CHECK(has(run("file -L " + (p.bindir() / bin).string()), ", stripped"));
	}
	CHECK(has(run("file -L " + (p.libdir() / "librpmem.so.1").string()), ", stripped"));
	CHECK(in("rpmem-tools", fs::path(RPMEM_INSTALL_BINDIR) / "rpmem"));
	CHECK(in("rpmemd", fs::path(RPMEM_INSTALL_BINDIR) / "rpmemd"));
	auto conf = fs::path(RPMEM_INSTALL_PREFIX) == "/usr"
	                ? p.root / "etc/rpmemd/rpmemd.conf"
	                : p.prefix() / "etc/rpmemd/rpmemd.conf";
	CHECK(fs::exists(conf));
	// rpmemd accepts the example configuration as it ships (--check-config reads it; --version
	// would return before reading it).
	auto check = run(fmt::format("{}/rpmemd --config {} --check-config", p.bindir().string(),
	                             conf.string()));
	INFO(check.output);
	CHECK(check.status == 0);
	CHECK_THAT(check.output, Catch::Contains("configuration is valid; read " + conf.string()));

	// The Prometheus rules with the tools, as promtool accepts them installed. (Here, not in
	// test cases of their own: each test case of this binary runs cpack anew.)
	const auto rules = fs::path(RPMEM_INSTALL_PREFIX).relative_path() / "share/rpmem-tools" /
	                   "prometheus/rpmem.rules.yml";
	CHECK(in("rpmem-tools", fs::path("share/rpmem-tools/prometheus/rpmem.rules.yml")));
	auto promtool = run("promtool check rules " + (p.root / rules).string());
	INFO("promtool printed:\n" << promtool.output);
	CHECK(promtool.status == 0);
	CHECK(has(promtool, "SUCCESS: 14 rules found"));
	// Bash completion where bash-completion loads it by the command's name.
	CHECK(in("rpmem-tools", fs::path("share/bash-completion/completions/rpmem")));
	CHECK(in("rpmemd", fs::path("share/bash-completion/completions/rpmemd")));
}

TEST_CASE("the man pages in the packages render with man -l", "[package][man]")
{
	auto &p = pkgs();
	std::vector<fs::path> pages;
	auto mandir = p.prefix() / RPMEM_INSTALL_MANDIR;
	if (fs::exists(mandir))
		for (const auto &e : fs::recursive_directory_iterator(mandir))
			if (e.is_regular_file())
				pages.push_back(e.path());
	std::vector<std::string> names;
	for (const auto &pg : pages)
		names.push_back(pg.filename().string());
	// Compressed, as Debian ships them; our pool set page does not clash with libpmem1's
	// poolset.5.gz.
	for (auto want : {"librpmem.7.gz", "rpmem_create.3.gz", "rpmemd.1.gz", "rpmem.1.gz",
	                  "rpmem-poolset.5.gz"})
		CHECK(std::find(names.begin(), names.end(), want) != names.end());
	for (const auto &pg : pages) {
		// Warnings from groff (bad macros, unknown escapes) fail too.
		// ".so man3/page.3" links resolve from the top of the man hierarchy.
		auto r =
		    run(fmt::format("cd {} && MANWIDTH=80 man --warnings -l {} 2>&1 >/dev/null",
		                    mandir.string(), pg.string()));
		INFO(pg << ":\n" << r.output);
		CHECK(r.status == 0);
		CHECK(r.output.empty());
	}
}

TEST_CASE("stock libpmemobj replicates through the packaged librpmem.so.1 and rpmemd", "[package]")
{
	auto &p = pkgs();
	sshd server;
	replica node(server);
	node.write_poolset("remote.set", {"80M"});
	auto local = make_temp_dir("/tmp", "rpmem-pkg-local-");
	auto set = local / "pool.set";
	std::ofstream(set) << fmt::format("PMEMPOOLSET\n64M {}\nREPLICA {} remote.set\n",
	                                  (local / "local.part").string(), server.target().str());
	auto o = server.client_options();
	std::string env = fmt::format(
	    "LD_LIBRARY_PATH={} RPMEM_CMD='{}/rpmemd --poolset-dir={} --log-file={} "
	    "--log-level=info' RPMEM_SSH_CONFIG={} RPMEM_SSH_KNOWN_HOSTS={} "
	    "RPMEM_SSH_IDENTITY={}",
	    p.libdir().string(), p.bindir().string(), node.dir().string(), node.log_file().string(),
	    o.config_file, o.known_hosts_file, o.identity_files.at(0));
	const std::string example = std::string(RPMEM_BINARY_DIR) + "/bin/06-pmemobj-replica";

	// LD_DEBUG shows which librpmem.so.1 libpmemobj loaded: the packaged one.
	auto created = run(example + " create " + set.string(), env + " LD_DEBUG=libs");
	require_ok(created, "06-pmemobj-replica create");
	CHECK(has(created, "calling init: " + (p.libdir() / "librpmem.so.1").string()));
	CHECK(fs::file_size(node.part("remote.set")) > 0);
	auto verify = run(example + " verify " + set.string(), env);
	require_ok(verify, "06-pmemobj-replica verify");
	CHECK(has(verify, "800 records: 0 bad"));
	// The packaged tool: sync the replica (libpmemobj's never-persisted run-time state
	// included, see rpmem(1)), then verify finds it identical.
	require_ok(run(p.bindir().string() + "/rpmem sync " + set.string(), env),
	           "packaged rpmem sync");
	require_ok(run(p.bindir().string() + "/rpmem verify " + set.string(), env),
	           "packaged rpmem verify");
	std::error_code ec;
	fs::remove_all(local, ec);
}

TEST_CASE("find_package(rpmem) from the packages builds and runs a C program", "[package]")
{
	auto &p = pkgs();
	auto proj = p.dir / "consumer";
	fs::create_directories(proj);
	std::ofstream(proj / "CMakeLists.txt")
	    << "cmake_minimum_required(VERSION 3.16)\nproject(consumer C)\n"
	       "find_package(rpmem 0.1 REQUIRED)\nadd_executable(consumer main.c)\n"
	       "target_link_libraries(consumer PRIVATE rpmem::rpmem)\n";
	std::ofstream(proj / "main.c")
	    << "#include <librpmem.h>\n#include <stdio.h>\n"
	       "int main(void) {\n"
	       "  unsigned nlanes = 1;\n"
	       "  RPMEMpool *p = rpmem_create(\"\", \"x.set\", NULL, 0, &nlanes, NULL);\n"
	       "  printf(\"pool %p: %s\\n\", (void *)p, rpmem_errormsg());\n"
	       "  return p == NULL ? 0 : 1;\n}\n";
	require_ok(run(fmt::format("cmake -S {0} -B {0}/build -DCMAKE_PREFIX_PATH={1}",
	                           proj.string(), p.prefix().string())),
	           "cmake configure with find_package(rpmem)");
	require_ok(run(fmt::format("cmake --build {}/build", proj.string())), "cmake --build");
	auto r =
	    run((proj / "build" / "consumer").string(), "LD_LIBRARY_PATH=" + p.libdir().string());
	require_ok(r, "the consumer program");
	CHECK(has(r, "pool (nil)"));
}

TEST_CASE("find_package(rpmem) from the packages builds a C++ program on rpmem::cpp that "
          "replicates over the private sshd",
          "[package][cpp]")
{
	auto &p = pkgs();
	sshd server;
	replica node(server);
	node.write_poolset("cpp.set", {"8M"});

	auto proj = p.dir / "consumer-cpp";
	fs::create_directories(proj);
	// No CMAKE_CXX_STANDARD: rpmem::cpp's interface asks for C++20 itself.
	std::ofstream(proj / "CMakeLists.txt")
	    << "cmake_minimum_required(VERSION 3.16)\nproject(consumer_cpp CXX)\n"
	       "find_package(rpmem 0.1 REQUIRED COMPONENTS cpp)\n"
	       "add_executable(consumer-cpp main.cpp)\n"
	       "target_compile_options(consumer-cpp PRIVATE -Wall -Wextra -Wpedantic -Werror)\n"
	       "target_link_libraries(consumer-cpp PRIVATE rpmem::cpp)\n";
	std::ofstream(proj / "main.cpp") << R"(#include <rpmem/pool.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/mman.h>

int main(int argc, char *argv[])
{
	if (argc != 3)
		return 2;
	const std::size_t size = 8u << 20;
	void *mem = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	std::span<std::byte> memory(static_cast<std::byte *>(mem), size);
	const char text[] = "replicated through librpmemcpp.so.0";
	try {
		rpmem::pool_attr attr;
		std::memcpy(attr.signature.data(), "CPPPKG", 6);
		attr.major = 1;
		auto p = rpmem::pool::create(argv[1], argv[2], memory, attr, 2);
		auto record = memory.subspan(rpmem::pool::header_size, sizeof text);
		std::memcpy(record.data(), text, sizeof text);
		p.persist(record);
		std::memset(record.data(), 0, record.size());
		p.read(record, rpmem::pool::header_size);
		std::printf("read back: \"%s\" (%u lanes, %s)\n",
		            reinterpret_cast<const char *>(record.data()), p.lanes(), p.method());
		bool same = std::memcmp(record.data(), text, sizeof text) == 0;
		p.close();
		std::printf("closed: %s\n", same ? "OK" : "MISMATCH");
		if (!same)
			return 1;
	} catch (const rpmem::error &e) {
		std::printf("unexpected rpmem::error %d: %s\n", e.errnum(), e.what());
		return 1;
	}
	// An exception thrown inside the library is caught here as rpmem::error (its typeinfo
	// is exported).
	try {
		auto q = rpmem::pool::open(argv[1], "no-such.set", memory);
		std::printf("opened a pool set that does not exist\n");
		return 1;
	} catch (const rpmem::error &e) {
		std::printf("caught rpmem::error errnum=%d\n", e.errnum());
	}
	return 0;
}
)";
	auto configured = run(fmt::format("cmake -S {0} -B {0}/build -DCMAKE_PREFIX_PATH={1} "
	                                  "-DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON",
	                                  proj.string(), p.prefix().string()));
	require_ok(configured, "cmake configure with find_package(rpmem COMPONENTS cpp)");
	// The package found is the extracted one, not the build tree's.
	CHECK(has({0, slurp(proj / "build" / "CMakeCache.txt")},
	          "rpmem_DIR:PATH=" + (p.libdir() / "cmake" / "rpmem").string()));
	require_ok(run(fmt::format("cmake --build {}/build", proj.string())), "cmake --build");
	const auto exe = (proj / "build" / "consumer-cpp").string();
	// Linked to the shared library, not to a copy of the static one.
	CHECK(has(run("readelf -d " + exe), "Shared library: [librpmemcpp.so.0]"));

	auto o = server.client_options();
	std::string env = fmt::format(
	    "LD_LIBRARY_PATH={} RPMEM_CMD='{}/rpmemd --poolset-dir={} --log-file={} "
	    "--log-level=info' RPMEM_SSH_CONFIG={} RPMEM_SSH_KNOWN_HOSTS={} "
	    "RPMEM_SSH_IDENTITY={} RPMEM_PROVIDER=tcp",
	    p.libdir().string(), p.bindir().string(), node.dir().string(), node.log_file().string(),
	    o.config_file, o.known_hosts_file, o.identity_files.at(0));
	auto r =
	    run(fmt::format("{} {} cpp.set", exe, server.target().str()), env + " LD_DEBUG=libs");
	require_ok(r, "the C++ consumer program");
	CHECK(has(r, "calling init: " + (p.libdir() / "librpmemcpp.so.0").string()));
	CHECK(has(r, "read back: \"replicated through librpmemcpp.so.0\""));
	CHECK(has(r, "closed: OK"));
	CHECK(has(r, "caught rpmem::error errnum="));
	// The remote part holds the record past the 4 KiB header.
	auto part = slurp(node.part("cpp.set"));
	REQUIRE(part.size() > 4096);
	CHECK(part.compare(4096, 35, "replicated through librpmemcpp.so.0") == 0);
}

TEST_CASE("lintian finds no error in the packages", "[package][lintian]")
{
	auto &p = pkgs();
	// Debian's checks assume Debian's paths: the suite's build (scripts/build.sh) uses /usr.
	INFO("the packages were built for the prefix " RPMEM_INSTALL_PREFIX
	     "; lintian judges packages for /usr: configure with -DCMAKE_INSTALL_PREFIX=/usr");
	REQUIRE(std::string(RPMEM_INSTALL_PREFIX) == "/usr");
	std::string debs;
	for (const auto &d : p.debs)
		debs += " " + d.string();
	// Warnings we keep are overridden in the packages themselves (packaging/lintian/), each
	// with its reason; --fail-on error,warning makes any other one fail.
	auto r = run("lintian --fail-on error,warning --no-tag-display-limit" + debs);
	INFO("lintian printed:\n" << r.output);
	CHECK(r.status == 0);
	CHECK(!has(r, "E: "));
	CHECK(!has(r, "W: "));
}
