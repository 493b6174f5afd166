// SPDX-License-Identifier: BSD-3-Clause
// The session status records rpmemd keeps for `rpmem status` (lib/control/session_record):
// the text round trip, liveness by process start time (a reused PID is not the session), and
// the directory rules (created private; a symbolic link refused).
#include "control/session_record.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace ctl = rpmem::control;
namespace fs = std::filesystem;

namespace
{

ctl::session_record sample()
{
	ctl::session_record r;
	r.pid = getpid();
	r.process_start = ctl::process_start_time(r.pid).value_or(0);
	r.since = 1790000000;
	r.user = "me";
	r.peer = "10.0.0.1:40000";
	r.descriptor = "pools/app set.set"; // a space: values run to the end of the line
	r.poolset = "/home/me/pools/app set.set";
	r.pool_size = 80 << 20;
	r.created = true;
	r.is_pmem = false;
	r.provider = "tcp";
	r.method = "gpspm";
	r.lanes = 4;
	r.version = "0.1.0";
	return r;
}

struct temp_dir {
	fs::path path = fs::temp_directory_path() / ("rpmem-sessions-" + std::to_string(getpid()));
	~temp_dir()
	{
		std::error_code ec;
		fs::remove_all(path, ec);
	}
};

} // namespace

TEST_CASE("a session record survives its text form", "[session_record]")
{
	auto r = sample();
	auto back = ctl::decode_session(ctl::encode(r));
	REQUIRE(back);
	CHECK(back->pid == r.pid);
	CHECK(back->process_start == r.process_start);
	CHECK(back->since == r.since);
	CHECK(back->descriptor == r.descriptor);
	CHECK(back->poolset == r.poolset);
	CHECK(back->peer == r.peer);
	CHECK(back->pool_size == r.pool_size);
	CHECK(back->created);
	CHECK(!back->is_pmem);
	CHECK(back->provider == "tcp");
	CHECK(back->method == "gpspm");
	CHECK(back->lanes == 4);

	// A newline in a value cannot start a forged line.
	r.descriptor = "a\npid 1";
	auto forged = ctl::decode_session(ctl::encode(r));
	REQUIRE(forged);
	CHECK(forged->pid == r.pid);
	CHECK(forged->descriptor == "a pid 1");

	CHECK(!ctl::decode_session("something else\npid 3\ndescriptor x\n"));
	CHECK(!ctl::decode_session("rpmemd-session 1\ndescriptor x\n"));          // no pid
	CHECK(!ctl::decode_session("rpmemd-session 1\npid 12x\ndescriptor x\n")); // bad pid
	CHECK(!ctl::decode_session("rpmemd-session 1\npid 12\n"));                // no descriptor
	auto newer = ctl::decode_session("rpmemd-session 1\npid 12\ndescriptor x\nfuture 7\n");
	REQUIRE(newer);
	CHECK(newer->pid == 12);
}

TEST_CASE("published records are listed, alive only while their process is the one recorded",
          "[session_record]")
{
	temp_dir d;
	const std::string dir = (d.path / "rpmemd").string();
	fs::create_directories(d.path);
	CHECK(ctl::list_sessions(dir).empty()); // no directory yet: nothing

	ctl::session_file live;
	auto r = sample();
	REQUIRE(r.process_start != 0);
	REQUIRE(!live.publish(dir, r));
	struct stat st {
	};
	REQUIRE(stat(dir.c_str(), &st) == 0);
	CHECK((st.st_mode & 0777) == 0700);

	// The same PID with another start time: a process that reused the PID, not the session.
	ctl::session_record reused = r;
	reused.pid = 1; // init: alive, but started at another time than recorded
	reused.process_start = r.process_start + 12345;
	reused.since = r.since + 1;
	ctl::session_file stale;
	REQUIRE(!stale.publish(dir, reused));
	ctl::session_record dead = r;
	dead.pid = 0x3ffffff0; // above pid_max: no such process
	dead.since = r.since + 2;
	ctl::session_file gone;
	REQUIRE(!gone.publish(dir, dead));
	std::ofstream(dir + "/junk.session") << "not a record\n";    // skipped
	REQUIRE(mkfifo((dir + "/fifo.session").c_str(), 0600) == 0); // skipped, without blocking

	auto listed = ctl::list_sessions(dir);
	REQUIRE(listed.size() == 3);
	CHECK(listed[0].record.pid == r.pid);
	CHECK(listed[0].alive);
	CHECK(listed[1].record.pid == 1);
	CHECK(!listed[1].alive);
	CHECK(listed[2].record.pid == dead.pid);
	CHECK(!listed[2].alive);

	// --prune's second look: gone records are still gone, the live one is not.
	CHECK(ctl::still_gone(listed[2].file, listed[2].record));
	CHECK(ctl::still_gone(listed[1].file, listed[1].record));
	CHECK(!ctl::still_gone(listed[0].file, listed[0].record));
	CHECK(!ctl::still_gone(listed[2].file, listed[0].record)); // not the record it was

	const fs::path live_file = live.path();
	CHECK(live_file == fs::path(dir) / (std::to_string(r.pid) + "-" +
	                                    std::to_string(r.process_start) + ".session"));
	CHECK(fs::exists(live_file));
	live.withdraw();
	CHECK(!fs::exists(live_file));
	CHECK(ctl::list_sessions(dir).size() == 2);
	{
		ctl::session_file scoped;
		REQUIRE(!scoped.publish(dir, r));
		CHECK(ctl::list_sessions(dir).size() == 3);
	}
	CHECK(ctl::list_sessions(dir).size() == 2); // removed when it goes out of scope
}

TEST_CASE("a session that reuses a killed session's PID keeps its own record, and pruning removes "
          "only the killed one's",
          "[session_record]")
{
	// A prune finds a record gone, then unlinks it: were records named by PID alone, a new
	// session with that PID could rename its record into that name in between, and lose it.
	temp_dir d;
	fs::create_directories(d.path);
	const std::string dir = (d.path / "rpmemd").string();
	const auto live = sample(); // this process
	auto killed = live;         // an rpmemd killed earlier whose PID this process got
	killed.process_start = live.process_start - 1;
	killed.since = live.since - 100;
	ctl::session_file old_file, new_file;
	REQUIRE(!old_file.publish(dir, killed));
	REQUIRE(!new_file.publish(dir, live));
	CHECK(old_file.path() != new_file.path());
	auto listed = ctl::list_sessions(dir);
	REQUIRE(listed.size() == 2);
	CHECK(!listed[0].alive);
	CHECK(listed[1].alive);
	// The prune, with its second look at the record, done between its look and its unlink:
	CHECK(ctl::still_gone(listed[0].file, listed[0].record));
	CHECK(ctl::prune_gone(dir) == 1);
	listed = ctl::list_sessions(dir);
	REQUIRE(listed.size() == 1);
	CHECK(listed[0].alive);
	CHECK(listed[0].file == new_file.path());
}

TEST_CASE("a session record is written through no link and adopts no file planted beside it",
          "[session_record]")
{
	temp_dir d;
	const std::string dir = (d.path / "rpmemd").string();
	fs::create_directories(dir);
	fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
	const auto r = sample();
	const fs::path record = fs::path(dir) / (std::to_string(r.pid) + "-" +
	                                         std::to_string(r.process_start) + ".session");
	const fs::path guess = record.string() + ".tmp"; // the temporary name it once had
	const fs::path victim = d.path / "victim";
	std::ofstream(victim) << "precious\n";
	fs::create_symlink(victim, guess);
	ctl::session_file f;
	auto why = f.publish(dir, r);
	CHECK(!why);
	INFO(why.value_or(""));
	CHECK(fs::is_regular_file(fs::symlink_status(record)));
	std::ifstream v(victim);
	std::string text((std::istreambuf_iterator<char>(v)), {});
	CHECK(text == "precious\n");
	CHECK(fs::is_symlink(guess));
}

TEST_CASE("a status directory that is a symbolic link is refused", "[session_record]")
{
	temp_dir d;
	fs::create_directories(d.path / "elsewhere");
	fs::create_directory_symlink(d.path / "elsewhere", d.path / "link");
	ctl::session_file f;
	auto why = f.publish((d.path / "link").string(), sample());
	REQUIRE(why);
	CHECK(why->find("not a directory owned by this user") != std::string::npos);
	CHECK(fs::is_empty(d.path / "elsewhere"));
	// The reader applies the same rule, and says why it lists nothing.
	std::string problem;
	CHECK(ctl::list_sessions((d.path / "link").string(), &problem).empty());
	CHECK(problem.find("not a directory owned by this user") != std::string::npos);
	problem.clear();
	CHECK(ctl::list_sessions((d.path / "absent").string(), &problem).empty());
	CHECK(problem.empty()); // no directory: no session ever recorded, not a problem

	// The default: a runtime directory of this user, or /tmp/rpmemd-UID.
	const auto def = ctl::default_session_dir();
	CHECK((def == "/run/user/" + std::to_string(getuid()) + "/rpmemd" ||
	       def == "/tmp/rpmemd-" + std::to_string(getuid())));
}
