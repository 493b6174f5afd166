// SPDX-License-Identifier: BSD-3-Clause
// The rpmem command-line tool (tools/rpmem) against the real rpmemd over the private sshd:
// every command, with stock libpmemobj (examples/06-pmemobj-replica) writing the pools that
// verify, sync and promote work on.
#include "process.hpp"
#include "replica_fixture.hpp"
#include "support/child.hpp"

#include "pmdk/pool_header.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <regex>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <csignal>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace rpmem::test;

namespace
{

const std::string tool = std::string(RPMEM_BINARY_DIR) + "/bin/rpmem";
const std::string example = std::string(RPMEM_BINARY_DIR) + "/bin/06-pmemobj-replica";

/** A local 64 MiB master with one remote replica (80 MiB) on the fixture's node. */
class setup
{
public:
	explicit setup(sshd &server) : server_(server), node_(server)
	{
		local_ = make_temp_dir("/dev/shm", "rpmem-tool-");
		node_.write_poolset("remote.set", {"80M"});
		poolset_ = local_ / "pool.set";
		std::ofstream(poolset_)
		    << fmt::format("PMEMPOOLSET\n64M {}\nREPLICA {} remote.set\n",
		                   (local_ / "local.part").string(), target());
	}
	~setup()
	{
		std::error_code ec;
		fs::remove_all(local_, ec);
	}

	/** How the tool and stock libpmemobj reach rpmemd: librpmem's own variables. */
	std::string env(bool ssh_wrapper = false) const
	{
		auto o = server_.client_options();
		return (ssh_wrapper ? "RPMEM_SSH=" + server_.ssh_wrapper() + " " : "") +
		       fmt::format("LD_LIBRARY_PATH={}/lib RPMEM_CMD='{}' RPMEM_SSH_CONFIG={} "
		                   "RPMEM_SSH_KNOWN_HOSTS={} RPMEM_SSH_IDENTITY={}",
		                   RPMEM_BINARY_DIR, node_.command(), o.config_file,
		                   o.known_hosts_file, o.identity_files.at(0));
	}
	process_result rpmem(const std::string &args) const
	{
		return run(tool + " " + args, env());
	}
	process_result obj(const std::string &what, const fs::path &set) const
	{
		return run(fmt::format("{} {} {}", example, what, set.string()), env());
	}
	/** pmempool creates the example's libpmemobj pool on poolset() (master and replica);
	 *  returns the pool set's path. */
	std::string create_obj_pool() const;

	std::string target() const { return server_.target().str(); }
	const fs::path &poolset() const { return poolset_; }
	const fs::path &local() const { return local_; }
	fs::path local_part() const { return local_ / "local.part"; }
	fs::path remote_part() const { return node_.part("remote.set"); }
	replica &node() { return node_; }

private:
	sshd &server_;
	replica node_;
	fs::path local_;
	fs::path poolset_;
};

void require_status(const process_result &r, int status, const std::string &what)
{
	INFO(what << " printed:\n" << r.output);
	REQUIRE(r.status == status);
}

std::string setup::create_obj_pool() const
{
	const std::string set = poolset().string();
	require_status(run("pmempool create --layout=rpmem-example-06 obj " + set, env()), 0,
	               "pmempool create obj");
	return set;
}

/** Parses r's output as one JSON object `d` (Python's json module) and prints `fields`
 *  (a Python expression list), space separated; or says why it could not. */
std::string json_fields(const process_result &r, const std::string &fields)
{
	INFO("the command printed:\n" << r.output);
	const auto file = fs::temp_directory_path() / ("rpmem-json-" + std::to_string(getpid()));
	std::ofstream(file) << r.output;
	std::string expr = fields; // inside the shell's single quotes: Python's other quotes
	std::replace(expr.begin(), expr.end(), '\'', '"');
	auto parsed =
	    run(fmt::format("python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
	                    "print(*[{}])' {}",
	                    expr, file.string()));
	fs::remove(file);
	return parsed.output;
}

void overwrite(const fs::path &file, std::uint64_t offset, const std::string &bytes)
{
	std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
	f.seekp(static_cast<std::streamoff>(offset));
	f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

} // namespace

TEST_CASE("rpmem create, info, attr, open-check and rm manage one remote pool", "[tool]")
{
	sshd server;
	setup s(server);
	s.node().write_poolset("tool.set", {"8M"});
	const std::string pool = s.target() + " tool.set";
	const auto part = s.node().part("tool.set");
	const std::string uuid = "01234567-89ab-cdef-0123-456789abcdef";

	auto created = s.rpmem("create " + pool +
	                       " --size 4M --signature TOOLTEST --major 3 "
	                       "--uuid " +
	                       uuid);
	require_status(created, 0, "rpmem create");
	CHECK(has(created, "created tool.set"));
	CHECK(fs::exists(s.node().part("tool.set")));

	auto info = s.rpmem("info " + pool);
	require_status(info, 0, "rpmem info");
	CHECK(has(info, "Signature         : TOOLTEST"));
	CHECK(has(info, "Major             : 3"));
	CHECK(has(info, "UUID              : " + uuid));
	CHECK(has(info, "Next replica UUID : " + uuid)); // a new pool links to itself
	CHECK(has(info, "Provider          :"));
	CHECK(has(info, "Pool size         : 8.0 MiB (8388608 bytes)"));
	CHECK(has(info, "Made durable by   : msync"));

	// The same as JSON, read back by Python's parser.
	auto js = json_fields(s.rpmem("info --json " + pool),
	                      "d['pool_size'], d['is_pmem'], d['attributes']['signature'], "
	                      "d['attributes']['uuid'], d['descriptor']");
	CHECK(js == "8388608 False TOOLTEST " + uuid + " tool.set\n");

	// The daemon wrote a PMDK header with our signature.
	CHECK(slurp(part).substr(0, 8) == "TOOLTEST");

	require_status(s.rpmem("attr " + pool + " --major 4 --compat 0x8"), 0, "rpmem attr");
	auto after = s.rpmem("info " + pool);
	CHECK(has(after, "Major             : 4"));
	CHECK(has(after, "Compat features   : 0x8"));
	CHECK(has(after, "Signature         : TOOLTEST"));

	auto check = s.rpmem("open-check " + pool);
	require_status(check, 0, "rpmem open-check");
	CHECK(has(check, "opens"));

	auto again = s.rpmem("create " + pool + " --size 4M");
	require_status(again, 1, "rpmem create of an existing pool");
	CHECK(has(again, "rpmem create:"));

	auto bad_uuid = s.rpmem("attr " + pool + " --uuid nonsense");
	require_status(bad_uuid, 2, "rpmem attr with a malformed UUID");
	CHECK(has(bad_uuid, "invalid UUID 'nonsense'"));

	require_status(s.rpmem("rm " + pool), 0, "rpmem rm");
	CHECK(!fs::exists(s.node().part("tool.set")));
	CHECK(fs::exists(s.node().dir() / "tool.set"));
	auto missing = s.rpmem("info " + pool);
	require_status(missing, 1, "rpmem info of a removed pool");
	CHECK(has(missing, "rpmem info:"));
	require_status(s.rpmem("rm --force --pool-set " + pool), 0, "rpmem rm --force --pool-set");
	CHECK(!fs::exists(s.node().dir() / "tool.set"));
}

TEST_CASE("rpmem verify finds differing ranges and rpmem sync repairs them", "[tool]")
{
	sshd server;
	setup s(server);
	// A pool libpmemobj created and closed: every byte it persisted went to the replica.
	// (An application's run leaves run-time state in the master's heap that libpmemobj never
	// persists or replicates, such as huge-chunk footers: verify skips it, see below.)
	const std::string set = s.create_obj_pool();

	auto clean = s.rpmem("verify " + set);
	require_status(clean, 0, "rpmem verify of a fresh replica");
	CHECK(has(clean, "replica 1 (" + s.target() + " remote.set): in sync"));

	// Two damaged ranges on the replica (rpmemd is not running: the file is idle).
	overwrite(s.remote_part(), (2u << 20) + 100, "garbage!");
	overwrite(s.remote_part(), (40u << 20), std::string(5000, '\x5a'));
	auto dirty = s.rpmem("verify " + set);
	require_status(dirty, 1, "rpmem verify of a damaged replica");
	CHECK(has(dirty, "2 range(s) differ"));
	CHECK(has(dirty, "0x200064-0x20006c (8 bytes)"));

	SECTION("sync moves only the differing blocks, found by block checksums")
	{
		auto dry = s.rpmem("sync --dry-run --json " + set);
		require_status(dry, 0, "rpmem sync --dry-run --json");
		// 64 KiB blocks from offset 4096: the 8 bytes fall in one, the 5000 bytes at 40 MiB
		// straddle two; one more differs only in the 2 KiB of run-time fields libpmemobj
		// wrote to the master without persisting (never replicated: read back, compared
		// without them as verify does, and not moved).
		CHECK(json_fields(
		          dry,
		          "d['dry_run'], d['bytes_to_move'], d['replicas'][0]['status'], "
		          "d['replicas'][0]['method'], d['replicas'][0]['differing_blocks'], "
		          "d['replicas'][0]['ranges']") == "True 196608 would_sync delta 3 2\n");
		CHECK(s.rpmem("verify " + set).status == 1); // the dry run wrote nothing

		auto sync = s.rpmem("sync " + set);
		require_status(sync, 0, "rpmem sync");
		CHECK(has(sync, "synchronized (192.0 KiB moved in 2 range(s)"));
		CHECK(has(sync, "3 of 1024 blocks differed, and 1 only in what libpmemobj never "
		                "replicates (not moved)"));
		CHECK(has(sync, ": 100% (192.0 KiB of 192.0 KiB"));

		auto again = s.rpmem("sync --dry-run --json " + set);
		require_status(again, 0, "rpmem sync --dry-run --json of a synced replica");
		CHECK(json_fields(again, "d['bytes_to_move'], d['replicas'][0]['status']") ==
		      "0 in_sync\n");
	}
	SECTION(
	    "sync --full rewrites the whole replica, with progress lines when not on a terminal")
	{
		auto sync = s.rpmem("sync --full " + set);
		require_status(sync, 0, "rpmem sync --full");
		CHECK(has(sync, "sync replica 1 (" + s.target() + " remote.set): 50%"));
		CHECK(has(sync, ": 100% (64.0 MiB of 64.0 MiB"));
		// A rate on the progress lines, in whatever unit size_text() picks (GiB/s on a
		// fast day: "MiB/s" alone failed then).
		CHECK(std::regex_search(sync.output, std::regex("[0-9.]+ [KMG]?i?B/s, ")));
		CHECK(has(sync, "synchronized (64.0 MiB written, the whole pool"));
	}
	SECTION("sync re-creates a lost replica with the links the master expects")
	{
		fs::remove(s.remote_part());
		auto lost = s.rpmem("verify " + set);
		require_status(lost, 2, "rpmem verify of a lost replica");
		CHECK(has(lost, "replica 1"));
		auto dry = s.rpmem("sync --dry-run --json " + set);
		require_status(dry, 0, "rpmem sync --dry-run --json of a lost replica");
		CHECK(json_fields(dry, "d['bytes_to_move'], d['replicas'][0]['status'], "
		                       "d['replicas'][0]['created']") == "67104768 missing True\n");
		auto sync = s.rpmem("sync --progress none --json " + set);
		require_status(sync, 0, "rpmem sync of a lost replica");
		CHECK(json_fields(sync, "d['moved_bytes'], d['replicas'][0]['status'], "
		                        "d['replicas'][0]['created'], "
		                        "d['replicas'][0]['was_marked_behind']") ==
		      "67104768 synchronized True False\n");
	}
	require_status(s.rpmem("verify " + set), 0, "rpmem verify after sync");
	require_status(run("pmempool info " + s.remote_part().string()), 0,
	               "pmempool info on the synced replica");
	// Lose the master: stock libpmempool rebuilds it from the replica rpmem sync wrote.
	fs::remove(s.local_part());
	auto gone = s.rpmem("verify " + set);
	require_status(gone, 2, "rpmem verify without a master");
	CHECK(has(gone, "rpmem promote"));
	require_status(run("pmempool sync " + set, s.env(true)), 0,
	               "pmempool sync (master rebuilt from the synced replica)");
	require_status(s.rpmem("verify " + set), 0, "rpmem verify of the rebuilt master");
}

namespace
{

/** The replica's part holds the possibly-behind mark (its pool header's compat features). */
bool marked_behind(const fs::path &part)
{
	std::ifstream in(part, std::ios::binary);
	rpmem::pmdk::pool_hdr hdr{};
	in.read(reinterpret_cast<char *>(&hdr), sizeof(hdr));
	REQUIRE(in);
	return rpmem::pmdk::load_le(hdr.feat.compat) & rpmem::pmdk::feat_compat_rpmem_behind;
}

/** Bytes [4096, 64 MiB) of a part: the pool data past the header. */
std::string pool_data(const fs::path &part)
{
	return slurp(part).substr(4096, (64u << 20) - 4096);
}

/** `length` bytes of a file at `offset`. */
std::string read_at(const fs::path &file, std::uint64_t offset, std::size_t length)
{
	std::ifstream in(file, std::ios::binary);
	in.seekg(static_cast<std::streamoff>(offset));
	std::string bytes(length, '\0');
	in.read(bytes.data(), static_cast<std::streamsize>(length));
	return in ? bytes : std::string();
}

/** New random bytes in the master's data (rpmem sync then has 64 MiB of blocks to move). */
void smear_master(const fs::path &part, std::uint64_t seed)
{
	std::mt19937_64 rng(seed);
	std::string bytes((64u << 20) - 8192, '\0');
	for (std::size_t i = 0; i + 8 <= bytes.size(); i += 8) {
		std::uint64_t v = rng();
		std::memcpy(&bytes[i], &v, 8);
	}
	overwrite(part, 8192, bytes);
}

/**
 * Runs `command` (its output lines read as they come) and calls kill(pid) once, on the first
 * line containing `trigger`: a kill at a known point of the work, not after a guessed delay.
 */
process_result run_killed_at(const std::string &command, const std::string &env,
                             const std::string &trigger, const std::function<void(pid_t)> &kill)
{
	process_result r;
	FILE *p = popen(("echo $$; exec env " + env + " " + command + " 2>&1").c_str(), "r");
	REQUIRE(p);
	char line[4096];
	pid_t pid = -1;
	bool fired = false;
	while (fgets(line, sizeof(line), p)) {
		if (pid < 0) {
			pid = static_cast<pid_t>(std::atol(line));
			continue;
		}
		r.output += line;
		if (!fired && std::strstr(line, trigger.c_str())) {
			fired = true;
			kill(pid);
		}
	}
	int st = pclose(p);
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	INFO(command << " printed:\n" << r.output);
	REQUIRE(fired);
	return r;
}

/** RPMEM_TEST_TOOL_KILLS=few (the sanitizer runs, scripts/sanitize.sh): the kill tests
 *  below kill at fewer points. Each point is a whole 64 MiB sync, minutes under ASan; every
 *  point runs in the plain suite. */
bool few_kills()
{
	const char *v = std::getenv("RPMEM_TEST_TOOL_KILLS");
	return v && std::string(v) == "few";
}

} // namespace

TEST_CASE("rpmem sync killed at any point (client or rpmemd) leaves the replica marked behind "
          "or untouched, and the next sync finishes it byte-exact",
          "[tool][sync][fault]")
{
	sshd server;
	setup s(server);
	const std::string set = s.create_obj_pool();
	auto check_outcome = [&](const std::string &before, bool must_be_marked) {
		require_rpmemd_gone(s.node());
		const std::string after = pool_data(s.remote_part());
		if (marked_behind(s.remote_part())) {
			CHECK(has(s.rpmem("verify " + set), "marked possibly behind"));
		} else {
			CHECK_FALSE(must_be_marked);
			// Unmarked: nothing was written yet, or everything was.
			CHECK((after == before || after == pool_data(s.local_part())));
		}
		auto again = s.rpmem("sync --progress none " + set);
		require_status(again, 0, "rpmem sync after the kill");
		CHECK(!marked_behind(s.remote_part()));
		REQUIRE(pool_data(s.remote_part()) == pool_data(s.local_part()));
	};
	std::uint64_t seed = 1;

	// Killed inside the copy, at 10 %, 50 % and 90 % of the bytes moved (the progress line
	// says so): the replica must be marked. A kill that came too late (the test read the line
	// after the last move: a loaded machine) checks either outcome instead; most must land in
	// time.
	int in_time = 0;
	const auto percents = few_kills() ? std::vector<const char *>{"50%"}
	                                  : std::vector<const char *>{"10%", "50%", "90%"};
	for (const char *at : percents) {
		for (bool kill_daemon : {false, true}) {
			INFO("kill " << (kill_daemon ? "rpmemd" : "the client") << " at " << at);
			const std::string before = pool_data(s.remote_part());
			smear_master(s.local_part(), ++seed);
			auto r =
			    run_killed_at(tool + " sync --progress lines " + set, s.env(),
			                  std::string(": ") + at + " (", [&](pid_t client) {
				                  if (kill_daemon)
					                  run_kill_rpmemd(s.node().dir().string());
				                  else
					                  ::kill(client, SIGKILL);
			                  });
			INFO("rpmem sync printed:\n" << r.output);
			// Inside the copy: the sync failed before its last move. Once it printed
			// 100 % it may have cleared the mark before the kill came (CI: the 90 %
			// line read after the sync had finished, the kill landing in its close).
			const bool landed = r.status != 0 && !has(r, ": 100% (");
			if (landed && kill_daemon)
				CHECK(has(r, "replica 1 ("));
			in_time += landed;
			check_outcome(before, landed);
		}
	}
	CHECK(in_time >= int(percents.size()));

	// Killed after guessed delays (fractions of an uninterrupted sync's time here): before
	// the copy, inside or after, the replica is marked or untouched or complete.
	smear_master(s.local_part(), ++seed);
	const auto t0 = std::chrono::steady_clock::now();
	require_status(s.rpmem("sync --progress none " + set), 0, "rpmem sync (timed)");
	const double whole =
	    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	for (double fraction :
	     few_kills() ? std::vector{0.3, 0.95} : std::vector{0.05, 0.3, 0.6, 0.95}) {
		INFO("kill the client after " << fraction * whole << " s of " << whole);
		const std::string before = pool_data(s.remote_part());
		smear_master(s.local_part(), ++seed);
		run(fmt::format("timeout -s KILL {:.3f} {} sync --progress none {}",
		                fraction * whole, tool, set),
		    s.env());
		check_outcome(before, false);
	}
}

TEST_CASE("rpmem check --repair killed at any point leaves a replica the next check --repair "
          "brings in line, byte-exact",
          "[tool][check][fault]")
{
	sshd server;
	setup s(server);
	const std::string set = s.create_obj_pool();
	// A replica marked possibly behind a master whose data changed since: check finds the
	// mark and --repair resynchronizes the replica (64 MiB of blocks to move).
	std::uint64_t seed = 100;
	auto fall_behind = [&] {
		smear_master(s.local_part(), ++seed);
		require_status(s.rpmem("attr " + s.target() + " remote.set --compat 0x40000000"), 0,
		               "rpmem attr (the behind mark)");
		REQUIRE(marked_behind(s.remote_part()));
	};
	fall_behind();
	const auto t0 = std::chrono::steady_clock::now();
	require_status(s.rpmem("check --repair " + set), 0, "rpmem check --repair (timed)");
	const double whole =
	    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	REQUIRE(pool_data(s.remote_part()) == pool_data(s.local_part()));
	auto repair_again = [&] {
		auto again = s.rpmem("check --repair " + set);
		require_status(again, 0, "rpmem check --repair after the kill");
		CHECK(!marked_behind(s.remote_part()));
		REQUIRE(pool_data(s.remote_part()) == pool_data(s.local_part()));
		require_status(s.rpmem("check " + set), 0, "rpmem check after the repair");
	};
	// Killed inside the copy, and shown to be: SIGKILL as soon as the replica's first smeared
	// page holds the master's new bytes; the replica is then neither what it was nor the
	// master. (Up to three tries, in case the copy ends between the look and the kill.)
	bool inside = false;
	for (int attempt = 0; attempt < 3 && !inside; ++attempt) {
		fall_behind();
		const std::string before = pool_data(s.remote_part());
		const std::string master = pool_data(s.local_part());
		const std::string first_page = master.substr(8192 - 4096, 4096);
		child repair({"/bin/sh", "-c",
		              "exec env " + s.env() + " " + tool + " check --repair " + set});
		bool saw_copy = false;
		while (!repair.wait(std::chrono::milliseconds(0))) {
			if (read_at(s.remote_part(), 8192, 4096) == first_page) {
				repair.kill(SIGKILL);
				saw_copy = true;
				break;
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		}
		REQUIRE(repair.wait(std::chrono::seconds(60)));
		require_rpmemd_gone(s.node());
		const std::string after = pool_data(s.remote_part());
		INFO("attempt " << attempt << ": saw the copy " << saw_copy);
		inside = saw_copy && after != before && after != master;
		// The mark goes only once all is copied.
		if (inside)
			CHECK(marked_behind(s.remote_part()));
		repair_again();
	}
	CHECK(inside);
	// And killed after guessed fractions of an uninterrupted repair: before the copy or near
	// its end. Whatever the kill left, the replica is either still marked or complete, and the
	// next check --repair finishes it.
	for (double fraction : few_kills() ? std::vector{0.95} : std::vector{0.1, 0.95}) {
		INFO("kill rpmem check --repair after " << fraction * whole << " s of " << whole);
		fall_behind();
		run(fmt::format("timeout -s KILL {:.3f} {} check --repair {}", fraction * whole,
		                tool, set),
		    s.env());
		require_rpmemd_gone(s.node());
		if (!marked_behind(s.remote_part()))
			CHECK(pool_data(s.remote_part()) == pool_data(s.local_part()));
		repair_again();
	}
}

TEST_CASE("rpmem sync falls back to a whole copy, saying why, where rpmemd does not checksum",
          "[tool][sync]")
{
	sshd server;
	setup s(server);
	const std::string set = s.create_obj_pool();
	auto env = s.env();
	const auto cmd = env.find("RPMEM_CMD='");
	REQUIRE(cmd != std::string::npos);
	env.insert(env.find('\'', cmd + 11), " --block-checksums no");
	auto dry = run(tool + " sync --dry-run --json " + set, env);
	require_status(dry, 0, "rpmem sync --dry-run --json, block-checksums = no");
	CHECK(json_fields(dry, "d['replicas'][0]['method'], d['bytes_to_move'] == 64 * 1024 * 1024 "
	                       "- 4096, 'block-checksums = no' in d['replicas'][0]['fallback']") ==
	      "full True True\n");
	overwrite(s.remote_part(), 5u << 20, "stale");
	auto sync = run(tool + " sync --progress none " + set, env);
	require_status(sync, 0, "rpmem sync, block-checksums = no");
	CHECK(has(sync, "block checksums are turned off on this replica node"));
	CHECK(has(sync, "copying the whole pool instead"));
	CHECK(has(sync, "synchronized (64.0 MiB written, the whole pool"));
	require_status(s.rpmem("verify " + set), 0, "rpmem verify after the whole copy");

	// An rpmemd that announces protocol 1.1 is never sent a checksum request (it would take
	// the unknown message for a broken peer): whole copy, saying why.
	// (A script: RPMEM_CMD's '|' separates commands, as in PMDK.)
	const auto wrapper = s.local() / "old-rpmemd.sh";
	std::ofstream(wrapper) << "#!/bin/sh\n"
	                       << s.node().command()
	                       << " | /usr/bin/python3 " RPMEM_SOURCE_DIR
	                          "/tests/support/old_hello.py\n";
	fs::permissions(wrapper, fs::perms::owner_all);
	auto old = s.env();
	const auto at = old.find("RPMEM_CMD='") + 11;
	old.replace(at, old.find('\'', at) - at, wrapper.string());
	auto old_dry = run(tool + " sync --dry-run --json " + set, old);
	require_status(old_dry, 0, "rpmem sync --dry-run --json, rpmemd speaking 1.1");
	CHECK(json_fields(old_dry, "d['replicas'][0]['method'], 'control protocol 1.1' in "
	                           "d['replicas'][0]['fallback'], 'cannot checksum blocks' in "
	                           "d['replicas'][0]['fallback']") == "full True True\n");
}

TEST_CASE("rpmem sync --from rebuilds the master from a replica, moving only what differs, and "
          "a half-rebuilt master is refused by libpmemobj until the rebuild finishes",
          "[tool][sync][from]")
{
	sshd server;
	setup s(server);
	const std::string set = s.poolset().string();
	require_status(s.obj("create", s.poolset()), 0, "06-pmemobj-replica create");
	require_status(s.obj("verify", s.poolset()), 0, "06-pmemobj-replica verify");

	// A little damage to the master: only its blocks come back.
	overwrite(s.local_part(), (2u << 20) + 100, "garbage!");
	overwrite(s.local_part(), 40u << 20, std::string(5000, '\x5a'));
	auto dry = s.rpmem("sync --from 1 --dry-run --json " + set);
	require_status(dry, 0, "rpmem sync --from 1 --dry-run --json");
	// The damage (three 64 KiB blocks) and the blocks of libpmemobj's run-time state that
	// was never replicated (the replica's copy is what a restart would find anyway).
	CHECK(json_fields(dry,
	                  "d['direction'], d['replicas'][0]['method'], "
	                  "d['bytes_to_move'] >= 3 * 65536, d['bytes_to_move'] <= (1 << 20), "
	                  "d['bytes_to_move'] % 65536 == 0") == "to_master delta True True True\n");
	CHECK(pool_data(s.local_part()).substr((2u << 20) + 100 - 4096, 8) == "garbage!"); // dry

	// Everything differs; killed half-way through the rebuild (again, should the kill come
	// after the rebuild finished on a loaded machine).
	bool landed = false;
	for (int attempt = 0; attempt < 5 && !landed; ++attempt) {
		smear_master(s.local_part(), 77 + attempt);
		auto killed =
		    run_killed_at(tool + " sync --from 1 --progress lines " + set, s.env(),
		                  ": 50% (", [](pid_t pid) { ::kill(pid, SIGKILL); });
		landed = killed.status == -1; // died of the signal, not done before it came
		require_rpmemd_gone(s.node());
	}
	REQUIRE(landed);
	auto refused = s.obj("verify", s.poolset());
	INFO("06-pmemobj-replica verify on the half-rebuilt master printed:\n" << refused.output);
	CHECK(refused.status != 0); // libpmemobj: unknown incompat feature
	auto no_sync = s.rpmem("sync " + set);
	CHECK(no_sync.status == 1);
	CHECK(has(no_sync, "being rebuilt from a replica"));
	CHECK(has(no_sync, "rpmem sync --from R"));

	auto rebuilt = s.rpmem("sync --from 1 --progress none " + set);
	require_status(rebuilt, 0, "rpmem sync --from 1 after the kill");
	CHECK(has(rebuilt, "master from replica 1 (" + s.target() + " remote.set): rebuilt"));
	CHECK(pool_data(s.local_part()) == pool_data(s.remote_part()));
	auto again = s.rpmem("sync --from 1 --dry-run --json " + set);
	CHECK(json_fields(again, "d['bytes_to_move'], d['replicas'][0]['status']") ==
	      "0 in_sync\n");
	require_status(s.obj("verify", s.poolset()), 0, "06-pmemobj-replica verify (rebuilt)");
	// libpmemobj's open wrote run-time state to the master it never replicates: its block's
	// checksums differ, and sync, like verify, finds nothing else to move.
	require_status(s.rpmem("verify " + set), 0, "rpmem verify (rebuilt)");
	auto after_open = s.rpmem("sync --dry-run --json " + set);
	CHECK(json_fields(after_open,
	                  "d['bytes_to_move'], d['replicas'][0]['status'], "
	                  "d['replicas'][0]['unreplicated_blocks'] > 0") == "0 in_sync True\n");
}

TEST_CASE("rpmem promote makes a replica the master: stock libpmemobj opens it, data intact",
          "[tool][promote]")
{
	sshd server;
	setup s(server);
	require_status(s.obj("create", s.poolset()), 0, "06-pmemobj-replica create");
	fs::remove(s.local_part()); // the master is lost

	const fs::path replica_set = s.node().dir() / "remote.set";
	auto before = s.obj("verify", replica_set);
	INFO("libpmemobj on the unpromoted replica printed:\n" << before.output);
	CHECK(before.status != 0); // its header links still name the lost master

	auto dry = s.rpmem("promote --dry-run " + replica_set.string());
	require_status(dry, 0, "rpmem promote --dry-run");
	CHECK(has(dry, "dry run: nothing written"));
	auto dry_json = s.rpmem("promote --dry-run --json " + replica_set.string());
	require_status(dry_json, 0, "rpmem promote --dry-run --json");
	CHECK(json_fields(dry_json, "d['dry_run'], d['promoted'], d['already_promoted'], "
	                            "d['signature'], d['parts'], d['headers_written'], "
	                            "d['exit_status']") == "True False False PMEMOBJ 1 0 0\n");
	CHECK(s.obj("verify", replica_set).status != 0);

	const fs::path promoted = s.local() / "promoted.set";
	// (The text of a promotion: examples/07-promote.sh's test.) The JSON reports the links
	// as found, the lost master's, not the ones written.
	auto p =
	    s.rpmem("promote --json " + replica_set.string() + " --output " + promoted.string());
	require_status(p, 0, "rpmem promote --json");
	CHECK(json_fields(p, "d['promoted'], d['headers_written'], d['output'] == '" +
	                         promoted.string() + "', d['next_uuid'] != d['uuid']") ==
	      "True 1 True True\n");
	CHECK(json_fields(p, "d['prev_uuid'], d['next_uuid']") ==
	      json_fields(dry_json, "d['prev_uuid'], d['next_uuid']"));
	REQUIRE(fs::exists(promoted));

	auto obj = s.obj("verify", promoted);
	require_status(obj, 0, "06-pmemobj-replica verify on the promoted pool");
	CHECK(has(obj, "800 records: 0 bad"));
	auto info = run("pmempool info " + s.remote_part().string());
	require_status(info, 0, "pmempool info on the promoted part");

	auto twice = s.rpmem("promote " + replica_set.string());
	require_status(twice, 0, "rpmem promote of a promoted pool");
	CHECK(has(twice, "already itself"));
	auto twice_json = s.rpmem("promote --json " + replica_set.string());
	require_status(twice_json, 0, "rpmem promote --json of a promoted pool");
	CHECK(json_fields(twice_json, "d['already_promoted'], d['promoted'], d['uuid'] == "
	                              "d['next_uuid'] == d['prev_uuid']") == "True False True\n");
}

TEST_CASE("rpmem promote refuses a replica with a damaged header and writes nothing",
          "[tool][promote]")
{
	sshd server;
	setup s(server);
	require_status(s.obj("create", s.poolset()), 0, "06-pmemobj-replica create");
	overwrite(s.remote_part(), 200, "x"); // inside the checksummed part of the header
	const fs::path replica_set = s.node().dir() / "remote.set";
	std::string before = slurp(s.remote_part()).substr(0, 4096);
	auto p = s.rpmem("promote " + replica_set.string());
	require_status(p, 1, "rpmem promote of a damaged replica");
	CHECK(has(p, "invalid pool header checksum"));
	CHECK(has(p, "pmempool sync"));
	CHECK(slurp(s.remote_part()).substr(0, 4096) == before);
}

TEST_CASE("rpmem promote refuses a replica marked as being caught up even with --force, check "
          "names it, and rpmem sync makes it whole",
          "[tool][promote][check]")
{
	sshd server;
	setup s(server);
	require_status(s.obj("create", s.poolset()), 0, "06-pmemobj-replica create");
	// As an asynchronous writer that died mid-catch-up leaves it (remote_writer_heal.cpp):
	// the "not whole" bit in its header, sealed.
	{
		std::fstream f(s.remote_part(), std::ios::in | std::ios::out | std::ios::binary);
		rpmem::pmdk::pool_hdr hdr{};
		f.read(reinterpret_cast<char *>(&hdr), sizeof hdr);
		REQUIRE(f);
		rpmem::pmdk::set_rebuilding_mark(hdr, true);
		rpmem::pmdk::seal(hdr);
		f.seekp(0);
		f.write(reinterpret_cast<const char *>(&hdr), sizeof hdr);
		REQUIRE(f);
	}
	const fs::path replica_set = s.node().dir() / "remote.set";
	const std::string before = slurp(s.remote_part()).substr(0, 4096);
	auto forced = s.rpmem("promote --force " + replica_set.string());
	require_status(forced, 1, "rpmem promote --force of a replica being caught up");
	CHECK(has(forced, "was being caught up from its master"));
	CHECK(has(forced, "rpmem sync"));
	CHECK(slurp(s.remote_part()).substr(0, 4096) == before); // nothing written
	auto found = s.rpmem("check " + s.poolset().string());
	INFO("rpmem check printed:\n" << found.output);
	CHECK(found.status != 0);
	CHECK(has(found, "marked as being caught up from the master"));
	require_status(s.rpmem("sync " + s.poolset().string()), 0, "rpmem sync");
	auto whole = s.rpmem("check " + s.poolset().string());
	require_status(whole, 0, "rpmem check after the sync");
	auto obj = s.obj("verify", s.poolset());
	require_status(obj, 0, "06-pmemobj-replica verify after the sync");
}

TEST_CASE("rpmem check: a whole set is consistent, damaged part headers and mislinked, behind or "
          "missing replicas are found, and --repair fixes them from sound copies",
          "[tool][check]")
{
	sshd server;
	setup s(server);
	// A master in two parts, so that one part's header can be rebuilt from the other's.
	const fs::path set = s.local() / "two.set";
	const fs::path part0 = s.local() / "p0", part1 = s.local() / "p1";
	std::ofstream(set) << fmt::format("PMEMPOOLSET\n32M {}\n32M {}\nREPLICA {} remote.set\n",
	                                  part0.string(), part1.string(), s.target());
	require_status(s.obj("create", set), 0, "06-pmemobj-replica create");
	const std::string check = "check " + set.string();
	const std::string replica1 = "replica 1 (" + s.target() + " remote.set)";

	auto ok = s.rpmem(check);
	require_status(ok, 0, "rpmem check of a healthy set");
	CHECK(has(ok, "replica 0 (the master, local): consistent"));
	CHECK(has(ok, replica1 + ": consistent (80.0 MiB pool)"));
	auto js = s.rpmem("check --json " + set.string());
	require_status(js, 0, "rpmem check --json of a healthy set");
	// Part 1 maps past its own 4 KiB header: the pool is 64 MiB - 4 KiB.
	CHECK(json_fields(js, "d['consistent'], d['exit_status'], d['replicas'][0]['status'], "
	                      "d['replicas'][0]['pool_size'], d['replicas'][1]['status'], "
	                      "d['replicas'][1]['pool_size'], d['replicas'][1]['problems']") ==
	      "True 0 consistent 67104768 consistent 83886080 []\n");

	SECTION(
	    "a damaged part header is found; --repair rebuilds it and libpmemobj opens the pool")
	{
		const std::string before = slurp(part1).substr(0, 4096);
		overwrite(part1, 200, "x"); // inside the checksummed part of the header
		const std::string damaged = slurp(part1).substr(0, 4096);
		auto bad = s.rpmem(check);
		require_status(bad, 1, "rpmem check of a set with a damaged part header");
		CHECK(has(bad, "part 1 (" + part1.string() + "): invalid pool header checksum"));
		CHECK(has(bad, "--repair rebuilds it"));
		CHECK(has(bad, "not consistent"));
		CHECK(slurp(part1).substr(0, 4096) == damaged); // check alone wrote nothing

		auto fixed = s.rpmem("check --repair " + set.string());
		require_status(fixed, 0, "rpmem check --repair");
		CHECK(has(fixed, "repaired: part 1 (" + part1.string() + "): header rebuilt"));
		// The same header as before, apart from its creation time (and so its checksum).
		auto after = slurp(part1).substr(0, 4096);
		CHECK(after.substr(0, 120) == before.substr(0, 120));
		CHECK(after.substr(128, 4088 - 128) == before.substr(128, 4088 - 128));
		require_status(s.rpmem(check), 0, "rpmem check after the repair");
		require_status(s.obj("verify", set), 0, "libpmemobj opens the repaired pool");
	}
	SECTION("part 0's header is not rebuilt: it is reported with what to do")
	{
		overwrite(part0, 200, "x");
		auto bad = s.rpmem("check --repair " + set.string());
		require_status(bad, 1, "rpmem check --repair of a damaged part 0 header");
		CHECK(has(bad, "part 0 (" + part0.string() + "): invalid pool header checksum"));
		CHECK(has(bad, "not repaired: part 0's header holds the pool's shutdown state"));
		CHECK(has(bad, replica1 + ": not checked: the master is not sound"));
	}
	SECTION("a mislinked replica marked behind is found; --repair brings it in line")
	{
		require_status(
		    s.rpmem("attr " + s.target() +
		            " remote.set --next-uuid 01234567-89ab-cdef-0123-456789abcdef "
		            "--compat 0x40000000"),
		    0, "rpmem attr (a wrong link and the behind mark)");
		auto bad = s.rpmem(check);
		require_status(bad, 1, "rpmem check of a mislinked replica");
		CHECK(has(bad, replica1 + ": header: next-replica link 01234567-89ab-cdef-0123-"
		                          "456789abcdef"));
		CHECK(has(bad, replica1 + ": marked possibly behind the master"));
		auto fixed = s.rpmem("check --repair --json " + set.string());
		require_status(fixed, 0, "rpmem check --repair --json");
		CHECK(json_fields(fixed, "d['consistent'], d['replicas'][1]['status'], "
		                         "'attributes set from the master' in "
		                         "d['replicas'][1]['repairs'][0], "
		                         "'no longer marked' in d['replicas'][1]['repairs'][0]") ==
		      "True repaired True True\n");
		require_status(s.rpmem(check), 0, "rpmem check after the repair");
		require_status(s.rpmem("verify " + set.string()), 0,
		               "rpmem verify after the repair");
	}
	SECTION("a missing replica is found; --repair re-creates it")
	{
		fs::remove(s.remote_part());
		auto bad = s.rpmem(check);
		require_status(bad, 1, "rpmem check of a set whose replica is missing");
		CHECK(has(bad, replica1 + ": missing"));
		auto fixed = s.rpmem("check --repair " + set.string());
		require_status(fixed, 0, "rpmem check --repair of a missing replica");
		CHECK(has(fixed, replica1 + ": repaired: re-created and"));
		require_status(s.rpmem("verify " + set.string()), 0,
		               "rpmem verify of the re-created");
		require_status(s.obj("verify", set), 0, "libpmemobj opens the set");
	}
	SECTION("a replica smaller than the master is found, and left to the operator")
	{
		s.node().write_poolset("small.set", {"16M"});
		require_status(s.rpmem("create " + s.target() + " small.set --size 16M"), 0,
		               "rpmem create small.set");
		std::ofstream(set)
		    << fmt::format("PMEMPOOLSET\n32M {}\n32M {}\nREPLICA {} small.set\n",
		                   part0.string(), part1.string(), s.target());
		auto small = s.rpmem("check --repair " + set.string());
		require_status(small, 1, "rpmem check --repair with a small replica");
		CHECK(has(small, "replica 1 (" + s.target() +
		                     " small.set): the replica pool is smaller than the master's"));
		CHECK(has(small, "remove it (rpmem rm)"));
		CHECK(!has(small, "repaired:"));
	}
	SECTION("an unreachable replica is not checked: exit 2, saying where and why")
	{
		// A port bound and not listening: connections to it are refused while we hold it.
		int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		REQUIRE(fd >= 0);
		sockaddr_in a{};
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		socklen_t len = sizeof a;
		REQUIRE(::bind(fd, reinterpret_cast<sockaddr *>(&a), len) == 0);
		REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0);
		const std::string live = s.target();
		const std::string dead =
		    live.substr(0, live.rfind(':') + 1) + std::to_string(ntohs(a.sin_port));
		std::ofstream(set) << fmt::format("PMEMPOOLSET\n32M {}\n32M {}\nREPLICA {} "
		                                  "remote.set\n",
		                                  part0.string(), part1.string(), dead);
		auto r = s.rpmem(check);
		auto dead_js = s.rpmem("check --json --repair " + set.string());
		::close(fd);
		require_status(r, 2, "rpmem check with an unreachable replica");
		CHECK(has(r, "replica 0 (the master, local): consistent"));
		CHECK(has(r, "replica 1 (" + dead + " remote.set): not checked:"));
		CHECK(has(r, "127.0.0.1"));
		// Said once, with what to check.
		CHECK(has(r, "127.0.0.1:" + dead.substr(dead.rfind(':') + 1) +
		                 ": Connection refused: is sshd running there, on this port?\n"));
		require_status(dead_js, 2,
		               "rpmem check --json --repair with an unreachable replica");
		CHECK(json_fields(dead_js, "d['consistent'], d['exit_status'], "
		                           "d['replicas'][1]['status']") == "False 2 error\n");
	}
	SECTION("a pool in use is not checked")
	{
		int fd = ::open(part0.c_str(), O_RDONLY | O_CLOEXEC);
		REQUIRE(fd >= 0);
		REQUIRE(flock(fd, LOCK_EX | LOCK_NB) == 0); // as libpmemobj holds an open pool
		auto busy = s.rpmem(check);
		::close(fd);
		require_status(busy, 2, "rpmem check of a pool in use");
		CHECK(has(busy, part0.string() + " is in use"));
		CHECK(has(busy, "close it first"));
	}
}

TEST_CASE("rpmem check: a remote replica rpmemd answers for but finds damaged is inconsistent, "
          "named with its host, part and cause, and --repair and sync re-create it byte for byte",
          "[tool][check]")
{
	// Not "not checked" (exit 2, kept for a replica that cannot be reached: the test above):
	// rpmemd answers with the status damaged, naming the part and the check that failed.
	sshd server;
	setup s(server);
	const std::string set = s.poolset().string();
	require_status(s.obj("create", s.poolset()), 0, "06-pmemobj-replica create");
	const std::string replica1 = "replica 1 (" + s.target() + " remote.set)";
	const fs::path part = s.remote_part();
	require_status(s.rpmem("check " + set), 0, "rpmem check of the healthy set");

	// A flipped byte in the part's header (its checksum fails), or a truncated part; each
	// repaired by check --repair, and one by sync.
	const auto [header, by_check] =
	    GENERATE(table<bool, bool>({{true, true}, {false, true}, {false, false}}));
	INFO((header ? "a flipped header byte" : "a truncated part")
	     << ", repaired by " << (by_check ? "check --repair" : "sync"));
	std::string cause;
	if (header) {
		const std::string head = read_at(part, 0, 4096);
		overwrite(part, 200, std::string(1, static_cast<char>(head[200] ^ 0x01)));
		cause = "invalid pool header checksum";
	} else {
		fs::resize_file(part, 40u << 20);
		cause = "is 41943040 bytes, shorter than the 83886080 the pool set declares";
	}
	const std::string damaged = slurp(part);
	auto bad = s.rpmem("check " + set);
	require_status(bad, 1, "rpmem check of a damaged replica");
	CHECK(has(bad, replica1 + ": damaged: "));
	CHECK(has(bad, "127.0.0.1")); // the host
	CHECK(has(bad, part.string()));
	CHECK(has(bad, cause));
	CHECK(has(bad, "rpmem check --repair")); // rpmemd's words: what to do
	CHECK(!has(bad, "not checked"));
	auto bad_js = s.rpmem("check --json " + set);
	require_status(bad_js, 1, "rpmem check --json of a damaged replica");
	CHECK(json_fields(bad_js, "d['exit_status'], d['replicas'][1]['status'], "
	                          "'" +
	                              cause + "' in d['replicas'][1]['problems'][0]") ==
	      "1 inconsistent True\n");
	CHECK(slurp(part) == damaged); // check alone wrote nothing

	if (by_check) {
		auto fixed = s.rpmem("check --repair " + set);
		require_status(fixed, 0, "rpmem check --repair of a damaged replica");
		CHECK(has(fixed,
		          replica1 + ": repaired: its damaged parts removed, re-created and "));
		CHECK(has(fixed, "(it was damaged: "));
		CHECK(has(fixed, cause));
	} else {
		auto dry = s.rpmem("sync --dry-run " + set);
		require_status(dry, 0, "rpmem sync --dry-run of a damaged replica");
		CHECK(has(dry, replica1 + ": damaged ("));
		CHECK(has(dry, "would remove its parts, re-create it and copy"));
		CHECK(slurp(part) == damaged);
		auto synced = s.rpmem("sync --json " + set);
		require_status(synced, 0, "rpmem sync of a damaged replica");
		CHECK(json_fields(synced,
		                  "d['replicas'][0]['status'], d['replicas'][0]['created'], "
		                  "d['replicas'][0]['was_damaged'], "
		                  "d['replicas'][0]['method']") == "synchronized True True full\n");
	}
	CHECK(fs::file_size(part) == (80u << 20));
	CHECK(pool_data(part) == pool_data(s.local_part()));
	require_status(s.rpmem("check " + set), 0, "rpmem check after the repair");
	require_status(s.obj("verify", s.poolset()), 0, "libpmemobj opens the repaired set");
}

TEST_CASE("rpmem status lists the pools rpmemd serves on this host while it serves them",
          "[tool][status]")
{
	const fs::path dir = make_temp_dir("/tmp", "rpmem-status-");
	const fs::path sessions = dir / "sessions"; // rpmemd creates it
	replica_options o;
	o.daemon_args = "--status-dir=" + sessions.string();
	remote_setup fx(8 << 20, {"16M"}, o);
	const std::string status = tool + " status --dir " + sessions.string();

	auto none = run(status + " --json");
	require_status(none, 0, "rpmem status --json with no session");
	CHECK(json_fields(none, "len(d['sessions']), d['exit_status']") == "0 0\n");
	CHECK(has(run(status), "no rpmemd session of this user serves a pool"));

	unsigned nlanes = 2;
	auto pool = fx.create(nlanes);
	const pid_t daemon = find_rpmemd(fx.node.dir().string());
	REQUIRE(daemon > 0);
	auto open = run(status + " --json");
	require_status(open, 0, "rpmem status --json with a session open");
	// The rpmemd serving it, alive, holding the lock of the pool's part, with what it serves.
	CHECK(json_fields(open, "len(d['sessions']), d['sessions'][0]['pid'], "
	                        "d['sessions'][0]['alive'], d['sessions'][0]['lock_holder'], "
	                        "d['sessions'][0]['descriptor'], d['sessions'][0]['created'], "
	                        "d['sessions'][0]['pool_size'], d['sessions'][0]['lanes'], "
	                        "d['sessions'][0]['peer'].startswith('127.0.0.1:')") ==
	      fmt::format("1 {} True {} pool.set True {} {} True\n", daemon, daemon, 16 << 20,
	                  nlanes));
	auto text = run(status);
	INFO(text.output);
	CHECK(has(text, "1 rpmemd session(s) serving a pool on this host"));
	CHECK(has(text, fmt::format("pid {}: pool.set (", daemon)));
	CHECK(has(text, fmt::format("lock held by pid {}", daemon)));

	SECTION("a closed pool is no longer listed")
	{
		pool->close();
		pool.reset();
		CHECK(json_fields(run(status + " --json"), "len(d['sessions'])") == "0\n");
	}
	SECTION("a killed rpmemd's record is listed as gone, and --prune removes it")
	{
		REQUIRE(::kill(daemon, SIGKILL) == 0);
		require_rpmemd_gone(fx.node);
		auto gone = run(status + " --json");
		CHECK(json_fields(gone, "len(d['sessions']), d['sessions'][0]['alive'], "
		                        "d['sessions'][0]['lock_holder']") == "1 False None\n");
		CHECK(has(run(status), "gone, record left"));
		auto pruned = run(status + " --prune --json");
		CHECK(json_fields(pruned, "d['pruned'], len(d['sessions'])") == "1 1\n");
		CHECK(json_fields(run(status + " --json"), "len(d['sessions'])") == "0\n");
		pool.reset(); // the client finds rpmemd gone; nothing to assert here
	}
	std::error_code ec;
	fs::remove_all(dir, ec);
}

TEST_CASE("rpmem usage errors and bench", "[tool]")
{
	auto none = run(tool);
	CHECK(none.status == 2);
	auto unknown = run(tool + " frobnicate");
	CHECK(unknown.status == 2);
	auto missing = run(tool + " verify /nonexistent/pool.set");
	CHECK(missing.status == 2);
	CHECK(has(missing, "/nonexistent/pool.set"));
	auto version = run(tool + " --version");
	CHECK(version.status == 0);
	CHECK(has(version, "rpmem "));
	// `rpmem bench` is rpmem-bench from the same directory, with the same arguments.
	auto bench = run(tool + " bench --help");
	INFO(bench.output);
	CHECK(bench.status == 0);
	CHECK(has(bench, "rpmem-bench"));
}

TEST_CASE("rpmem without a usable libfabric says what to install, and rpmemd ends",
          "[tool][library]")
{
	// libfabric is loaded at the first fabric call (lib/fabric/library.cpp): one that cannot be
	// loaded, or lacks the functions rpmem takes, is an error naming the library and the fix.
	// load_ahead's thread meets the failure first and keeps quiet; the call that needs the
	// library loads again and reports it. LD_LIBRARY_PATH puts the stand-in first (dlopen
	// searches it before the cache); rpmemd, started by sshd, keeps the real one.
	sshd server;
	setup s(server);
	const fs::path dir = s.local() / "fake-libfabric";
	fs::create_directories(dir);
	const auto try_create = [&](const std::string &desc) {
		s.node().write_poolset(desc, {"8M"});
		auto r = run(tool + " create " + s.target() + " " + desc + " -s 8M",
		             s.env() + fmt::format(" LD_LIBRARY_PATH={}:{}/lib", dir.string(),
		                                   RPMEM_BINARY_DIR));
		INFO("rpmem create printed:\n" << r.output);
		CHECK(r.status == 1);
		CHECK(!has(r, "cannot reach")); // not taken for a provider that cannot reach rpmemd
		require_rpmemd_gone(s.node());
		return r;
	};
	// Not a shared library at all: dlopen fails.
	std::ofstream(dir / "libfabric.so.1") << "not a shared library\n";
	auto broken = try_create("broken.set");
	CHECK(has(broken, "cannot load libfabric.so.1 ("));
	CHECK(has(broken, "install libfabric (Debian: apt install libfabric1)"));
	// A shared library without libfabric's functions: dlopen succeeds, dlvsym does not.
	fs::remove(dir / "libfabric.so.1");
	fs::copy_file(fs::canonical("/lib/x86_64-linux-gnu/libz.so.1"), dir / "libfabric.so.1");
	auto foreign = try_create("foreign.set");
	CHECK(has(foreign, "libfabric.so.1 has no fi_getinfo@FABRIC_1.3"));
	CHECK(has(foreign, "rpmem needs libfabric 1.5 or later"));
}

TEST_CASE("rpmem create that fails at once exits with its error, not a crash at exit",
          "[tool][exit]")
{
	// A create refused by the host returns within a millisecond, while libfabric is still
	// loading on its own thread (fabric::library::load_ahead); exit must wait for it, or
	// libfabric's destructor runs under it (before it waited: SIGSEGV in 2 runs of 8, and in
	// 1 of 16).
	const int port = [] {
		int fd = ::socket(AF_INET, SOCK_STREAM, 0);
		sockaddr_in a{};
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		socklen_t len = sizeof(a);
		REQUIRE(::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0);
		REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0);
		::close(fd); // nothing listens there now: connections are refused
		return ntohs(a.sin_port);
	}();
	for (int i = 0; i < 24; ++i) {
		auto r =
		    run(fmt::format("{} create root@127.0.0.1:{} refused.set -s 8M", tool, port),
		        "RPMEM_SSH_CONFIG=/dev/null");
		INFO("run " << i << " printed:\n" << r.output);
		CHECK(r.status == 1);
		CHECK(has(r, "Connection refused"));
	}
}

TEST_CASE("examples/07-promote.sh: replicate, lose the master, promote, open", "[tool][promote]")
{
	sshd server;
	setup s(server);
	const fs::path work = s.local() / "work";
	auto r = run(fmt::format("sh {}/examples/07-promote.sh {} {} {}", RPMEM_SOURCE_DIR,
	                         work.string(), s.target(), s.node().dir().string()),
	             s.env(true) + fmt::format(" BIN={}/bin", RPMEM_BINARY_DIR));
	require_status(r, 0, "examples/07-promote.sh");
	CHECK(has(r, "promoted: replica links"));
	CHECK(has(r, "verified 800 records: 0 bad"));
	CHECK(!fs::exists(work / "master.part"));
}

TEST_CASE("rpmem verify: a healthy libpmemobj pool an application wrote and closed is in sync",
          "[tool][verify]")
{
	sshd server;
	setup s(server);
	// Transactions from several threads (allocations, frees, huge chunks): libpmemobj leaves
	// run-time state in the master it never persists, so never replicates.
	require_status(s.obj("create", s.poolset()), 0, "06-pmemobj-replica create");
	require_status(s.obj("verify", s.poolset()), 0, "06-pmemobj-replica verify");
	auto v = s.rpmem("verify " + s.poolset().string());
	require_status(v, 0, "rpmem verify of a healthy, closed pool");
	CHECK(has(v, "in sync"));
	CHECK(has(v, "skipped: what libpmemobj never replicates"));
	auto vj = s.rpmem("verify --json " + s.poolset().string());
	CHECK(vj.status == 0);
	CHECK(json_fields(vj, "d['in_sync'], d['exit_status'], d['replicas'][0]['status'], "
	                      "d['replicas'][0]['skipped_bytes'] > 0, "
	                      "d['replicas'][0]['differing_range_count']") ==
	      "True 0 in_sync True 0\n");

	// Damage to what libpmemobj does replicate is still found: the layout name in the
	// descriptor, and the first chunk header of the heap.
	overwrite(s.remote_part(), 4096 + 3, "X");
	overwrite(s.remote_part(), 0x302440, std::string(8, '\x7f'));
	auto dirty = s.rpmem("verify " + s.poolset().string());
	INFO(dirty.output);
	CHECK(dirty.status == 1);
	CHECK(has(dirty, "2 range(s) differ"));
	CHECK(has(dirty, "0x1003-0x1004 (1 bytes)"));
	auto dj = s.rpmem("verify --json " + s.poolset().string());
	CHECK(dj.status == 1);
	CHECK(json_fields(dj, "d['in_sync'], d['replicas'][0]['status'], "
	                      "d['replicas'][0]['differing_range_count'], "
	                      "d['replicas'][0]['differing_ranges'][0]") ==
	      "False differ 2 {'begin': 4099, 'end': 4100}\n");
}

TEST_CASE("rpmem's command line: an unknown command is named, help COMMAND helps", "[tool][cli]")
{
	auto bogus = run(tool + " bogus");
	require_status(bogus, 2, "rpmem bogus");
	CHECK(has(bogus, "unknown command 'bogus'; the commands are create, open-check, info"));
	auto help = run(tool + " help sync");
	require_status(help, 0, "rpmem help sync");
	CHECK(has(help, "rebuild remote replicas from the master"));
	CHECK(has(help, "--progress"));
	require_status(run(tool + " help nope"), 2, "rpmem help nope");
	auto top = run(tool + " --help");
	require_status(top, 0, "rpmem --help");
	// What the top-level help promises exists: check (and its --repair) is a command.
	CHECK(has(top, "check that the pool set is whole"));
	auto check_help = run(tool + " help check");
	require_status(check_help, 0, "rpmem help check");
	CHECK(has(check_help, "--repair"));
	auto info = run(tool + " help info");
	CHECK(!has(info, "local pool size to register"));
	CHECK(has(info, "--json"));
}
