// SPDX-License-Identifier: BSD-3-Clause
// One chaos run as rpmem-chaos drives it: its state, its output, and the operator's tasks on
// the writers. driver.cpp has the run itself (setup, the faults, the loop, the final checks,
// teardown, the reports); tasks.cpp the tasks a fault starts on a writer's own thread (its
// kill and restart, the refusal probes, rpmem sync/check/promote as an operator runs them).
#pragma once

#include "chaos/checker.hpp"
#include "chaos/cluster.hpp"
#include "chaos/options.hpp"
#include "chaos/proc.hpp"
#include "chaos/schedule.hpp"
#include "chaos/writer.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace rpmem::chaos
{

using clock_type = std::chrono::steady_clock;

struct kind_stats {
	int scheduled = 0, applied = 0;
	std::map<std::string, int> outcomes; // what the applied ones met
};

class chaos_run
{
public:
	explicit chaos_run(options o) : o_(std::move(o)) {}
	int main();

private:
	// --- output
	double elapsed() const
	{
		return std::chrono::duration<double>(clock_type::now() - start_).count();
	}
	void note(const std::string &line);
	void fail(const std::string &why);
	bool failed()
	{
		std::lock_guard g(fail_mu_);
		return failure_.has_value();
	}
	void outcome(fault f, const std::string &what);
	void report_failure();
	void report_summary();

	// --- the run
	void setup();
	void start_all();
	void loop();
	void finish();
	void teardown();
	void apply(const event &e);
	void end_fault(const event &e, pid_t pid);
	void check_round();
	std::uint64_t allowance_ns();
	void spawn_task(const std::string &what, std::function<void()> fn);
	void reap_tasks(bool all);

	// --- writer tasks (on their own threads, holding the writer's mutex)
	void task_kill(std::size_t w, const event &e);
	void task_tool(std::size_t w, fault kind);
	void task_promote(std::size_t w, int host);
	bool wait_ready(writer &w, std::chrono::seconds bound);
	/** Starts w (fresh: a new generation) until it is ready. An open or create may fail
	 *  while a host it needs is under a fault (librpmem(7): a first open waits for an
	 *  unreachable host up to the reconnect timeout, then fails): tried again every second,
	 *  for up to `patience`, as an operator would; then the run fails. */
	bool start_until_ready(writer &w, bool fresh, std::chrono::seconds patience);
	/** Runs argv (in the client namespace when `client`) until it is not refused for a pool
	 *  in use, up to `until`; the last result. */
	run_result run_tool(const writer &w, const std::vector<std::string> &argv, bool client,
	                    clock_type::time_point until, const std::string &log_name,
	                    const std::vector<std::string> &env_extra = {});
	void probe_refusals(writer &w, std::uint64_t param, clock_type::time_point until);
	void operator_sync(writer &w, clock_type::time_point until);
	void operator_check(writer &w, clock_type::time_point until);

	options o_;
	run_settings s_;
	std::vector<writer_config> wcfg_;
	std::vector<event> schedule_;
	fs::path run_dir_, shm_dir_;
	std::unique_ptr<cluster> cl_;
	std::vector<std::unique_ptr<writer>> ws_;
	std::vector<std::unique_ptr<checker>> cs_;
	std::vector<std::optional<holdings>> baseline_; // per writer: after it first caught up
	std::vector<pid_t> baseline_pid_;
	clock_type::time_point start_ = clock_type::now();

	std::mutex log_mu_;
	std::vector<std::string> log_;
	std::mutex fail_mu_;
	std::optional<std::string> failure_;
	double failure_at_ = 0;
	std::array<kind_stats, fault_kinds> stats_{};

	struct task {
		std::string what;
		std::future<void> done;
	};
	std::vector<task> tasks_;

	struct timed {
		double at;
		std::uint64_t seq;
		std::function<void()> fn;
		bool operator>(const timed &o) const
		{
			return at != o.at ? at > o.at : seq > o.seq;
		}
	};
	std::priority_queue<timed, std::vector<timed>, std::greater<>> ends_;
	std::uint64_t seq_ = 0;
	std::deque<std::pair<double, double>> lags_; // (when, how late the loop woke), seconds
	double faults_start_ = 0;
	holdings self_before_;
	std::atomic<std::uint64_t> tool_runs_ = 0, probes_ = 0; // counted by task threads
	std::string notes_;             // what the final checks noted without failing
	std::vector<double> slow_last_; // per host: when its link was last seen throttled
};

/** The first n lines of s, indented for a failure report. */
std::string first_lines(const std::string &s, int n = 4);

} // namespace rpmem::chaos
