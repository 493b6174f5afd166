// SPDX-License-Identifier: BSD-3-Clause
// rpmem top against real pools: stock libpmemobj (tests/support/pmemobj_log.c) writes a pool
// with a remote replica through our librpmem.so.1, the private sshd and the real rpmemd, and
// reports it in a metrics file. The view runs in a detached tmux session (send-keys,
// capture-pane) while the replica is lost (rpmemd killed, logins refused) and comes back and
// catches up: the screen must show each state as it happens. Without a terminal, it prints
// snapshots, as top -b does. Every wait polls the screen against a generous bound and fails
// with the last screen printed: no wall-clock limit is asserted.
#include "pmemobj_log_setup.hpp"

using namespace rpmem::test;

namespace
{

const std::string tool = RPMEM_BINARY_DIR "/bin/rpmem";

/** A writer of a pool with one remote replica (stock libpmemobj, pmemobj_log) reporting to a
 *  Prometheus metrics file five times a second. A lost replica does not stop it
 *  (RPMEM_ON_OUTAGE=continue, the default, after RPMEM_RECONNECT_TIMEOUT: 1 s). */
struct writer_setup {
	sshd server;
	replica node{server};
	log_setup log{server, node, {}, "metrics.prom"};
	std::unique_ptr<child> writer;

	/** Starts the writer and waits for its first metrics sample: a view's rate needs two,
	 *  so one begun before the file exists shows none in its second snapshot. */
	void start()
	{
		writer = log.start({"RPMEM_RECONNECT_TIMEOUT=1000", "RPMEM_STATS_INTERVAL=200"});
		const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
		while (!fs::exists(log.metrics_file()) &&
		       std::chrono::steady_clock::now() < give_up)
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		REQUIRE(fs::exists(log.metrics_file()));
	}
	/** The replica goes away and stays away: logins refused, its rpmemd killed. */
	void lose_replica()
	{
		fs::rename(server.dir() / "authorized_keys", server.dir() / "authorized_keys.off");
		REQUIRE(run_kill_rpmemd(node.dir().string()));
	}
	void restore_replica()
	{
		fs::rename(server.dir() / "authorized_keys.off", server.dir() / "authorized_keys");
	}
	std::string target() const { return server.target().str(); }
	/** How the view names the pool in its row: target, then descriptor. */
	std::string row_name() const { return target() + " log.set "; }
	fs::path sessions_dir() const { return node.dir() / "sessions"; }
};

/** The line of `screen` that is the pool's row (not its state changes, not rpmemd's). */
std::string row_of(const std::string &screen, const std::string &name)
{
	std::istringstream in(screen);
	for (std::string line; std::getline(in, line);)
		if (has(line, name))
			return line;
	return {};
}

/** A row's columns: PID, target, descriptor, state, mode, persists/s, ... */
std::vector<std::string> fields(const std::string &row)
{
	std::istringstream in(row);
	std::vector<std::string> out;
	for (std::string f; in >> f;)
		out.push_back(f);
	return out;
}

/** Whether the row shows a persist rate (two writes of the file were read). */
bool has_rate(const std::string &row)
{
	const auto f = fields(row);
	return f.size() > 5 && f[5] != "-";
}

/** `rpmem top` in a detached tmux session of a private tmux server. */
class tmux_view
{
public:
	tmux_view(const fs::path &dir, const std::string &top_args) : socket_(dir / "tmux.sock")
	{
		exit_file_ = dir / "top.exit";
		const auto command =
		    fmt::format("{} top {} 2>{}; echo \"rpmem top exited with $?\" >{}", tool,
		                top_args, (dir / "top.err").string(), exit_file_.string());
		auto r = tmux(fmt::format("new-session -d -s top -x 200 -y 60 '{}'", command));
		INFO("tmux new-session printed:\n" << r.output);
		REQUIRE(r.status == 0);
	}
	~tmux_view() { tmux("kill-server"); }

	process_result tmux(const std::string &args) const
	{
		return run(fmt::format("tmux -S {} -f /dev/null {}", socket_.string(), args));
	}
	std::string screen() const { return tmux("capture-pane -p -t top").output; }
	void keys(const std::string &keys) const
	{
		auto r = tmux("send-keys -t top " + keys);
		INFO("tmux send-keys printed:\n" << r.output);
		REQUIRE(r.status == 0);
	}
	/** Polls the screen until `ready` holds for it; the bound is generous (a stall, not a
	 *  measurement), and a miss fails with the last screen and `context`. */
	std::string wait_for(const std::string &what,
	                     const std::function<bool(const std::string &)> &ready,
	                     const std::function<std::string()> &context)
	{
		const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(180);
		std::string s;
		while (!ready(s = screen()) && std::chrono::steady_clock::now() < give_up &&
		       !fs::exists(exit_file_))
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
		INFO("waiting for " << what << "; the last screen:\n"
		                    << s << "\n"
		                    << slurp(exit_file_) << context());
		REQUIRE(ready(s));
		return s;
	}
	/** After q: the view ends by itself, with status 0, and leaves nothing on stderr. */
	void wait_exit(const fs::path &dir)
	{
		for (int i = 0; i < 1800 && !fs::exists(exit_file_); ++i)
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
		INFO("rpmem top's stderr: " << slurp(dir / "top.err") << "\nthe last screen:\n"
		                            << screen());
		CHECK(slurp(exit_file_) == "rpmem top exited with 0\n");
		CHECK(slurp(dir / "top.err").empty());
	}

private:
	fs::path socket_;
	fs::path exit_file_;
};

} // namespace

TEST_CASE("rpmem top shows a replica lost and caught up as it happens, in a terminal (tmux)",
          "[tool][top]")
{
	writer_setup w;
	w.start();
	tmux_view view(w.log.dir(), fmt::format("{} --dir {} -d 0.2", w.log.metrics_file().string(),
	                                        w.sessions_dir().string()));
	const auto context = [&] { return "\nthe writer's stderr:\n" + w.log.errors(); };
	const auto row = [&](const std::string &s) { return row_of(s, w.row_name()); };

	// In sync, with a rate once two writes of the file were read.
	auto s = view.wait_for(
	    "the pool connected with a persist rate",
	    [&](const std::string &screen) {
		    const auto r = row(screen);
		    return has(r, " connected ") && has_rate(r);
	    },
	    context);
	CHECK(has(row(s), std::to_string(w.writer->pid())));
	CHECK(has(s, "rpmemd sessions here (" + w.sessions_dir().string() + "): 1 serving"));
	// RPMEM_ON_OUTAGE=continue marks the replica from open: rpmemd's side says so.
	CHECK(has(s, ", marked possibly behind"));

	// Keys: sort, details of the selected pool and back.
	view.keys("s");
	view.wait_for(
	    "sort: pool", [](const std::string &screen) { return has(screen, "sort: pool"); },
	    context);
	view.keys("Enter");
	s = view.wait_for(
	    "the details of the pool",
	    [&](const std::string &screen) {
		    return has(screen, "details: " + w.target() + " log.set");
	    },
	    context);
	CHECK(has(s, "metrics file " + w.log.metrics_file().string()));
	CHECK(has(s, "persist method gpspm, mode sync"));
	view.keys("Escape");
	view.wait_for(
	    "the details closed",
	    [](const std::string &screen) { return !has(screen, "details:"); }, context);

	// The replica goes away: reconnecting, then lost after RPMEM_RECONNECT_TIMEOUT; the
	// writer goes on.
	w.lose_replica();
	const auto lost = view.wait_for(
	    "the replica lost",
	    [&](const std::string &screen) { return has(row(screen), " lost "); }, context);
	CHECK(has(lost, "lost: the writer goes on without it"));
	CHECK(has(lost, "gone (killed?)")); // the killed rpmemd's record, on the replica side
	// Reconnecting lasts RPMEM_RECONNECT_TIMEOUT (1 s): top shows it unless none of its
	// refreshes fell inside that second (a loaded machine, a sanitizer's build), and then the
	// change it did see.
	const bool saw_reconnecting = has(lost, "log.set: connected -> reconnecting");
	if (!saw_reconnecting)
		CHECK(has(lost, "log.set: connected -> lost"));

	// Back: it catches up while the writer writes, and is in sync again.
	w.restore_replica();
	const auto back = view.wait_for(
	    "the replica caught up",
	    [&](const std::string &screen) {
		    return has(row(screen), " connected ") && has(screen, "-> connected");
	    },
	    context);
	const auto changes =
	    saw_reconnecting
	        ? std::vector<std::string>{"log.set: connected -> reconnecting",
	                                   "log.set: reconnecting -> lost", " -> connected"}
	        : std::vector<std::string>{"log.set: connected -> lost", " -> connected"};
	std::size_t last = 0;
	for (const auto &c : changes) {
		INFO("the screen:\n" << back);
		const auto at = back.find(c, last);
		CHECK(at != std::string::npos);
		last = at == std::string::npos ? last : at;
	}
	CHECK(!has(back, "lost: the writer goes on without it"));
	// A catch-up short enough to fall between two refreshes is not seen; one that is seen is
	// named as such.
	if (has(back, ": lost -> catching_up"))
		CHECK(has(back, ": catching_up -> connected"));

	view.keys("q");
	view.wait_exit(w.log.dir());
	w.log.finish(*w.writer);
}

TEST_CASE("rpmem top without a terminal prints snapshots (-n, -d) and finds the writers' "
          "metrics files in /proc",
          "[tool][top]")
{
	writer_setup w;
	w.start();
	// Named: two snapshots half a second apart; the second has a rate (the file is written
	// every 200 ms).
	const auto named =
	    run(fmt::format("{} top {} --dir {} -n 2 -d 0.5", tool, w.log.metrics_file().string(),
	                    w.sessions_dir().string()));
	INFO("rpmem top -n 2 printed:\n" << named.output);
	REQUIRE(named.status == 0);
	CHECK(!has(named.output, "\x1b[")); // plain text
	const auto second = named.output.find("\nrpmem top ");
	REQUIRE(second != std::string::npos);
	CHECK(named.output.find("\nrpmem top ", second + 1) == std::string::npos);
	const auto later = row_of(named.output.substr(second), w.row_name());
	CHECK(has(later, " connected "));
	CHECK(has_rate(later));
	CHECK(has(later, std::to_string(w.writer->pid())));

	// Not named: found through the writer's environment (/proc/PID/environ); batch mode by
	// default when stdout is not a terminal.
	const auto found = run(fmt::format("{} top --dir {}", tool, w.sessions_dir().string()));
	INFO("rpmem top printed:\n" << found.output);
	REQUIRE(found.status == 0);
	CHECK(has(row_of(found.output, w.row_name()), std::to_string(w.writer->pid())));
	CHECK(found.output.find("\nrpmem top ") == std::string::npos); // one snapshot

	// A directory: its *.prom and *.json; files that are not metrics are said so.
	std::ofstream(w.log.dir() / "other.prom") << "node_thing 1\n";
	std::ofstream(w.log.dir() / "broken.json") << "{\"time_unix_ns\": 1, \"pools\": [";
	const auto in_dir = run(fmt::format("{} top -b {} /nonexistent/x.prom --dir {}", tool,
	                                    w.log.dir().string(), w.sessions_dir().string()));
	INFO("rpmem top printed:\n" << in_dir.output);
	REQUIRE(in_dir.status == 0);
	CHECK(has(row_of(in_dir.output, w.row_name()), " connected "));
	CHECK(has(in_dir.output, "metrics file /nonexistent/x.prom: cannot read it: No such file"));
	CHECK(has(in_dir.output, "broken.json: JSON: a value expected at offset"));
	CHECK(!has(in_dir.output, "other.prom")); // another exporter's file, not ours to judge

	const auto bad = run(tool + " top -d 0");
	CHECK(bad.status == 2);
	CHECK(has(bad.output, "-d 0: give at least 0.1 seconds between refreshes"));
	const auto bad_sort = run(tool + " top --sort size");
	CHECK(bad_sort.status == 2);
	CHECK(has(bad_sort.output, "sort by state, pool, rate, behind or errors"));
	w.log.finish(*w.writer);
}
