// SPDX-License-Identifier: BSD-3-Clause
// The C ABI's online catch-up (client/resilient_pool.hpp, catch_up_window.hpp) through our own
// C program (tests/support/capi_bulk.c), not libpmemobj: its threads are ours, so this binary
// runs under TSan too (the stock-libpmemobj outage scenarios are in outage_test.cpp). The one
// race TSan is told to pass over is the catch-up's designed one: its moves read the bytes the
// records thread writes (capi_bulk.c says how it is kept to that race).
#include "pmemobj_log_setup.hpp"
#include "process.hpp"
#include "replica_fixture.hpp"
#include "support/child.hpp"
#include "support/proc_state.hpp"

#include <csignal>
#include <cstdio>
#include <optional>
#include <regex>
#include <span>
#include <thread>

using namespace rpmem::test;

namespace
{

struct loopback {
	sshd server;
	replica node{server};
};

/** capi_bulk (tests/support/capi_bulk.c) on a pool of `size` bytes, the node's pool set
 *  `set` of one part of `part_size`, with `env` first in its environment; its stderr and its
 *  dump of the master in s.dir(). Ready once constructed. */
struct bulk {
	bulk(loopback &net, const log_setup &s, const std::string &set,
	     const std::string &part_size, std::size_t size, const std::vector<std::string> &env)
	    : err(s.dir() / (set + ".err")), dump(s.dir() / "master.bin"),
	      w(argv(net, set, part_size, size, dump), s.environment(env), err.string())
	{
		auto line = w.read_line(std::chrono::seconds(120));
		INFO("capi_bulk's stderr:\n" << errors());
		REQUIRE(line);
		REQUIRE(line->rfind("ready ", 0) == 0);
	}
	std::string errors() const { return slurp(err); }
	/** Waits until capi_bulk's stderr (its log) says `what`, for 120 s at most; whether it
	 *  did. */
	bool said(const std::string &what) const
	{
		const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
		while (!has(errors(), what) && std::chrono::steady_clock::now() < give_up)
			std::this_thread::sleep_for(std::chrono::milliseconds(2));
		return has(errors(), what);
	}

	fs::path err, dump;
	child w;

private:
	static std::vector<std::string> argv(loopback &net, const std::string &set,
	                                     const std::string &part_size, std::size_t size,
	                                     const fs::path &dump)
	{
		net.node.write_poolset(set, {part_size});
		return {RPMEM_BINARY_DIR "/bin/rpmem_capi_bulk", net.server.target().str(), set,
		        std::to_string(size), dump.string()};
	}
};

/** Sends capi_bulk one command line. */
bool say(child &w, const std::string &command)
{
	const std::string l = command + "\n";
	return w.write(std::span(reinterpret_cast<const std::uint8_t *>(l.data()), l.size()));
}

/** capi_bulk's lap line: the records thread's persists and the longest one since the last. */
struct lap_figures {
	unsigned long long records = 0, longest_us = 0;
};

lap_figures read_lap(child &w)
{
	lap_figures f;
	const auto line = w.read_line(std::chrono::seconds(120));
	REQUIRE(line);
	REQUIRE(std::sscanf(line->c_str(), "records %llu longest_us %llu", &f.records,
	                    &f.longest_us) == 2);
	return f;
}

/** Tells capi_bulk to close: its pool closed cleanly and the master dumped, the replica's
 *  part must hold every byte of it (the header apart: the mark was cleared). Returns the
 *  records thread's last lap. */
lap_figures close_and_compare(child &w, const fs::path &dump, const fs::path &part,
                              std::size_t size)
{
	REQUIRE(say(w, "close")); // the thread stops, and its last lap comes first
	const auto last = read_lap(w);
	auto line = w.read_line(std::chrono::seconds(120));
	REQUIRE(line == std::string("closed 0 0"));
	line = w.read_line(std::chrono::seconds(120));
	REQUIRE(line == std::string("dumped"));
	REQUIRE(w.wait(std::chrono::seconds(30)) == 0);
	const auto master = slurp(dump), replica = slurp(part);
	REQUIRE(master.size() == size);
	REQUIRE(replica.size() >= size);
	std::size_t first = size;
	for (std::size_t i = 4096; i < size && first == size; ++i)
		if (master[i] != replica[i])
			first = i;
	INFO("the first byte differing at " << first);
	CHECK(first == size);
	return last;
}

/** How a catch-up is interrupted: its environment, and what the log says of the failure. */
struct interruption {
	std::vector<std::string> env;
	std::string failed; // the state line's text when the catch-up failed
	// Every round the last, the calls held: none persists to the replica while it catches
	// up, and librpmem(7) bounds their waits by nothing but the round.
	bool held;
	// RPMEM_REPLICATION=async: no persist goes to the replica while it catches up (each is
	// recorded), so the caught-up line says nothing of persists sent directly.
	bool async = false;
};

/** rpmemd killed while a catch-up runs, and what the application and the replica see. */
void kill_in_catch_up(const interruption &how)
{
	// tests/support/capi_bulk.c: a 192 MiB pool whose every block changes while the replica
	// is lost, so its catch-up takes long enough (a few hundred ms here) to be caught in the
	// act; a thread persists records into the last MiB on lane 0 meanwhile, which the
	// catch-up's moves share; they go to the replica (catch_up_window.hpp) except while a
	// move covers them.
	constexpr std::size_t size = 192u << 20;
	loopback net;
	log_setup s(net.server, net.node);
	bulk b(net, s, "bulk.set", "200M", size, how.env);
	auto &w = b.w;
	const auto &dump = b.dump;
	auto errors = [&] { return b.errors(); };
	std::optional<std::string> line;
	auto wait_for = [&](const std::string &what, std::size_t n, std::chrono::seconds limit) {
		const auto give_up = std::chrono::steady_clock::now() + limit;
		while (count(errors(), what) < n && std::chrono::steady_clock::now() < give_up)
			std::this_thread::sleep_for(std::chrono::milliseconds(2));
		return count(errors(), what) >= n;
	};
	const auto keys = net.server.dir() / "authorized_keys";
	const auto keys_off = net.server.dir() / "authorized_keys.off";
	// Lost, every block changed, back, and rpmemd killed as soon as the catch-up begins; a
	// catch-up that finished first (a loaded machine may run it before this sees it begin)
	// is tried again with the next fill.
	// The text after the last `marker` in the log ("" when there is none).
	auto after = [&](const std::string &marker) {
		const auto text = errors();
		const auto at = text.rfind(marker);
		return at == std::string::npos ? std::string() : text.substr(at + marker.size());
	};
	auto wait_until = [&](auto &&done) {
		const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
		while (!done() && std::chrono::steady_clock::now() < give_up)
			std::this_thread::sleep_for(std::chrono::milliseconds(2));
		return done();
	};
	auto lost = [&] { return after(": replica ").rfind("lost", 0) == 0; };
	unsigned long long earlier_longest_us = 0; // before the logins were last allowed again
	bool interrupted = false;
	for (unsigned attempt = 1; attempt <= 4 && !interrupted; ++attempt) {
		if (!lost()) {
			fs::rename(keys, keys_off);
			REQUIRE(run_kill_rpmemd(net.node.dir().string()));
			REQUIRE(wait_until(lost));
		}
		REQUIRE(say(w, fmt::format("fill {}", attempt)));
		line = w.read_line(std::chrono::seconds(120));
		REQUIRE(line == std::string("filled"));
		REQUIRE(say(w, "lap"));
		earlier_longest_us = std::max(earlier_longest_us, read_lap(w).longest_us);
		fs::rename(keys_off, keys);
		REQUIRE(wait_for("replica catching_up", attempt, std::chrono::seconds(60)));
		// Logins refused again first: the replica stays away after the kill.
		fs::rename(keys, keys_off);
		REQUIRE(run_kill_rpmemd(net.node.dir().string()));
		// Either the catch-up failed (the case this test is for), or it had finished and
		// the kill is an ordinary outage, lost after RPMEM_RECONNECT_TIMEOUT.
		REQUIRE(wait_until([&] {
			const auto since = after("replica catching_up");
			return has(since, "catching up failed") || has(since, "replica lost (");
		}));
		interrupted = has(after("replica catching_up"), how.failed);
	}
	INFO("capi_bulk's stderr:\n" << errors());
	REQUIRE(interrupted);
	// The calls go on while the replica stays away after the failed catch-up (held in
	// its last round, they were let go).
	REQUIRE(say(w, "lap"));
	// From the logins allowed again through the killed catch-up: a persist sent to the
	// replica that fails is recorded and returns, so RPMEM_TIMEOUT (2000 ms here).
	const auto killed = read_lap(w);
	INFO("the records thread through the killed catch-up: "
	     << killed.records << " persists, the longest " << killed.longest_us << " us");
	if (!how.held) {
		CHECK(killed.longest_us <= 2'000'000);
	} else {
		// Held: a call waits for the held round (its length is in the lost line) and is
		// then recorded and returns, so that plus RPMEM_TIMEOUT.
		const std::regex held_for("the calls held for ([0-9.]+) ms");
		const auto failed_line = after("replica lost (catching up failed");
		std::smatch m;
		REQUIRE(std::regex_search(failed_line, m, held_for));
		const double held_us = std::stod(m[1].str()) * 1000;
		INFO("the calls were held " << held_us << " us before the catch-up failed");
		CHECK(double(killed.longest_us) <= held_us + 2'000'000);
	}
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
	REQUIRE(say(w, "lap"));
	const auto away = read_lap(w);
	INFO("the records thread while the replica stayed away after the failed catch-up: "
	     << away.records << " persists");
	CHECK(away.records > 0);
	fs::rename(keys_off, keys);
	// Caught up after the kill, by itself.
	REQUIRE(wait_until([&] { return has(after(how.failed), "replica in_sync (caught up"); }));
	{
		// The records thread kept persisting while the catch-up moved the blocks before
		// its own: those persists went to the replica (its number in the line is not 0).
		// Held from the first round, only those between its start and the hold can.
		const auto caught = after("replica in_sync (caught up");
		const std::regex direct("; ([0-9]+) bytes of persists went to it directly");
		std::smatch m;
		INFO("the caught-up line: " << caught.substr(0, caught.find('\n')));
		if (!how.async) {
			REQUIRE(std::regex_search(caught, m, direct));
			if (!how.held)
				CHECK(std::stoull(m[1].str()) > 0);
		}
	}
	// What the application lived through: every persist returned success (capi_bulk stops
	// at the first error), and none waited longer than librpmem(7)'s bounds. From the
	// logins allowed again after the killed catch-up to in sync: a persist sent to the
	// replica that fails is recorded and returns, so RPMEM_TIMEOUT (2000 ms here); over the
	// whole run (a loss waits out RPMEM_RECONNECT_TIMEOUT, 1000 ms, first), their sum.
	REQUIRE(say(w, "lap"));
	const auto catching_up = read_lap(w);
	INFO("the records thread from the logins allowed again to in sync: "
	     << catching_up.records << " persists, the longest " << catching_up.longest_us
	     << " us; before that, the longest " << earlier_longest_us << " us");
	CHECK(catching_up.records > 0);
	if (!how.held) {
		CHECK(catching_up.longest_us <= 2'000'000);
		CHECK(earlier_longest_us <= 3'000'000);
	}
	const auto last_lap = close_and_compare(w, dump, net.node.part("bulk.set"), size);
	if (!how.held)
		CHECK(last_lap.longest_us <= 3'000'000);
}

} // namespace

TEST_CASE("catch-up: rpmemd killed while a catch-up moves and the calls persist to the "
          "replica, and it is caught up again and matches the master",
          "[outage][capi][kill]")
{
	kill_in_catch_up({{"RPMEM_RECONNECT_TIMEOUT=1000"}, "catching up failed: ", false});
}

TEST_CASE("catch-up: rpmemd killed in the last round, the calls held: they go on, and the "
          "replica is caught up again and matches the master",
          "[outage][capi][kill]")
{
	// Every changed block in the last round (RPMEM_CATCH_UP_HOLD_BYTES over the pool's
	// size): the calls are held for the whole catch-up, so the kill lands while they are.
	// librpmem(7) bounds a held call by nothing but the round, which the user chose to make
	// this long: the records thread's waits are reported, not bounded.
	kill_in_catch_up({{"RPMEM_RECONNECT_TIMEOUT=1000", "RPMEM_CATCH_UP_HOLD_BYTES=268435456"},
	                  "catching up failed in its last round, the calls held for ",
	                  true});
}

TEST_CASE("catch-up, asynchronous: rpmemd killed while a catch-up moves, the calls recording: "
          "they go on, and the replica is caught up again and matches the master",
          "[outage][capi][kill][async]")
{
	kill_in_catch_up({{"RPMEM_REPLICATION=async", "RPMEM_RECONNECT_TIMEOUT=1000"},
	                  "catching up failed: ",
	                  false,
	                  true});
}

TEST_CASE("catch-up, asynchronous: rpmemd killed in the last round, the calls held: they go "
          "on, and the replica is caught up again and matches the master",
          "[outage][capi][kill][async]")
{
	// As the synchronous case: every changed block in the last round, which holds the calls
	// and the replicator, so the kill lands while they are held.
	kill_in_catch_up({{"RPMEM_REPLICATION=async", "RPMEM_RECONNECT_TIMEOUT=1000",
	                   "RPMEM_CATCH_UP_HOLD_BYTES=268435456"},
	                  "catching up failed in its last round, the calls held for ",
	                  true,
	                  true});
}

TEST_CASE("catch-up: rpmemd frozen, a call bound shorter than RPMEM_TIMEOUT: the calls go on "
          "after RPMEM_CALL_TIMEOUT, none goes to the replica while it catches up, and it "
          "matches the master",
          "[outage][capi]")
{
	// tests/support/capi_bulk.c: a thread persists records on lane 0 throughout. rpmemd
	// frozen, a call waits on it; RPMEM_TIMEOUT is far longer than RPMEM_CALL_TIMEOUT, so
	// what ends the wait is the call's bound, with the session alive as far as the data
	// path knows: the replica is dropped as slow, its session given up.
	constexpr std::size_t size = 16u << 20;
	loopback net;
	log_setup s(net.server, net.node);
	bulk b(net, s, "frozen.set", "20M", size,
	       {"RPMEM_TIMEOUT=30000", "RPMEM_CALL_TIMEOUT=500"});
	auto &w = b.w;
	auto errors = [&] { return b.errors(); };
	auto records = [&] {
		REQUIRE(say(w, "lap"));
		return read_lap(w).records;
	};
	const pid_t daemon = find_rpmemd(net.node.dir().string());
	REQUIRE(daemon > 0);
	REQUIRE(freeze(daemon));
	REQUIRE(b.said("the replica is too slow"));
	CHECK(has(errors(), "longer than RPMEM_CALL_TIMEOUT (500 ms)"));
	// The records thread goes on while rpmemd stays frozen.
	records();
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
	CHECK(records() > 0);
	// Continued, the old rpmemd sees its session gone and lets the pool go; the healer's
	// next session catches the replica up, sending it no call meanwhile.
	REQUIRE(::kill(daemon, SIGCONT) == 0);
	REQUIRE(b.said("replica in_sync (caught up"));
	{
		const auto caught = line_with(errors(), "replica in_sync (caught up");
		INFO("the caught-up line: " << caught);
		CHECK(has(caught, "; 0 bytes of persists went to it directly"));
	}
	close_and_compare(w, b.dump, net.node.part("frozen.set"), size);
}

TEST_CASE("catch-up: a last round, the calls held, longer than RPMEM_CALL_TIMEOUT is ended: the "
          "calls go on, and the replica is caught up again and matches the master",
          "[outage][capi]")
{
	// Every changed block in the last round (RPMEM_CATCH_UP_HOLD_BYTES over the pool's size),
	// so the calls are held while 192 MiB move: far longer than the 100 ms bound, which the
	// records thread, held at the gate, runs into. The watch then fails the session with
	// the round, the calls go on, and the replica, now slow, is caught up by its rate.
	constexpr std::size_t size = 192u << 20;
	loopback net;
	log_setup s(net.server, net.node);
	bulk b(net, s, "held.set", "200M", size,
	       {"RPMEM_RECONNECT_TIMEOUT=1000", "RPMEM_CALL_TIMEOUT=100",
	        "RPMEM_CATCH_UP_HOLD_BYTES=268435456"});
	auto &w = b.w;
	INFO("capi_bulk's stderr:\n" << b.errors());
	// Away (logins refused, rpmemd killed) while every block changes.
	const auto keys = net.server.dir() / "authorized_keys";
	const auto keys_off = net.server.dir() / "authorized_keys.off";
	fs::rename(keys, keys_off);
	REQUIRE(run_kill_rpmemd(net.node.dir().string()));
	REQUIRE(b.said("replica lost"));
	REQUIRE(say(w, "fill 1"));
	REQUIRE(w.read_line(std::chrono::seconds(120)) == std::string("filled"));
	REQUIRE(say(w, "lap"));
	read_lap(w);
	fs::rename(keys_off, keys);
	REQUIRE(b.said("catching up failed in its last round"));
	{
		const auto failed = line_with(b.errors(), "catching up failed in its last round");
		INFO("the failure: " << failed);
		CHECK(has(failed, "longer than RPMEM_CALL_TIMEOUT (100 ms)"));
	}
	REQUIRE(b.said("replica in_sync (caught up"));
	// What the records thread lived through: it went on throughout (capi_bulk stops at the
	// first error); its longest call is reported, the machine being noisy.
	REQUIRE(say(w, "lap"));
	const auto lap = read_lap(w);
	CHECK(lap.records > 0);
	WARN("the records thread through the held round and the catch-up: "
	     << lap.records << " persists, the longest " << lap.longest_us << " us");
	close_and_compare(w, b.dump, net.node.part("held.set"), size);
}
