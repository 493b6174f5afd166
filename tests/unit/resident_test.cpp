// SPDX-License-Identifier: BSD-3-Clause
// daemon/resident_protocol.* and daemon/resident_identity.*: what the front, the resident and
// its spares say to each other, and which resident may serve a session; and when a resident
// forks the spares it lacks (daemon/resident.hpp).
#include "resident.hpp"
#include "resident_identity.hpp"
#include "resident_protocol.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace rpmemd::resident;
namespace fs = std::filesystem;

namespace
{

request sample_request()
{
	request r;
	r.front_pid = 4242;
	r.umask = 022;
	r.cwd = "/home/u";
	r.identity = "rpmemd resident identity 1\nexe 1 2 3\n";
	r.environment = {"PATH=/usr/bin", "HOME=/home/u", "EMPTY="};
	return r;
}

fs::path temp_dir()
{
	std::string t = (fs::temp_directory_path() / "rpmem-resident-XXXXXX").string();
	REQUIRE(::mkdtemp(t.data()) != nullptr);
	return t;
}

} // namespace

TEST_CASE("resident protocol: every message decodes to what was encoded")
{
	const request r = sample_request();
	for (kind k : {kind::request, kind::job}) {
		auto m = decode(encode_request(r, k));
		REQUIRE(m);
		CHECK(m->what == k);
		CHECK(m->req.front_pid == 4242);
		CHECK(m->req.umask == 022);
		CHECK(m->req.cwd == r.cwd);
		CHECK(m->req.identity == r.identity);
		CHECK(m->req.environment == r.environment);
	}
	auto accept = decode(encode_simple(kind::accept, 77));
	REQUIRE(accept);
	CHECK(accept->what == kind::accept);
	CHECK(accept->value == 77);
	auto exited = decode(encode_simple(kind::exited, 3));
	REQUIRE(exited);
	CHECK(exited->value == 3);
	auto killed = decode(encode_simple(kind::killed, 9, true));
	REQUIRE(killed);
	CHECK(killed->value == 9);
	CHECK(killed->core);
	auto refuse = decode(encode_refuse("the resident is busy"));
	REQUIRE(refuse);
	CHECK(refuse->what == kind::refuse);
	CHECK(refuse->reason == "the resident is busy");
	for (kind k : {kind::warm, kind::channel}) {
		auto m = decode(encode_simple(k));
		REQUIRE(m);
		CHECK(m->what == k);
	}
}

TEST_CASE("resident protocol: malformed messages are refused, not half-read")
{
	auto bytes = encode_request(sample_request());
	SECTION("cut short anywhere")
	{
		for (std::size_t n = 0; n < bytes.size(); ++n) {
			INFO("first " << n << " of " << bytes.size() << " bytes");
			CHECK_FALSE(decode({bytes.data(), n}));
		}
	}
	SECTION("bytes left over")
	{
		bytes.push_back(0);
		CHECK_FALSE(decode(bytes));
	}
	SECTION("another protocol version")
	{
		bytes[0] ^= 0xff;
		CHECK_FALSE(decode(bytes));
	}
	SECTION("an unknown kind")
	{
		auto m = encode_simple(kind::warm);
		m[4] = 0x7f;
		CHECK_FALSE(decode(m));
	}
	SECTION("an environment entry without '=' or with a NUL byte, a umask past 0777")
	{
		for (std::string bad : {std::string("NOEQUALS"), std::string("A=b\0c", 5)}) {
			auto r = sample_request();
			r.environment.push_back(bad);
			CHECK_FALSE(decode(encode_request(r)));
		}
		auto r = sample_request();
		r.umask = 01000;
		CHECK_FALSE(decode(encode_request(r)));
	}
	SECTION("a core flag other than 0 or 1")
	{
		auto m = encode_simple(kind::killed, 9, true);
		m.back() = 2;
		CHECK_FALSE(decode(m));
	}
}

TEST_CASE("resident protocol: descriptors travel with their packet, timeouts and ends are told")
{
	int sv[2];
	REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	rpmem::posix::unique_fd a(sv[0]), b(sv[1]);
	int err = 0;
	CHECK_FALSE(receive_packet(b.get(), 10, &err));
	CHECK(err == ETIMEDOUT);

	int p[2];
	REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
	rpmem::posix::unique_fd rd(p[0]), wr(p[1]);
	const int fds[] = {wr.get()};
	const auto msg = encode_simple(kind::channel);
	REQUIRE(send_packet(a.get(), msg, fds) == 0);
	auto got = receive_packet(b.get(), 1000, &err);
	REQUIRE(got);
	CHECK(got->bytes == msg);
	REQUIRE(got->fds.size() == 1);
	// The descriptor received is the pipe's write end: what goes in comes out of `rd`.
	CHECK(::write(got->fds[0].get(), "x", 1) == 1);
	char c = 0;
	CHECK(::read(rd.get(), &c, 1) == 1);
	CHECK(c == 'x');
	CHECK((::fcntl(got->fds[0].get(), F_GETFD) & FD_CLOEXEC) != 0);

	a = rpmem::posix::unique_fd();
	err = -1;
	CHECK_FALSE(receive_packet(b.get(), 1000, &err));
	CHECK(err == 0); // the end of the stream
	CHECK(send_packet(b.get(), msg) == EPIPE);
}

TEST_CASE("resident identity: per-session variables are not part of it, everything else is")
{
	CHECK(per_session_variable("SSH_CONNECTION=1.2.3.4 5 6.7.8.9 22"));
	CHECK(per_session_variable("SSH_CLIENT=x"));
	CHECK(per_session_variable("XDG_SESSION_ID=7"));
	CHECK_FALSE(per_session_variable("PATH=/bin"));
	CHECK_FALSE(per_session_variable("FI_PROVIDER=tcp"));
	CHECK_FALSE(per_session_variable("PMEM_IS_PMEM_FORCE=1"));

	const auto dir = temp_dir();
	const auto conf = (dir / "rpmemd.conf").string();
	std::FILE *f = std::fopen(conf.c_str(), "w");
	REQUIRE(f);
	std::fputs("log-level = info\n", f);
	std::fclose(f);

	const auto base = identify({"--poolset-dir=/x"}, {conf});
	CHECK(base.id.size() == 16);
	CHECK(identify({"--poolset-dir=/x"}, {conf}).text == base.text);
	// Another command line, another config text, another environment: another resident.
	CHECK(identify({"--poolset-dir=/y"}, {conf}).id != base.id);
	f = std::fopen(conf.c_str(), "w");
	std::fputs("log-level = debug\n", f);
	std::fclose(f);
	CHECK(identify({"--poolset-dir=/x"}, {conf}).id != base.id);
	::setenv("RPMEM_RESIDENT_TEST_VAR", "1", 1);
	const auto with_var = identify({"--poolset-dir=/x"}, {conf});
	::unsetenv("RPMEM_RESIDENT_TEST_VAR");
	CHECK(with_var.text.find("RPMEM_RESIDENT_TEST_VAR") != std::string::npos);
	// A per-session variable changes nothing.
	const auto before = identify({"--poolset-dir=/x"}, {conf});
	::setenv("SSH_CONNECTION", "1.2.3.4 5 6.7.8.9 22", 1);
	CHECK(identify({"--poolset-dir=/x"}, {conf}).text == before.text);
	::unsetenv("SSH_CONNECTION");
	// An absent config file is a fact too.
	CHECK(identify({}, {(dir / "none.conf").string()}).text.find("absent") !=
	      std::string::npos);
	fs::remove_all(dir);
}

TEST_CASE("resident place: only a directory of this user's, closed to others, is used")
{
	const auto dir = temp_dir();
	rpmemd::config cfg;
	const auto id = identify({}, {});
	std::string why;

	SECTION("created 0700 when missing")
	{
		cfg.status_dir = (dir / "sessions").string();
		auto p = locate(cfg, id, &why);
		REQUIRE(p);
		struct stat st {
		};
		REQUIRE(::stat(cfg.status_dir.c_str(), &st) == 0);
		CHECK((st.st_mode & 07777) == 0700);
		CHECK(p->socket == cfg.status_dir + "/resident-" + id.id + ".sock");
		CHECK(p->lock == cfg.status_dir + "/resident-" + id.id + ".lock");
	}
	SECTION("open to others: refused, and the message says what to do")
	{
		cfg.status_dir = (dir / "open").string();
		fs::create_directory(cfg.status_dir);
		fs::permissions(cfg.status_dir, fs::perms::owner_all | fs::perms::group_read |
		                                    fs::perms::group_exec | fs::perms::others_read |
		                                    fs::perms::others_exec);
		CHECK_FALSE(locate(cfg, id, &why));
		CHECK(why.find("open to its group or others (mode 755)") != std::string::npos);
		CHECK(why.find("0700") != std::string::npos);
	}
	SECTION("a symbolic link: refused")
	{
		fs::create_directory(dir / "real");
		fs::permissions(dir / "real", fs::perms::owner_all);
		fs::create_directory_symlink(dir / "real", dir / "link");
		cfg.status_dir = (dir / "link").string();
		CHECK_FALSE(locate(cfg, id, &why));
		CHECK(why.find("not a directory owned by this user") != std::string::npos);
	}
	SECTION("a path too long for a Unix socket: refused, with the limit")
	{
		cfg.status_dir = (dir / std::string(100, 'd')).string();
		CHECK_FALSE(locate(cfg, id, &why));
		CHECK(why.find("longer than a Unix socket allows") != std::string::npos);
	}
	fs::remove_all(dir);
}

TEST_CASE("resident refill: a used spare's replacement waits only while a warm spare is left")
{
	using clock = std::chrono::steady_clock;
	const auto t0 = clock::time_point{} + std::chrono::hours(1);
	const auto retry_at = t0, replenish_at = t0 + std::chrono::milliseconds(500);
	const auto before = t0 + std::chrono::milliseconds(100);
	// Two wanted, both there: nothing to fork, ever.
	CHECK_FALSE(refill_at(spare_counts{2, 2, 2}, retry_at, replenish_at));
	CHECK(spares_to_fork(spare_counts{2, 2, 1}, replenish_at, retry_at, replenish_at) == 0);
	// One taken, the other warm: its replacement waits for spare_delay.
	CHECK(spares_to_fork(spare_counts{2, 1, 1}, before, retry_at, replenish_at) == 0);
	CHECK(spares_to_fork(spare_counts{2, 1, 1}, replenish_at, retry_at, replenish_at) == 1);
	// One taken, the other still starting (available, not warm): the next session would start
	// cold, so the replacement is forked at once. (A spare still starting counted as ready
	// once, and a burst of sessions found none.)
	CHECK(spares_to_fork(spare_counts{2, 1, 0}, before, retry_at, replenish_at) == 1);
	CHECK(*refill_at(spare_counts{2, 1, 0}, retry_at, replenish_at) == retry_at);
	// Both taken: both at once.
	CHECK(spares_to_fork(spare_counts{2, 0, 0}, before, retry_at, replenish_at) == 2);
	// After a spare died while it started, nothing before retry_at, warm or not.
	const auto later_retry = t0 + std::chrono::seconds(2);
	CHECK(spares_to_fork(spare_counts{2, 0, 0}, replenish_at, later_retry, replenish_at) == 0);
	CHECK(spares_to_fork(spare_counts{2, 1, 1}, replenish_at, later_retry, replenish_at) == 0);
	CHECK(spares_to_fork(spare_counts{2, 1, 1}, later_retry, later_retry, replenish_at) == 1);
}
