// SPDX-License-Identifier: BSD-3-Clause
// The .deb packages on a "clean machine": CPack builds them from this build tree once, dpkg-deb
// extracts them into a temporary root, and nothing from the build tree is used but the stock
// libpmemobj example (which links only Debian's libpmemobj).
#include "process.hpp"
#include "replica_fixture.hpp"

#include <fstream>

using namespace rpmem::test;

namespace
{

bool has(const process_result &r, const std::string &text)
{
	return r.output.find(text) != std::string::npos;
}

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

TEST_CASE("CPack builds librpmem1, librpmem-dev and rpmemd with Debian's layout", "[package]")
{
	auto &p = pkgs();
	REQUIRE(p.debs.size() == 3);
	CHECK(has({0, p.field("librpmem1", "Package")}, "librpmem1"));
	CHECK(has({0, p.field("librpmem-dev", "Depends")}, "librpmem1 (= "));
	CHECK(has({0, p.field("librpmem1", "Depends")}, "libfabric1"));
	CHECK(has({0, p.field("rpmemd", "Depends")}, "libpmem1"));

	CHECK(fs::exists(p.libdir() / "librpmem.so.1"));
	CHECK(fs::is_symlink(p.libdir() / "librpmem.so"));
	CHECK(fs::exists(p.prefix() / RPMEM_INSTALL_INCLUDEDIR / "librpmem.h"));
	CHECK(fs::exists(p.libdir() / "pkgconfig" / "librpmem.pc"));
	CHECK(fs::exists(p.libdir() / "cmake" / "rpmem" / "rpmemConfig.cmake"));
	for (auto bin : {"rpmemd", "rpmem", "rpmem-bench"})
		CHECK(fs::exists(p.bindir() / bin));
	auto conf = fs::path(RPMEM_INSTALL_PREFIX) == "/usr"
	                ? p.root / "etc/rpmemd/rpmemd.conf"
	                : p.prefix() / "etc/rpmemd/rpmemd.conf";
	CHECK(fs::exists(conf));
	// rpmemd accepts the example configuration as it ships.
	auto version =
	    run(fmt::format("{}/rpmemd --config {} --version", p.bindir().string(), conf.string()));
	INFO(version.output);
	CHECK(version.status == 0);
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
	for (auto want : {"librpmem.7", "rpmem_create.3", "rpmemd.1", "rpmem.1", "poolset.5"})
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
