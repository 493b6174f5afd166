// SPDX-License-Identifier: BSD-3-Clause
// rpmemd pool store: real part files in a temporary poolset directory, real mappings, and
// PMDK's own pmempool as the judge of header compatibility.
#include "pmdk/device_dax.hpp"
#include "pool_header.hpp"
#include "pool_store.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using rpmem::control::pool_attr;
using rpmem::control::status;
using rpmemd::pool_hdr;
using rpmemd::pool_store;
using rpmemd::store_error;

namespace
{

constexpr std::uint64_t MiB = 1u << 20;

/** A temporary poolset directory (sets/) with room for part files (parts/). */
struct tmp_store {
	fs::path root;
	fs::path sets;
	fs::path parts;
	pool_store store;

	tmp_store() : root(make_root()), sets(root / "sets"), parts(root / "parts"), store(init())
	{
	}
	~tmp_store() { fs::remove_all(root); }

	static fs::path make_root()
	{
		std::string tmpl = (fs::temp_directory_path() / "rpmemd-store-XXXXXX").string();
		REQUIRE(mkdtemp(tmpl.data()) != nullptr);
		return tmpl;
	}
	std::string init()
	{
		fs::create_directories(sets);
		fs::create_directories(parts);
		return sets.string();
	}
	/** Writes sets/<name>: the option lines, then one part line per size. */
	void write_set(const std::string &name, const std::vector<std::uint64_t> &sizes,
	               const std::string &options = "")
	{
		std::ofstream f(sets / name);
		f << "PMEMPOOLSET\n" << options;
		for (std::size_t i = 0; i < sizes.size(); ++i)
			f << sizes[i] << " " << part(name, i) << "\n";
	}
	std::string part(const std::string &set, std::size_t i) const
	{
		return (parts / fmt::format("{}.part{}", set, i)).string();
	}
};

pool_attr obj_attr()
{
	// What libpmemobj 1.12.1 (Debian, built with ndctl) hands librpmem for a remote replica.
	pool_attr a;
	std::memcpy(a.signature.data(), "PMEMOBJ", 8);
	a.major = 6;
	a.compat_features = rpmemd::feat_compat_check_bad_blocks;
	a.incompat_features = rpmemd::feat_incompat_cksum_2k | rpmemd::feat_incompat_sds;
	a.poolset_uuid = rpmemd::generate_uuid();
	a.uuid = rpmemd::generate_uuid();
	a.next_uuid = rpmemd::generate_uuid();
	a.prev_uuid = rpmemd::generate_uuid();
	auto af = rpmemd::host_arch_flags();
	std::memcpy(a.user_flags.data(), &af, sizeof(af));
	return a;
}

status status_of(const std::function<void()> &f)
{
	try {
		f();
	} catch (const store_error &e) {
		return e.status();
	}
	FAIL("expected a store_error");
	return status::success;
}

std::string message_of(const std::function<void()> &f)
{
	try {
		f();
	} catch (const store_error &e) {
		return e.message();
	}
	return "(no error)";
}

std::vector<char> read_file(const std::string &path, std::uint64_t off, std::size_t len)
{
	std::vector<char> buf(len);
	std::ifstream f(path, std::ios::binary);
	f.seekg(static_cast<std::streamoff>(off));
	f.read(buf.data(), static_cast<std::streamsize>(len));
	REQUIRE(f.gcount() == static_cast<std::streamsize>(len));
	return buf;
}

pool_hdr read_header(const std::string &path)
{
	pool_hdr h{};
	auto b = read_file(path, 0, sizeof(h));
	std::memcpy(&h, b.data(), sizeof(h));
	return h;
}

void poke(const std::string &path, std::uint64_t off, char byte)
{
	std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
	f.seekp(static_cast<std::streamoff>(off));
	f.put(byte);
}

struct command_result {
	int rc;
	std::string out;
};

command_result run(const std::string &cmd)
{
	command_result r{-1, {}};
	std::FILE *p = popen((cmd + " 2>&1").c_str(), "r");
	REQUIRE(p != nullptr);
	char buf[4096];
	while (std::size_t n = std::fread(buf, 1, sizeof(buf), p))
		r.out.append(buf, n);
	int st = pclose(p);
	r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return r;
}

void make_file(const fs::path &path, std::uint64_t size)
{
	std::ofstream{path};
	fs::resize_file(path, size);
}

bool have_pmempool()
{
	return run("command -v pmempool").rc == 0;
}

} // namespace

TEST_CASE("header layout and checksum match PMDK's pmempool", "[store][header]")
{
	if (!have_pmempool()) {
		WARN("pmempool (pmdk-tools) is not installed: skipped");
		return;
	}
	tmp_store t;
	std::string file = (t.parts / "pmdk.obj").string();
	auto r = run(fmt::format("pmempool create --size 8M obj {}", file));
	REQUIRE(r.rc == 0);
	pool_hdr h = read_header(file);
	CHECK(rpmemd::load_le(h.checksum) == rpmemd::header_checksum(h));
	CHECK_FALSE(rpmemd::check_header(h, h, h.part_uuid, h.part_uuid));
	auto host = rpmemd::host_arch_flags();
	CHECK(std::memcmp(&h.arch, &host, sizeof(host)) == 0);
	// A byte inside the checksummed 2 KiB is detected; libpmemobj uses CKSUM_2K.
	h.unused[100] = 1;
	CHECK(rpmemd::load_le(h.checksum) != rpmemd::header_checksum(h));
}

TEST_CASE("create, close, open returns the attributes stored", "[store]")
{
	tmp_store t;
	t.write_set("pool.set", {8 * MiB});
	pool_attr a = obj_attr();
	{
		auto p = t.store.create("pool.set", a, 8 * MiB);
		CHECK(p->size() == 8 * MiB);
		CHECK(p->has_headers());
		CHECK(p->attr() == a);
		CHECK(p->descriptor() == "pool.set");
	}
	auto p = t.store.open("pool.set", 4 * MiB);
	CHECK(p->attr() == a);
	CHECK(p->size() == 8 * MiB);

	SECTION("zero replica UUIDs and user flags become the part's UUID and the host's flags")
	{
		p.reset();
		t.write_set("b.set", {2 * MiB});
		pool_attr z = a;
		z.prev_uuid = {};
		z.next_uuid = {};
		z.user_flags = {};
		z.poolset_uuid = {};
		auto q = t.store.create("b.set", z, 0);
		CHECK(q->attr().prev_uuid == a.uuid);
		CHECK(q->attr().next_uuid == a.uuid);
		CHECK(q->attr().user_flags == a.user_flags);
		CHECK(q->attr().poolset_uuid != rpmemd::uuid{});
	}
}

TEST_CASE("set_attr rewrites every part header and survives reopening", "[store]")
{
	tmp_store t;
	t.write_set("pool.set", {2 * MiB, 2 * MiB, 3 * MiB});
	t.store.create("pool.set", obj_attr(), 0);
	pool_attr b = obj_attr();
	std::memcpy(b.signature.data(), "OTHER\0\0", 8);
	b.major = 7;
	t.store.open("pool.set", 0)->set_attr(b);
	// open validates links, checksums and UUIDs of all three headers.
	auto p = t.store.open("pool.set", 0);
	CHECK(p->attr() == b);
	for (std::size_t i = 0; i < 3; ++i)
		CHECK(read_header(t.part("pool.set", i)).poolset_uuid == b.poolset_uuid);
	CHECK(status_of([&] { p->set_attr(std::nullopt); }) == status::pool_cfg);
}

TEST_CASE("a multi-part pool is one contiguous range", "[store]")
{
	tmp_store t;
	t.write_set("pool.set", {2 * MiB, 2 * MiB, 2 * MiB});
	std::uint64_t boundary = 2 * MiB; // part 1 starts here, mapped from its file offset 4096
	{
		auto p = t.store.create("pool.set", obj_attr(), 0);
		REQUIRE(p->size() == 6 * MiB - 2 * 4096);
		// No DAX file system here: pmem only when libpmem is told to pretend.
		const char *force = std::getenv("PMEM_IS_PMEM_FORCE");
		CHECK(p->is_pmem() == (force != nullptr && std::string(force) == "1"));
		auto *base = static_cast<char *>(p->base());
		for (std::uint64_t i = 0; i < 8192; ++i)
			base[boundary - 4096 + i] = static_cast<char>(i * 7 + 1);
		base[p->size() - 1] = 'Z';
		p->persist(boundary - 4096, 8192);
		p->deep_persist(p->size() - 1, 1);
		CHECK_THROWS_AS(p->persist(p->size() - 1, 2), rpmem::error);
	}
	auto tail0 = read_file(t.part("pool.set", 0), boundary - 4096, 4096);
	auto head1 = read_file(t.part("pool.set", 1), 4096, 4096);
	for (std::uint64_t i = 0; i < 4096; ++i) {
		REQUIRE(tail0[i] == static_cast<char>(i * 7 + 1));
		REQUIRE(head1[i] == static_cast<char>((i + 4096) * 7 + 1));
	}
	CHECK(read_file(t.part("pool.set", 2), 2 * MiB - 1, 1)[0] == 'Z');
	CHECK(read_header(t.part("pool.set", 1)).signature == obj_attr().signature);
}

TEST_CASE("SINGLEHDR pools have one header and map later parts whole", "[store]")
{
	tmp_store t;
	t.write_set("pool.set", {2 * MiB, 2 * MiB}, "OPTION SINGLEHDR\n");
	pool_attr a = obj_attr();

	SECTION("the feature flag must match the option")
	{
		CHECK(status_of([&] { t.store.create("pool.set", a, 0); }) == status::pool_cfg);
		CHECK_FALSE(fs::exists(t.part("pool.set", 0)));
	}
	SECTION("with the flag")
	{
		a.incompat_features |= rpmemd::feat_incompat_singlehdr;
		{
			auto p = t.store.create("pool.set", a, 0);
			REQUIRE(p->size() == 4 * MiB);
			static_cast<char *>(p->base())[2 * MiB] = 'S';
			p->persist(2 * MiB, 1);
		}
		CHECK(read_file(t.part("pool.set", 1), 0, 1)[0] == 'S');
		CHECK(t.store.open("pool.set", 0)->attr() == a);
	}
}

TEST_CASE("NOHDRS pools carry no header and no attributes", "[store]")
{
	tmp_store t;
	t.write_set("pool.set", {2 * MiB, 2 * MiB}, "OPTION NOHDRS\n");
	t.write_set("hdrs.set", {2 * MiB});
	CHECK(status_of([&] { t.store.create("pool.set", obj_attr(), 0); }) == status::pool_cfg);
	CHECK(status_of([&] { t.store.create("hdrs.set", std::nullopt, 0); }) == status::pool_cfg);
	CHECK(status_of([&] { t.store.create("hdrs.set", pool_attr{}, 0); }) == status::pool_cfg);
	{
		auto p = t.store.create("pool.set", std::nullopt, 4 * MiB);
		CHECK_FALSE(p->has_headers());
		CHECK(p->attr() == pool_attr{});
		CHECK(p->size() == 4 * MiB);
		static_cast<char *>(p->base())[0] = 'N';
		static_cast<char *>(p->base())[2 * MiB] = 'M';
		p->persist(0, 4 * MiB);
		p->set_attr(std::nullopt);
		CHECK(status_of([&] { p->set_attr(obj_attr()); }) == status::pool_cfg);
	}
	CHECK(read_file(t.part("pool.set", 0), 0, 1)[0] == 'N');
	CHECK(read_file(t.part("pool.set", 1), 0, 1)[0] == 'M');
	CHECK(t.store.open("pool.set", 0)->attr() == pool_attr{});
}

TEST_CASE("an open pool is busy for everyone else", "[store]")
{
	tmp_store t;
	t.write_set("pool.set", {2 * MiB, 2 * MiB});
	auto p = t.store.create("pool.set", obj_attr(), 0);
	CHECK(status_of([&] { t.store.open("pool.set", 0); }) == status::busy);
	auto msg = message_of([&] { t.store.open("pool.set", 0); });
	CHECK_THAT(msg,
	           Catch::Contains("pool.set") && Catch::Contains(fmt::format("pid {}", getpid())));
	CHECK(status_of([&] { t.store.remove("pool.set", false, false); }) == status::busy);
	CHECK(status_of([&] { t.store.remove("pool.set", true, true); }) == status::busy);
	CHECK(fs::exists(t.part("pool.set", 0)));
	CHECK(fs::exists(t.part("pool.set", 1)));
	p.reset();
	CHECK_NOTHROW(t.store.open("pool.set", 0));
}

TEST_CASE("missing and unreadable parts say so", "[store]")
{
	tmp_store t;
	t.write_set("pool.set", {2 * MiB, 2 * MiB});
	CHECK(status_of([&] { t.store.open("pool.set", 0); }) == status::noexist);
	t.store.create("pool.set", obj_attr(), 0);
	if (geteuid() != 0) {
		fs::permissions(t.part("pool.set", 1), fs::perms::none);
		CHECK(status_of([&] { t.store.open("pool.set", 0); }) == status::noaccess);
		fs::permissions(t.part("pool.set", 1), fs::perms::owner_all);
	}
	fs::resize_file(t.part("pool.set", 1), 3 * MiB);
	CHECK_THAT(message_of([&] { t.store.open("pool.set", 0); }),
	           Catch::Contains(t.part("pool.set", 1)) && Catch::Contains("declares"));
}

TEST_CASE("descriptors stay inside the poolset directory", "[store][confinement]")
{
	tmp_store t;
	t.write_set("pool.set", {2 * MiB});
	fs::create_directories(t.sets / "sub");
	fs::create_directories(t.parts / "sub");
	t.write_set("sub/inner.set", {2 * MiB});
	std::ofstream(t.root / "outside.set") << "PMEMPOOLSET\n2M " << t.part("out", 0) << "\n";
	fs::create_symlink(t.root / "outside.set", t.sets / "escape.set");
	fs::create_symlink(t.root, t.sets / "updir");
	fs::create_symlink("/dev/null", t.sets / "null.set");
	fs::create_symlink(t.sets / "pool.set", t.sets / "alias.set");

	for (const char *bad :
	     {"../outside.set", "/etc/passwd", "sub/../../outside.set", "..", "escape.set",
	      "updir/outside.set", "null.set", "/dev/null", "sub", ""}) {
		INFO(bad);
		CHECK(status_of([&] { t.store.resolve(bad); }) == status::badname);
		CHECK(status_of([&] { t.store.create(bad, obj_attr(), 0); }) == status::badname);
	}
	CHECK_FALSE(fs::exists(t.part("out", 0)));
	CHECK(status_of([&] { t.store.resolve("missing.set"); }) == status::noexist);
	CHECK(t.store.resolve("alias.set") == fs::canonical(t.sets / "pool.set").string());
	CHECK_NOTHROW(t.store.create("sub/inner.set", obj_attr(), 0));
	CHECK_NOTHROW(t.store.create("./alias.set", obj_attr(), 0));
	CHECK(status_of([] { pool_store("relative/dir"); }) == status::fatal);
}

TEST_CASE("part files are 0600 and honour the umask", "[store]")
{
	tmp_store t;
	t.write_set("a.set", {2 * MiB});
	t.write_set("b.set", {2 * MiB});
	mode_t old = umask(022);
	t.store.create("a.set", obj_attr(), 0);
	umask(0277);
	t.store.create("b.set", obj_attr(), 0);
	umask(old);
	CHECK((fs::status(t.part("a.set", 0)).permissions() & fs::perms::all) ==
	      (fs::perms::owner_read | fs::perms::owner_write));
	CHECK((fs::status(t.part("b.set", 0)).permissions() & fs::perms::all) ==
	      fs::perms::owner_read);
}

TEST_CASE("a failed create leaves no part file behind", "[store]")
{
	tmp_store t;
	SECTION("a part in a missing directory")
	{
		std::ofstream(t.sets / "pool.set")
		    << "PMEMPOOLSET\n2M " << t.part("pool.set", 0) << "\n2M "
		    << (t.root / "nodir" / "p1").string() << "\n";
		CHECK(status_of([&] { t.store.create("pool.set", obj_attr(), 0); }) ==
		      status::noexist);
	}
	SECTION("a part below 2 MiB")
	{
		t.write_set("pool.set", {2 * MiB, 1 * MiB});
		CHECK(status_of([&] { t.store.create("pool.set", obj_attr(), 0); }) ==
		      status::pool_cfg);
	}
	SECTION("a pool smaller than the client's")
	{
		t.write_set("pool.set", {2 * MiB});
		auto e = message_of([&] { t.store.create("pool.set", obj_attr(), 4 * MiB); });
		CHECK(status_of([&] { t.store.create("pool.set", obj_attr(), 4 * MiB); }) ==
		      status::badsize);
		CHECK_THAT(e, Catch::Contains("4194304"));
	}
	SECTION("a part that already holds a pool")
	{
		t.write_set("pool.set", {2 * MiB, 2 * MiB});
		t.write_set("other.set", {2 * MiB});
		t.store.create("other.set", obj_attr(), 0);
		fs::copy_file(t.part("other.set", 0), t.part("pool.set", 1));
		CHECK(status_of([&] { t.store.create("pool.set", obj_attr(), 0); }) ==
		      status::exists);
		CHECK(fs::exists(t.part("pool.set", 1))); // not ours: left alone
		fs::remove(t.part("pool.set", 1));
		t.store.remove("other.set", false, false);
	}
	SECTION("REPLICA lines")
	{
		std::ofstream(t.sets / "pool.set")
		    << "PMEMPOOLSET\n2M " << t.part("pool.set", 0) << "\nREPLICA\n2M "
		    << t.part("pool.set", 1) << "\n";
		CHECK(status_of([&] { t.store.create("pool.set", obj_attr(), 0); }) ==
		      status::pool_cfg);
	}
	CHECK(fs::is_empty(t.parts));
}

TEST_CASE("an existing empty part of the declared size is adopted, as PMDK does", "[store]")
{
	tmp_store t;
	t.write_set("pool.set", {2 * MiB});
	make_file(t.part("pool.set", 0), 2 * MiB);
	CHECK_NOTHROW(t.store.create("pool.set", obj_attr(), 0));
	t.write_set("wrong.set", {4 * MiB});
	make_file(t.part("wrong.set", 0), 2 * MiB);
	CHECK(status_of([&] { t.store.create("wrong.set", obj_attr(), 0); }) == status::pool_cfg);
	CHECK(fs::exists(t.part("wrong.set", 0)));
}

TEST_CASE("a plain file is a single-part pool", "[store]")
{
	tmp_store t;
	make_file(t.sets / "plain.obj", 4 * MiB);
	pool_attr a = obj_attr();
	t.store.create("plain.obj", a, 0);
	CHECK(t.store.open("plain.obj", 0)->attr() == a);
	t.store.remove("plain.obj", false, true);
	CHECK_FALSE(fs::exists(t.sets / "plain.obj"));
}

TEST_CASE("a pool set file without its PMEMPOOLSET line is named as such", "[store]")
{
	tmp_store t;
	std::ofstream(t.sets / "headless.set") << "8M " << t.part("headless.set", 0) << "\n";
	auto msg = message_of([&] { t.store.create("headless.set", obj_attr(), 0); });
	CHECK_THAT(msg, Catch::Contains("headless.set") && Catch::Contains("PMEMPOOLSET"));
	CHECK(status_of([&] { t.store.open("headless.set", 0); }) == status::pool_cfg);
}

TEST_CASE("remove", "[store]")
{
	tmp_store t;
	t.write_set("pool.set", {2 * MiB, 2 * MiB});
	t.store.create("pool.set", obj_attr(), 0);

	SECTION("keeps the pool set file unless asked")
	{
		t.store.remove("pool.set", false, false);
		CHECK(fs::is_empty(t.parts));
		CHECK(fs::exists(t.sets / "pool.set"));
		CHECK(status_of([&] { t.store.open("pool.set", 0); }) == status::noexist);
		t.store.remove("pool.set", true, true);
		CHECK_FALSE(fs::exists(t.sets / "pool.set"));
	}
	SECTION("a missing part fails without force, and the other parts go, as in PMDK")
	{
		t.write_set("three.set", {2 * MiB, 2 * MiB, 2 * MiB});
		t.store.create("three.set", obj_attr(), 0);
		fs::remove(t.part("three.set", 1));
		try {
			t.store.remove("three.set", false, true);
			FAIL("a missing part was not reported");
		} catch (const store_error &e) {
			CHECK(e.status() == status::noexist);
			CHECK_THAT(e.message(), Catch::Contains(t.part("three.set", 1)) &&
			                            Catch::Contains("No such file or directory"));
		}
		CHECK_FALSE(fs::exists(t.part("three.set", 0)));
		CHECK_FALSE(fs::exists(t.part("three.set", 2)));
		CHECK(fs::exists(t.sets / "three.set")); // kept: it failed
		t.store.remove("three.set", true, true);
		CHECK_FALSE(fs::exists(t.sets / "three.set"));
	}
	SECTION("a missing or unparsable pool set")
	{
		CHECK(status_of([&] { t.store.remove("none.set", false, false); }) ==
		      status::noexist);
		CHECK_NOTHROW(t.store.remove("none.set", true, true));
		std::ofstream(t.sets / "broken.set") << "PMEMPOOLSET\nnonsense\n";
		CHECK(status_of([&] { t.store.remove("broken.set", false, true); }) ==
		      status::pool_cfg);
		CHECK_NOTHROW(t.store.remove("broken.set", true, true));
		CHECK_FALSE(fs::exists(t.sets / "broken.set"));
		CHECK(status_of([&] { t.store.remove("../x", true, true); }) == status::badname);
	}
}

TEST_CASE("damaged headers are refused with the part and the reason", "[store]")
{
	tmp_store t;
	t.write_set("pool.set", {2 * MiB, 2 * MiB});
	pool_attr a = obj_attr();
	t.store.create("pool.set", a, 0);
	std::string part1 = t.part("pool.set", 1);

	SECTION("one byte of the checksummed area")
	{
		poke(part1, 30, 0x5a);
		auto msg = message_of([&] { t.store.open("pool.set", 0); });
		CHECK(status_of([&] { t.store.open("pool.set", 0); }) == status::damaged);
		CHECK_THAT(msg, Catch::Contains(part1) && Catch::Contains("checksum") &&
		                    Catch::Contains("rpmem check --repair"));
	}
	SECTION("past 2 KiB with CKSUM_2K: outside the checksum, as in PMDK")
	{
		poke(part1, 3000, 0x5a);
		CHECK_NOTHROW(t.store.open("pool.set", 0));
	}
	SECTION("past 2 KiB without CKSUM_2K")
	{
		a.incompat_features = 0;
		t.store.open("pool.set", 0)->set_attr(a);
		poke(part1, 3000, 0x5a);
		CHECK(status_of([&] { t.store.open("pool.set", 0); }) == status::damaged);
	}
	SECTION("a zeroed header")
	{
		std::fstream(part1, std::ios::in | std::ios::out | std::ios::binary)
		    .write(std::string(4096, '\0').data(), 4096);
		CHECK_THAT(message_of([&] { t.store.open("pool.set", 0); }),
		           Catch::Contains("all zeros"));
		CHECK(status_of([&] { t.store.open("pool.set", 0); }) == status::damaged);
	}
	SECTION("parts reordered")
	{
		t.write_set("three.set", {2 * MiB, 2 * MiB, 2 * MiB});
		t.store.create("three.set", a, 0);
		std::ofstream(t.sets / "swapped.set")
		    << "PMEMPOOLSET\n2M " << t.part("three.set", 0) << "\n2M "
		    << t.part("three.set", 2) << "\n2M " << t.part("three.set", 1) << "\n";
		CHECK_THAT(message_of([&] { t.store.open("swapped.set", 0); }),
		           Catch::Contains("part links"));
		CHECK(status_of([&] { t.store.open("swapped.set", 0); }) == status::damaged);
	}
}

TEST_CASE("a part shorter than its pool set declares is damaged, a longer one declared wrongly",
          "[store]")
{
	tmp_store t;
	t.write_set("pool.set", {2 * MiB, 4 * MiB});
	t.store.create("pool.set", obj_attr(), 0).reset();
	const std::string part1 = t.part("pool.set", 1);
	SECTION("truncated: bytes of the pool are gone")
	{
		fs::resize_file(part1, 3 * MiB);
		auto msg = message_of([&] { t.store.open("pool.set", 0); });
		CHECK(status_of([&] { t.store.open("pool.set", 0); }) == status::damaged);
		CHECK_THAT(msg,
		           Catch::Contains(part1) &&
		               Catch::Contains("is 3145728 bytes, shorter than the 4194304 the "
		                               "pool set declares (line 3)") &&
		               Catch::Contains("rpmem check --repair"));
	}
	SECTION("larger: the pool set says less than the part holds")
	{
		fs::resize_file(part1, 5 * MiB);
		auto msg = message_of([&] { t.store.open("pool.set", 0); });
		CHECK(status_of([&] { t.store.open("pool.set", 0); }) == status::pool_cfg);
		CHECK_THAT(msg, Catch::Contains(part1) && Catch::Contains("declare its size"));
	}
}

TEST_CASE("the shutdown state says clean after close", "[store]")
{
	tmp_store t;
	t.write_set("pool.set", {2 * MiB});
	auto p = t.store.create("pool.set", obj_attr(), 0);
	CHECK(read_header(t.part("pool.set", 0)).sds.dirty == 1);
	p.reset();
	pool_hdr h = read_header(t.part("pool.set", 0));
	CHECK(h.sds.dirty == 0);
	CHECK(rpmemd::load_le(h.checksum) == rpmemd::header_checksum(h));
}

/** Rewrites part 0's shutdown state as a crash on other devices would have left it. */
void record_shutdown_state(const std::string &part0, std::uint64_t usc, bool dirty)
{
	pool_hdr h = read_header(part0);
	h.sds.usc = usc;
	h.sds.dirty = dirty ? 1 : 0;
	h.sds.checksum =
	    rpmemd::fletcher64({reinterpret_cast<const std::uint8_t *>(&h.sds), sizeof(h.sds)},
	                       offsetof(rpmemd::shutdown_state, checksum), sizeof(h.sds));
	rpmemd::seal(h);
	std::fstream(part0, std::ios::in | std::ios::out | std::ios::binary)
	    .write(reinterpret_cast<const char *>(&h), sizeof(h));
}

TEST_CASE("an ADR failure in the shutdown state refuses the open, as PMDK's rpmemd did",
          "[store][sds]")
{
	tmp_store t;
	t.write_set("pool.set", {2 * MiB, 2 * MiB});
	t.store.create("pool.set", obj_attr(), 0).reset();
	auto part0 = t.part("pool.set", 0);
	// The devices here report no unsafe shutdown count (0), as on any non-pmem file system.
	SECTION("dirty, and the devices' count changed: the pool may be corrupt")
	{
		record_shutdown_state(part0, 5, true);
		auto msg = message_of([&] { t.store.open("pool.set", 0); });
		CHECK_THAT(msg, Catch::Contains("ADR failure") && Catch::Contains("pool.set"));
		CHECK(status_of([&] { t.store.open("pool.set", 0); }) == status::damaged);
	}
	SECTION("clean with another count, or dirty with the same: reinitialised, opened")
	{
		auto dirty = GENERATE(false, true);
		record_shutdown_state(part0, dirty ? 0 : 5, dirty);
		CHECK_NOTHROW(t.store.open("pool.set", 0));
		pool_hdr h = read_header(part0);
		CHECK(h.sds.usc == 0);
		CHECK(h.sds.dirty == 0);
		CHECK(rpmemd::load_le(h.checksum) == rpmemd::header_checksum(h));
	}
}

/**
 * A fake Device DAX: a character device node of this test (same numbers as /dev/zero: it maps,
 * but keeps nothing) that a fake sysfs tree under root/sys describes as "dax" with `size` and
 * `align`. These machines have no Device DAX; only the paths around it are exercised.
 */
struct fake_dax {
	fs::path node;
	fs::path sys;
	fake_dax(const fs::path &root, const std::string &name, std::uint64_t size,
	         std::uint64_t align, const std::string &subsystem = "dax", unsigned minor = 5)
	    : node(root / name), sys(root / "sys")
	{
		REQUIRE(mknod(node.c_str(), S_IFCHR | 0600, makedev(1, minor)) == 0);
		auto dev = sys / "dev" / "char" / fmt::format("1:{}", minor);
		if (fs::exists(dev))
			return; // another node of the same device
		fs::create_directories(dev / "device");
		fs::create_directories(sys / "class" / subsystem);
		fs::create_directory_symlink(sys / "class" / subsystem, dev / "subsystem");
		std::ofstream(dev / "size") << size << "\n";
		std::ofstream(dev / "device" / "align") << align << "\n";
	}
};

TEST_CASE("Device DAX parts are detected and sized through sysfs (a fake tree)", "[store][dax]")
{
	tmp_store t;
	fake_dax dax(t.root, "dax0.0", 8 * MiB, 2 * MiB);
	rpmem::pmdk::sysfs sys(dax.sys.string());
	struct stat st = {};
	REQUIRE(stat(dax.node.c_str(), &st) == 0);
	auto d = sys.device_dax(st, dax.node.string());
	REQUIRE(d);
	CHECK(d->size == 8 * MiB);
	CHECK(d->alignment == 2 * MiB);
	REQUIRE(stat(t.sets.c_str(), &st) == 0);
	CHECK_FALSE(sys.device_dax(st, t.sets.string()));
}

TEST_CASE("a pool on a Device DAX: no fallocate, pmem, PMDK's rules", "[store][dax]")
{
	tmp_store t;
	fake_dax dax(t.root, "dax0.0", 8 * MiB, 2 * MiB);
	pool_store store(t.sets.string(), dax.sys.string());
	// No SDS: the devices' unsafe shutdown count comes from libpmem2 through the real sysfs,
	// which cannot describe this fake device.
	auto attr = obj_attr();
	attr.incompat_features &= ~rpmemd::feat_incompat_sds;
	auto write = [&](const std::string &name, const std::string &body) {
		std::ofstream(t.sets / name) << "PMEMPOOLSET\n" << body;
	};
	SECTION("created, mapped as persistent memory, removed by zeroing")
	{
		write("dax.set", fmt::format("8M {}\n", dax.node.string()));
		auto p = store.create("dax.set", attr, 0);
		CHECK(p->is_pmem());
		CHECK(p->size() == 8 * MiB);
		p.reset();
		store.remove("dax.set", false, false);
		CHECK(fs::is_character_file(dax.node));
	}
	SECTION("the declared size must be the device's")
	{
		write("small.set", fmt::format("4M {}\n", dax.node.string()));
		CHECK_THAT(message_of([&] { store.create("small.set", attr, 0); }),
		           Catch::Contains("Device DAX") && Catch::Contains("8388608"));
	}
	SECTION("all parts Device DAX or none")
	{
		write("mixed.set",
		      fmt::format("8M {}\n2M {}\n", dax.node.string(), t.part("mixed.set", 1)));
		CHECK_THAT(message_of([&] { store.create("mixed.set", attr, 0); }),
		           Catch::Contains("either all the parts must be Device DAX or none"));
		CHECK_FALSE(fs::exists(t.part("mixed.set", 1)));
	}
	SECTION("several Device DAX with headers need a 4 KiB alignment (or SINGLEHDR)")
	{
		fake_dax second(t.root, "dax1.0", 8 * MiB, 2 * MiB);
		write("two.set",
		      fmt::format("8M {}\n8M {}\n", dax.node.string(), second.node.string()));
		CHECK_THAT(message_of([&] { store.create("two.set", attr, 0); }),
		           Catch::Contains("SINGLEHDR"));
	}
	SECTION("a character device that is no Device DAX")
	{
		fake_dax mem(t.root, "null", 8 * MiB, 4096, "mem", 3);
		write("mem.set", fmt::format("8M {}\n", mem.node.string()));
		CHECK_THAT(message_of([&] { store.create("mem.set", attr, 0); }),
		           Catch::Contains("not a Device DAX"));
	}
}

TEST_CASE("pmempool info recognises a created pool", "[store][pmempool]")
{
	if (!have_pmempool()) {
		WARN("pmempool (pmdk-tools) is not installed: skipped");
		return;
	}
	tmp_store t;
	t.write_set("pool.set", {8 * MiB});
	t.write_set("multi.set", {2 * MiB, 2 * MiB});
	pool_attr a = obj_attr();
	t.store.create("pool.set", a, 0);
	a.prev_uuid = a.next_uuid = {};
	t.store.create("multi.set", a, 0);

	auto r = run(fmt::format("pmempool info {}", t.part("pool.set", 0)));
	INFO(r.out);
	CHECK(r.rc == 0);
	CHECK_THAT(r.out, Catch::Contains("Signature                : PMEMOBJ"));
	CHECK_THAT(r.out, Catch::Contains("Major                    : 6"));
	CHECK_THAT(r.out, Catch::Contains("[CKSUM_2K, SHUTDOWN_STATE]"));
	CHECK_THAT(r.out, Catch::Contains(rpmemd::uuid_string(a.uuid)));
	CHECK_THAT(r.out, Catch::Contains(rpmemd::uuid_string(a.poolset_uuid)));
	CHECK_THAT(r.out, Catch::Contains("Last shutdown            : clean"));
	CHECK_THAT(r.out, Catch::Matches("(.|\n)*Checksum +: 0x[0-9a-f]+ \\[OK\\](.|\n)*"));

	// A pool set whose replica links point at itself is a valid local pool set: pmempool
	// then checks every part header, the part ring and the checksums.
	auto m = run(fmt::format("pmempool info {}", (t.sets / "multi.set").string()));
	INFO(m.out);
	CHECK(m.rc == 0);
	CHECK_THAT(m.out, Catch::Contains("Replica 0 (master) - local, 2 part(s)"));
	CHECK_THAT(m.out, Catch::Contains("Signature                : PMEMOBJ"));
	CHECK_THAT(m.out, Catch::Contains(fmt::format("Previous replica UUID    : {}",
	                                              rpmemd::uuid_string(a.uuid))));
	CHECK_THAT(m.out, !Catch::Contains("error"));
}
