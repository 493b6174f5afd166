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

#include <cstdio>
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

} // namespace

TEST_CASE("catch-up: rpmemd killed while a catch-up moves and the calls persist to the "
          "replica, and it is caught up again and matches the master",
          "[outage][capi][kill]")
{
	// tests/support/capi_bulk.c: a 192 MiB pool whose every block changes while the replica
	// is lost, so its catch-up takes long enough (a few hundred ms here) to be caught in the
	// act; a thread persists records into the last MiB on lane 0 meanwhile, which the
	// catch-up's moves share; they go to the replica (catch_up_window.hpp) except while a
	// move covers them.
	constexpr std::size_t size = 192u << 20;
	loopback net;
	log_setup s(net.server, net.node);
	net.node.write_poolset("bulk.set", {"200M"});
	const auto err = s.dir() / "bulk.err";
	const auto dump = s.dir() / "master.bin";
	child w({RPMEM_BINARY_DIR "/bin/rpmem_capi_bulk", net.server.target().str(), "bulk.set",
	         std::to_string(size), dump.string()},
	        s.environment({"RPMEM_RECONNECT_TIMEOUT=1000"}), err.string());
	auto errors = [&] { return slurp(err); };
	auto line = w.read_line(std::chrono::seconds(120));
	INFO("capi_bulk's stderr:\n" << errors());
	REQUIRE(line);
	REQUIRE(line->rfind("ready ", 0) == 0);
	auto count = [&](const std::string &what) {
		const auto text = errors();
		std::size_t n = 0;
		for (auto at = text.find(what); at != std::string::npos;
		     at = text.find(what, at + 1))
			++n;
		return n;
	};
	auto wait_for = [&](const std::string &what, std::size_t n, std::chrono::seconds limit) {
		const auto give_up = std::chrono::steady_clock::now() + limit;
		while (count(what) < n && std::chrono::steady_clock::now() < give_up)
			std::this_thread::sleep_for(std::chrono::milliseconds(2));
		return count(what) >= n;
	};
	const auto keys = net.server.dir() / "authorized_keys";
	const auto keys_off = net.server.dir() / "authorized_keys.off";
	// Lost, every block changed, back, and rpmemd killed as soon as the catch-up begins; a
	// catch-up that finished first (a loaded machine may run it before this sees it begin)
	// is tried again with the next fill.
	auto say = [&](const std::string &command) {
		const std::string l = command + "\n";
		return w.write(
		    std::span(reinterpret_cast<const std::uint8_t *>(l.data()), l.size()));
	};
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
	// capi_bulk's lap line: the records thread's persists and the longest one since the last.
	struct lap_figures {
		unsigned long long records = 0, longest_us = 0;
	};
	auto read_lap = [&] {
		lap_figures f;
		line = w.read_line(std::chrono::seconds(120));
		REQUIRE(line);
		REQUIRE(std::sscanf(line->c_str(), "records %llu longest_us %llu", &f.records,
		                    &f.longest_us) == 2);
		return f;
	};
	unsigned long long earlier_longest_us = 0; // before the logins were last allowed again
	bool interrupted = false;
	for (unsigned attempt = 1; attempt <= 4 && !interrupted; ++attempt) {
		fs::rename(keys, keys_off);
		REQUIRE(run_kill_rpmemd(net.node.dir().string()));
		REQUIRE(wait_until(lost));
		REQUIRE(say(fmt::format("fill {}", attempt)));
		line = w.read_line(std::chrono::seconds(120));
		REQUIRE(line == std::string("filled"));
		REQUIRE(say("lap"));
		earlier_longest_us = std::max(earlier_longest_us, read_lap().longest_us);
		fs::rename(keys_off, keys);
		REQUIRE(wait_for("replica catching_up", attempt, std::chrono::seconds(60)));
		REQUIRE(run_kill_rpmemd(net.node.dir().string()));
		// Either the catch-up failed (the case this test is for), or it had finished and
		// the kill is an ordinary reconnect, waited for before the next attempt.
		REQUIRE(wait_until([&] {
			const auto since = after("replica catching_up");
			return has(since, "catching up failed") ||
			       has(since, "replica in_sync (reconnected");
		}));
		interrupted = has(after("replica catching_up"), "catching up failed");
	}
	INFO("capi_bulk's stderr:\n" << errors());
	REQUIRE(interrupted);
	// Caught up after the kill, by itself.
	REQUIRE(wait_until(
	    [&] { return has(after("catching up failed"), "replica in_sync (caught up"); }));
	{
		// The records thread kept persisting while the catch-up moved the blocks before
		// its own: those persists went to the replica (its number in the line is not 0).
		const auto caught = after("replica in_sync (caught up");
		const std::regex direct("; ([0-9]+) bytes of persists went to it directly");
		std::smatch m;
		INFO("the caught-up line: " << caught.substr(0, caught.find('\n')));
		REQUIRE(std::regex_search(caught, m, direct));
		CHECK(std::stoull(m[1].str()) > 0);
	}
	// What the application lived through: every persist returned success (capi_bulk stops
	// at the first error), and none waited longer than librpmem(7)'s bounds. From the
	// logins allowed again, through the killed catch-up, to in sync: a persist sent to the
	// replica that fails is recorded and returns, so RPMEM_TIMEOUT (2000 ms here); over the
	// whole run (a loss waits out RPMEM_RECONNECT_TIMEOUT, 1000 ms, first), their sum.
	REQUIRE(say("lap"));
	const auto catching_up = read_lap();
	INFO("the records thread from the logins allowed again to in sync: "
	     << catching_up.records << " persists, the longest " << catching_up.longest_us
	     << " us; before that, the longest " << earlier_longest_us << " us");
	CHECK(catching_up.records > 0);
	CHECK(catching_up.longest_us <= 2'000'000);
	CHECK(earlier_longest_us <= 3'000'000);
	REQUIRE(say("close")); // the thread stops, and its last lap comes first
	CHECK(read_lap().longest_us <= 3'000'000);
	line = w.read_line(std::chrono::seconds(120));
	REQUIRE(line == std::string("closed 0 0"));
	line = w.read_line(std::chrono::seconds(120));
	REQUIRE(line == std::string("dumped"));
	REQUIRE(w.wait(std::chrono::seconds(30)) == 0);
	// The replica holds every byte of the master (the header apart: the mark was cleared).
	const auto master = slurp(dump), replica = slurp(net.node.part("bulk.set"));
	REQUIRE(master.size() == size);
	REQUIRE(replica.size() >= size);
	std::size_t first = size;
	for (std::size_t i = 4096; i < size && first == size; ++i)
		if (master[i] != replica[i])
			first = i;
	INFO("the first byte differing at " << first);
	CHECK(first == size);
}
