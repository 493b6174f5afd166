// SPDX-License-Identifier: BSD-3-Clause
// The tasks a fault starts on a writer (chaos_run.hpp): its kill and restart with the
// operator's move while it is down, rpmem sync and check while it runs, and the promotion of a
// replica after its master is declared lost.
#include "chaos/chaos_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <sstream>
#include <sys/wait.h>
#include <thread>

namespace rpmem::chaos
{

using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------------
// writer tasks

run_result chaos_run::run_tool(const writer &w, const std::vector<std::string> &argv, bool client,
                               clock_type::time_point until, const std::string &log_name,
                               const std::vector<std::string> &env_extra)
{
	// The writer's settings, not its metrics file: that one is the writer's own word, which
	// the checks read.
	auto env = w.environment();
	std::erase_if(env, [](const std::string &kv) {
		return kv.rfind("RPMEM_STATS_FILE=", 0) == 0 ||
		       kv.rfind("RPMEM_STATS_INTERVAL=", 0) == 0;
	});
	env.insert(env.end(), env_extra.begin(), env_extra.end());
	const auto log = run_dir_ / (log_name + ".log");
	for (;;) {
		++tool_runs_;
		auto r = run_bounded(client ? cl_->in_client(argv) : argv, env, log, 300s);
		const bool in_use = r.output.find("has it open") != std::string::npos ||
		                    r.output.find("in use") != std::string::npos ||
		                    r.output.find("locked") != std::string::npos;
		if (r.status == -1 || r.exited(0) || !in_use || clock_type::now() >= until)
			return r;
		std::this_thread::sleep_for(200ms);
	}
}

std::string first_lines(const std::string &s, int n)
{
	std::istringstream in(s);
	std::string out;
	for (std::string line; n > 0 && std::getline(in, line); --n)
		out += "      " + line + "\n";
	return out;
}

void chaos_run::probe_refusals(writer &w, std::uint64_t param, clock_type::time_point until)
{
	// Stock libpmemobj (through our librpmem, RPMEM_ON_OUTAGE=fail) or replicated_pool::open
	// under failure_policy::fail must refuse a pool set whose replica is marked.
	const auto bin = std::string(RPMEM_BINARY_DIR "/bin/");
	const bool obj = w.config().kind == writer_kind::pmemobj;
	++probes_;
	auto r = obj ? run_tool(w,
	                        {bin + "rpmem_pmemobj_log", "check", w.master_set().string(),
	                         w.history_file().string()},
	                        true, until, w.name() + "-probe-open", {"RPMEM_ON_OUTAGE=fail"})
	             : run_tool(w, {bin + "chaos_rp_writer", "probe", w.master_set().string()},
	                        true, until, w.name() + "-probe-open");
	const std::string who = obj ? "stock libpmemobj (RPMEM_ON_OUTAGE=fail)"
	                            : "replicated_pool::open (failure_policy::fail)";
	if (r.status == -1 || (r.status >= 0 && WIFSIGNALED(r.status)))
		fail(fmt::format("{} on {} with a marked replica: {}:\n{}", who, w.name(),
		                 r.describe(), first_lines(r.output, 12)));
	else if (r.exited(0))
		fail(fmt::format("{} opened {} while its replicas are marked possibly behind "
		                 "(its writer was killed):\n{}",
		                 who, w.master_set().string(), first_lines(r.output, 12)));
	else if (r.output.find("behind") != std::string::npos)
		outcome(fault::writer_kill, "open refused (marked)");
	else
		outcome(fault::writer_kill, "open probe inconclusive");
	// rpmem promote without --force, on one replica's host.
	const int rep = static_cast<int>(param % w.replicas());
	auto p = run_tool(
	    w, {RPMEM_BINARY_DIR "/bin/rpmem", "promote", "--dry-run", w.replica_set(rep).string()},
	    false, until, w.name() + "-probe-promote");
	if (p.exited(0) && w.unmarked_by_gap(static_cast<std::size_t>(rep)))
		outcome(fault::writer_kill, "promote accepted (unmarked: the documented gap)");
	else if (p.exited(0))
		fail(fmt::format("rpmem promote --dry-run accepted replica {} of {} ({}) marked "
		                 "possibly behind, without --force:\n{}",
		                 rep, w.name(), w.replica_set(rep).string(),
		                 first_lines(p.output, 12)));
	else if (p.status == -1 || WIFSIGNALED(p.status))
		fail(fmt::format("rpmem promote --dry-run on {}: {}:\n{}",
		                 w.replica_set(rep).string(), p.describe(),
		                 first_lines(p.output, 12)));
	else if (p.output.find("--force") != std::string::npos)
		outcome(fault::writer_kill, "promote refused (marked)");
	else
		outcome(fault::writer_kill, "promote probe inconclusive");
	note(fmt::format("writer {}: refusals probed: {}: {}; promote: {}", w.name(), who,
	                 r.describe(), p.describe()));
}

void chaos_run::operator_sync(writer &w, clock_type::time_point until)
{
	auto r = run_tool(w, {RPMEM_BINARY_DIR "/bin/rpmem", "sync", w.master_set().string()}, true,
	                  until, w.name() + "-operator-sync");
	note(fmt::format("writer {} is down: rpmem sync: {} in {:.1f} s", w.name(), r.describe(),
	                 r.seconds));
	if (r.status == -1 || WIFSIGNALED(r.status)) {
		fail(fmt::format("rpmem sync {}: {}:\n{}", w.master_set().string(), r.describe(),
		                 first_lines(r.output, 12)));
		return;
	}
	if (!r.exited(0)) {
		outcome(fault::writer_kill, "sync failed");
		bool faulty = false;
		for (int h : w.config().hosts)
			faulty = faulty || cl_->at(h).under_fault();
		if (!faulty)
			note(fmt::format(
			    "writer {}: rpmem sync failed with no fault on its hosts:\n{}",
			    w.name(), first_lines(r.output, 6)));
		return;
	}
	outcome(fault::writer_kill, "synced");
	// Synced: every replica unmarked and holding everything acknowledged.
	const auto acked = w.acked();
	for (std::size_t i = 0; i < w.replicas(); ++i) {
		const auto m = w.marked(i);
		if (!m || *m) {
			fail(fmt::format("after rpmem sync {} succeeded, replica {} is {}",
			                 w.master_set().string(), i,
			                 m ? "still marked possibly behind" : "without a header"));
			return;
		}
		if (auto v = w.check_replica(i, acked, false, std::uint64_t(1) << 40); !v.empty()) {
			fail("after rpmem sync succeeded: " + v);
			return;
		}
	}
	auto c = run_tool(w, {RPMEM_BINARY_DIR "/bin/rpmem", "check", w.master_set().string()},
	                  true, until, w.name() + "-operator-check");
	if (c.exited(1) || c.status == -1 || WIFSIGNALED(c.status))
		fail(fmt::format("rpmem check {} right after a successful sync: {}:\n{}",
		                 w.master_set().string(), c.describe(), first_lines(c.output, 12)));
}

void chaos_run::operator_check(writer &w, clock_type::time_point until)
{
	auto c = run_tool(w, {RPMEM_BINARY_DIR "/bin/rpmem", "check", w.master_set().string()},
	                  true, until, w.name() + "-operator-check");
	note(fmt::format("writer {} is down: rpmem check: {}", w.name(), c.describe()));
	if (c.status == -1 || WIFSIGNALED(c.status)) {
		fail(fmt::format("rpmem check {}: {}:\n{}", w.master_set().string(), c.describe(),
		                 first_lines(c.output, 12)));
		return;
	}
	bool any_marked = false;
	for (std::size_t i = 0; i < w.replicas(); ++i)
		any_marked = any_marked || w.marked(i).value_or(false);
	if (c.exited(0) && any_marked)
		fail(fmt::format("rpmem check {} says the set is consistent while a replica is "
		                 "marked possibly behind:\n{}",
		                 w.master_set().string(), first_lines(c.output, 12)));
	outcome(fault::writer_kill, fmt::format("check {}", c.describe()));
}

void chaos_run::task_kill(std::size_t wi, const event &e)
{
	auto &w = *ws_[wi];
	std::unique_lock l(w.mu);
	if (w.current() != writer::phase::running) {
		outcome(fault::writer_kill, "not running");
		return;
	}
	const auto acked = w.acked();
	const pid_t pid = w.pid();
	w.kill();
	note(fmt::format("writer {}: pid {} killed (acknowledged {})", w.name(), pid,
	                 fmt::join(acked, " ")));
	const auto until = clock_type::now() + std::chrono::milliseconds(e.duration_ms);
	if (w.marks_replicas())
		for (std::size_t r = 0; r < w.replicas(); ++r) {
			const auto m = w.marked(r);
			if (m && !*m && w.unmarked_by_gap(r)) {
				note(fmt::format("writer {}: replica {} unmarked at the kill: "
				                 "unreachable at open and not caught up since (the "
				                 "documented gap)",
				                 w.name(), r));
				continue;
			}
			if (!m || !*m) {
				fail(fmt::format(
				    "writer {} was killed and its replica {} ({}) is {}: a "
				    "replica it may have left behind would be taken as current",
				    w.name(), r, w.replica_part(static_cast<int>(r)).string(),
				    m ? "not marked possibly behind" : "without a header"));
				return;
			}
		}
	// The operator's move while it is down (seeded): nothing, the refusal probes, a sync,
	// a check.
	if (w.has_poolset()) {
		switch (e.param % 4) {
		case 1:
			probe_refusals(w, e.param / 4, until);
			break;
		case 2:
			operator_sync(w, until);
			break;
		case 3:
			operator_check(w, until);
			break;
		default:
			break;
		}
	}
	std::this_thread::sleep_until(until);
	if (failed())
		return;
	if (start_until_ready(w, false, 120s)) {
		note(fmt::format("writer {}: opened again, recovered, running (pid {})", w.name(),
		                 w.pid()));
		outcome(fault::writer_kill, "restarted");
	}
}

void chaos_run::task_tool(std::size_t wi, fault kind)
{
	auto &w = *ws_[wi];
	// The writer as it is, read under its mutex (a task killing, restarting or regenerating
	// it holds the mutex meanwhile; the tool itself runs without it).
	struct seen {
		writer::phase phase;
		int generation;
		pid_t pid;
		bool operator==(const seen &) const = default;
	};
	auto look = [&w] {
		std::lock_guard l(w.mu);
		return seen{w.current(), w.generation(), w.pid()};
	};
	const auto before = look();
	const bool sync = kind == fault::tool_sync;
	auto r = run_bounded(cl_->in_client({RPMEM_BINARY_DIR "/bin/rpmem", sync ? "sync" : "check",
	                                     w.master_set().string()}),
	                     w.environment(), run_dir_ / (w.name() + "-tool.log"), 300s);
	++tool_runs_;
	const auto after = look();
	const bool running_throughout = before.phase == writer::phase::running && before == after;
	note(fmt::format("writer {}: rpmem {}: {} in {:.1f} s{}", w.name(), sync ? "sync" : "check",
	                 r.describe(), r.seconds,
	                 running_throughout ? " (the writer ran throughout)" : ""));
	if (r.status == -1 || WIFSIGNALED(r.status)) {
		fail(fmt::format("rpmem {} {}: {}:\n{}", sync ? "sync" : "check",
		                 w.master_set().string(), r.describe(), first_lines(r.output, 12)));
		return;
	}
	if (running_throughout && r.exited(0))
		fail(fmt::format("rpmem {} {} succeeded while the writer had the pool open:\n{}",
		                 sync ? "sync" : "check", w.master_set().string(),
		                 first_lines(r.output, 12)));
	outcome(kind, fmt::format("{}{}", r.describe(), running_throughout ? " (in use)" : ""));
}

void chaos_run::task_promote(std::size_t wi, int host)
{
	auto &w = *ws_[wi];
	std::unique_lock l(w.mu);
	const int rep =
	    static_cast<int>(std::find(w.config().hosts.begin(), w.config().hosts.end(), host) -
	                     w.config().hosts.begin());
	const auto covered = cs_[wi]->covered(static_cast<std::size_t>(rep));
	const auto acked = w.acked();
	if (w.current() == writer::phase::running || w.current() == writer::phase::starting)
		w.kill();
	std::error_code ec;
	fs::remove(w.master_part(), ec);
	note(fmt::format("writer {}: killed, master {} removed (declared lost; acknowledged {}; "
	                 "replica {} covered {})",
	                 w.name(), w.master_part().string(), fmt::join(acked, " "), rep,
	                 fmt::join(covered, " ")));
	const auto until = clock_type::now() + 30s;
	const auto set = w.replica_set(rep).string();
	const auto out = (cl_->at(host).fs / (w.name() + "-promoted.set")).string();
	const std::string tool = RPMEM_BINARY_DIR "/bin/rpmem";
	auto p = run_tool(w, {tool, "promote", set, "--output", out}, false, until,
	                  w.name() + "-promote");
	const bool marked = w.marked(static_cast<std::size_t>(rep)).value_or(false);
	// The documented gap (replicated_pool.hpp, rpmem(1)): a replica unreachable when the
	// writer opened the set carries no mark of its own until the healer reaches it; only the
	// master's record, lost with the master here, said it is behind. Promoting it is what the
	// log line at open warns against; what it holds is still checked below.
	const bool gap = !marked && w.unmarked_by_gap(static_cast<std::size_t>(rep));
	if (p.exited(0) && gap) {
		note(fmt::format("writer {}: rpmem promote {} accepted replica {} without --force: "
		                 "unreachable when the writer opened the set, it was never marked "
		                 "(the documented gap)",
		                 w.name(), set, rep));
		outcome(fault::promote, "promoted unmarked (the documented gap)");
	} else if (p.exited(0)) {
		fail(fmt::format(
		    "rpmem promote {} (no --force) promoted a replica whose writer was "
		    "killed ({}):\n{}",
		    set, marked ? "it is marked possibly behind" : "it is not even marked",
		    first_lines(p.output, 12)));
		return;
	}
	if (p.status == -1 || WIFSIGNALED(p.status)) {
		fail(fmt::format("rpmem promote {}: {}:\n{}", set, p.describe(),
		                 first_lines(p.output, 12)));
		return;
	}
	const bool refused_marked = p.output.find("--force") != std::string::npos;
	if (!p.exited(0))
		outcome(fault::promote,
		        refused_marked ? "refused without --force" : "refused (other)");
	auto f = p.exited(0) ? p
	                     : run_tool(w, {tool, "promote", "--force", set, "--output", out},
	                                false, until, w.name() + "-promote-force");
	note(fmt::format("writer {}: rpmem promote {}: {} without --force{}, {} with it", w.name(),
	                 set, p.describe(), refused_marked ? " (marked: refused)" : "",
	                 f.describe()));
	if (f.exited(0)) {
		if (!p.exited(0))
			outcome(fault::promote, "promoted with --force");
		auto c = run_bounded({RPMEM_BINARY_DIR "/bin/rpmem_pmemobj_log", "check-consistent",
		                      out, w.history_file().string()},
		                     w.environment(), run_dir_ / (w.name() + "-promoted-check.log"),
		                     300s);
		const auto holds_at = c.output.find("holds");
		std::vector<std::uint64_t> holds;
		if (holds_at != std::string::npos) {
			std::istringstream in(c.output.substr(holds_at + 5));
			for (std::uint64_t v; in >> v;)
				holds.push_back(v);
		}
		bool complete = true;
		for (std::size_t t = 0; t < acked.size() && t < covered.size(); ++t)
			complete = complete && covered[t] >= acked[t];
		note(fmt::format(
		    "writer {}: the promoted replica opened by stock libpmemobj: {}: {}", w.name(),
		    c.describe(), first_lines(c.output, 2)));
		if (c.exited(0) && holds.size() >= covered.size()) {
			for (std::size_t t = 0; t < covered.size(); ++t)
				if (holds[t] < covered[t]) {
					fail(fmt::format(
					    "the promoted replica {} of {} holds {} records of "
					    "thread {}, but {} were acknowledged while it was in "
					    "sync:\n{}",
					    rep, w.name(), holds[t], t, covered[t],
					    first_lines(c.output, 6)));
					return;
				}
			outcome(fault::promote, "promoted replica consistent");
		} else if (complete) {
			fail(fmt::format("the promoted replica {} of {} was in sync with every "
			                 "acknowledged record, yet stock libpmemobj says: {}:\n{}",
			                 rep, w.name(), c.describe(), first_lines(c.output, 12)));
			return;
		} else {
			outcome(fault::promote, "promoted replica behind: not consistent");
		}
	} else if (f.output.find("was being caught up from its master") != std::string::npos) {
		// An asynchronous writer killed mid-catch-up: no consistent pool, and promote
		// says so even with --force (librpmem(7), "Asynchronous replication").
		outcome(fault::promote, "refused even with --force: being caught up");
	} else {
		outcome(fault::promote, "--force failed: " + f.describe());
	}
	if (failed())
		return;
	if (start_until_ready(w, true, 120s))
		note(fmt::format("writer {}: a new generation ({}) created and running", w.name(),
		                 w.generation()));
}

} // namespace rpmem::chaos
