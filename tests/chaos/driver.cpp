// SPDX-License-Identifier: BSD-3-Clause
// rpmem-chaos: a seeded schedule of faults against replica hosts while writers of every kind
// record what was acknowledged, checked continuously and at the end against what the
// documentation promises (docs/chaos.md; scripts/chaos.sh runs it).
//
//   rpmem-chaos [--seed S] [--minutes M | --seconds N] [--hosts 2|3] [--kinds K,K...]
//               [--writers W,W...] [--mean-gap MS] [--print-schedule] [--keep]
//
// One seed drives every random choice (tests/chaos/schedule.hpp). A failure prints the seed,
// the faults up to it and the history around it, and the run exits 1; setup trouble exits 2.
#include "chaos/chaos_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>
#include <unistd.h>
#include <utility>

namespace rpmem::chaos
{

using namespace std::chrono_literals;

namespace
{

/** Leftovers of the run in the machine: namespaces, mounts, routes. */
std::string machine_leftovers(const std::string &pid_tag, const std::string &run_dir)
{
	std::string out;
	auto text = [](const std::string &cmd) {
		std::string s;
		if (FILE *p = popen(cmd.c_str(), "r")) {
			char buf[4096];
			std::size_t n;
			while ((n = fread(buf, 1, sizeof buf, p)) > 0)
				s.append(buf, n);
			pclose(p);
		}
		return s;
	};
	std::istringstream ns(text("ip netns list 2>/dev/null"));
	for (std::string line; std::getline(ns, line);)
		if (line.find(pid_tag) != std::string::npos)
			out += "  namespace " + line + "\n";
	std::istringstream mounts(text("cat /proc/mounts"));
	for (std::string line; std::getline(mounts, line);)
		if (line.find(run_dir) != std::string::npos)
			out += "  mount " + line + "\n";
	return out;
}

} // namespace

void chaos_run::note(const std::string &line)
{
	const auto text = fmt::format("chaos: t={:8.3f} {}", elapsed(), line);
	std::lock_guard g(log_mu_);
	log_.push_back(text);
	std::printf("%s\n", text.c_str());
	std::fflush(stdout);
}

void chaos_run::fail(const std::string &why)
{
	std::lock_guard g(fail_mu_);
	if (failure_)
		return;
	failure_ = why;
	failure_at_ = elapsed();
}

void chaos_run::outcome(fault f, const std::string &what)
{
	std::lock_guard g(log_mu_);
	++stats_[static_cast<int>(f)].outcomes[what];
}

std::uint64_t chaos_run::allowance_ns()
{
	// 2 s for scheduling noise on a loaded 2-vCPU machine, plus the longest the driver
	// itself was kept from running in the last minute (its 20 ms sleeps woke late): a machine
	// that stalls the driver stalls the writers too.
	double worst = 0;
	for (const auto &[when, lag] : lags_)
		worst = std::max(worst, lag);
	return static_cast<std::uint64_t>((2.0 + worst) * 1e9);
}

void chaos_run::spawn_task(const std::string &what, std::function<void()> fn)
{
	tasks_.push_back({what, std::async(std::launch::async, [this, what, fn = std::move(fn)] {
		                  try {
			                  fn();
		                  } catch (const std::exception &e) {
			                  fail(what + ": " + e.what());
		                  }
	                  })});
}

void chaos_run::reap_tasks(bool all)
{
	for (auto it = tasks_.begin(); it != tasks_.end();) {
		if (all)
			it->done.wait();
		if (it->done.wait_for(0s) == std::future_status::ready) {
			it->done.get();
			it = tasks_.erase(it);
		} else {
			++it;
		}
	}
}

// ---------------------------------------------------------------------------------------------
// setup

void chaos_run::setup()
{
	std::string tmpl = "/tmp/rpmem-chaos-XXXXXX";
	if (!mkdtemp(tmpl.data()))
		throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
	run_dir_ = tmpl;
	std::string shm = "/dev/shm/rpmem-chaos-XXXXXX";
	if (!mkdtemp(shm.data()))
		throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
	shm_dir_ = shm;
	note(fmt::format("run directory {}, masters in {}", run_dir_.string(), shm_dir_.string()));
	cl_ = std::make_unique<cluster>(run_dir_, o_.hosts, 96);
	for (int h = 0; h < cl_->size(); ++h)
		note(fmt::format("host {}: namespace {}, {} (link {}), tmpfs {}", h, cl_->at(h).ns,
		                 cl_->at(h).target(), cl_->at(h).veth_client,
		                 cl_->at(h).fs.string()));
	for (const auto &c : wcfg_) {
		ws_.push_back(std::make_unique<writer>(c, *cl_, shm_dir_, s_));
		cs_.push_back(std::make_unique<checker>(*ws_.back(), s_));
		baseline_.emplace_back();
		baseline_pid_.push_back(-1);
	}
}

bool chaos_run::wait_ready(writer &w, std::chrono::seconds bound)
{
	const auto until = clock_type::now() + bound;
	while (clock_type::now() < until) {
		if (auto r = w.poll_start()) {
			if (r->empty())
				return true;
			fail(fmt::format("writer {} did not start: {}", w.name(), *r));
			return false;
		}
		std::this_thread::sleep_for(20ms);
	}
	fail(fmt::format("writer {} was not ready within {} s (a hang: it keeps running):\n{}",
	                 w.name(), bound.count(), tail(w.err_file(), 20)));
	return false;
}

bool chaos_run::start_until_ready(writer &w, bool fresh, std::chrono::seconds patience)
{
	const auto until = clock_type::now() + patience;
	for (;;) {
		w.start(fresh);
		std::optional<std::string> why;
		const auto hang = clock_type::now() + 300s;
		while (!(why = w.poll_start()) && clock_type::now() < hang)
			std::this_thread::sleep_for(20ms);
		if (!why) {
			fail(fmt::format("writer {} was not ready within 300 s (a hang: it keeps "
			                 "running):\n{}",
			                 w.name(), tail(w.err_file(), 20)));
			return false;
		}
		if (why->empty())
			return true;
		if (clock_type::now() >= until || failed()) {
			fail(fmt::format("writer {} did not start for {} s: {}", w.name(),
			                 patience.count(), *why));
			return false;
		}
		auto last = *why;
		while (!last.empty() && last.back() == '\n')
			last.pop_back();
		last = last.substr(last.rfind('\n') + 1);
		note(fmt::format("writer {} did not start, trying again in 1 s: {}", w.name(),
		                 last.substr(last.find_first_not_of(' '))));
		outcome(fault::writer_kill, "a start tried again");
		std::this_thread::sleep_for(1s);
	}
}

void chaos_run::start_all()
{
	for (auto &w : ws_) {
		std::lock_guard g(w->mu);
		w->start(true);
		note(fmt::format("writer {} ({}) starting: {}", w->name(), name(w->config().kind),
		                 w->command()));
	}
	for (auto &w : ws_) {
		std::lock_guard g(w->mu);
		if (!wait_ready(*w, 180s))
			return;
	}
	note("every writer is running");
}

// ---------------------------------------------------------------------------------------------
// faults

void chaos_run::apply(const event &e)
{
	const auto desc = describe(e, shapes(wcfg_));
	auto &st = stats_[static_cast<int>(e.what)];
	const double at = faults_start_ + double(e.at_ms) / 1000;
	const double end = at + double(e.duration_ms) / 1000;
	auto later = [&](std::function<void()> fn) { ends_.push({end, seq_++, std::move(fn)}); };
	switch (e.what) {
	case fault::rpmemd_kill:
	case fault::rpmemd_stop: {
		const auto pids = cl_->rpmemds(e.host);
		if (pids.empty()) {
			note(desc + ": no rpmemd runs there now");
			outcome(e.what, "no rpmemd");
			return;
		}
		const pid_t pid = pids[e.param % pids.size()];
		const bool kill = e.what == fault::rpmemd_kill;
		::kill(pid, kill ? SIGKILL : SIGSTOP);
		note(fmt::format("{}: pid {} of {}", desc, pid, pids.size()));
		if (!kill) {
			auto &h = cl_->at(e.host);
			h.stopped.push_back(pid);
			h.rpmemd_stopped = true;
			later([this, e, pid] { end_fault(e, pid); });
		}
		break;
	}
	case fault::link_down:
		cl_->set_link(e.host, false);
		note(desc);
		later([this, e] { end_fault(e, 0); });
		break;
	case fault::link_slow:
		cl_->set_slow(e.host, slow_rate_kbit(e.param));
		note(desc);
		later([this, e] { end_fault(e, 0); });
		break;
	case fault::sshd_stop:
		cl_->stop_sshd(e.host);
		note(desc);
		later([this, e] { end_fault(e, 0); });
		break;
	case fault::fs_full: {
		const auto took = cl_->fill(e.host);
		note(fmt::format("{}: {} MiB taken", desc, took >> 20));
		later([this, e] { end_fault(e, 0); });
		break;
	}
	case fault::writer_kill:
		note(desc);
		spawn_task(desc, [this, e] { task_kill(static_cast<std::size_t>(e.writer), e); });
		break;
	case fault::tool_sync:
	case fault::tool_check:
		note(desc);
		spawn_task(desc,
		           [this, e] { task_tool(static_cast<std::size_t>(e.writer), e.what); });
		break;
	case fault::promote:
		note(desc);
		spawn_task(desc,
		           [this, e] { task_promote(static_cast<std::size_t>(e.writer), e.host); });
		break;
	}
	++st.applied;
}

void chaos_run::end_fault(const event &e, pid_t pid)
{
	auto &h = cl_->at(e.host);
	switch (e.what) {
	case fault::rpmemd_stop:
		::kill(pid, SIGCONT);
		h.stopped.erase(std::remove(h.stopped.begin(), h.stopped.end(), pid),
		                h.stopped.end());
		h.rpmemd_stopped = !h.stopped.empty();
		note(fmt::format("host {}: rpmemd pid {} continued", e.host, pid));
		break;
	case fault::link_down:
		cl_->set_link(e.host, true);
		note(fmt::format("host {}: link up", e.host));
		break;
	case fault::link_slow:
		cl_->set_slow(e.host, 0);
		note(fmt::format("host {}: link at full speed", e.host));
		break;
	case fault::sshd_stop:
		cl_->start_sshd(e.host);
		note(fmt::format("host {}: sshd started", e.host));
		break;
	case fault::fs_full:
		cl_->unfill(e.host);
		note(fmt::format("host {}: file system has room again", e.host));
		break;
	default:
		break;
	}
}

// ---------------------------------------------------------------------------------------------
// the loop

void chaos_run::check_round()
{
	const double now = elapsed();
	slow_last_.resize(static_cast<std::size_t>(cl_->size()), -1e9);
	for (int h = 0; h < cl_->size(); ++h)
		if (cl_->at(h).slow)
			slow_last_[static_cast<std::size_t>(h)] = now;
	for (std::size_t i = 0; i < ws_.size() && !failed(); ++i) {
		auto &w = *ws_[i];
		std::unique_lock l(w.mu, std::try_to_lock);
		if (!l.owns_lock() || w.current() != writer::phase::running)
			continue;
		if (auto why = w.poll_running(); !why.empty()) {
			fail(fmt::format("writer {} (pid {}): {}", w.name(), w.pid(), why));
			return;
		}
		// A link of its throttled now or within the bound's reach (a call that started
		// behind it may end later).
		const auto allowance = allowance_ns();
		const double reach = double(cs_[i]->bound_ns() * 2 + allowance) / 1e9 + 5;
		bool throttled = false;
		for (int h : w.config().hosts)
			throttled =
			    throttled || slow_last_[static_cast<std::size_t>(h)] >= now - reach;
		auto why = cs_[i]->round(allowance, throttled);
		for (const auto &o : cs_[i]->take_over_bound())
			note(fmt::format("writer {}: {}", w.name(), o));
		if (!why.empty()) {
			fail(fmt::format("writer {} ({}): {}", w.name(), name(w.config().kind),
			                 why));
			return;
		}
		if (baseline_pid_[i] != w.pid() && cs_[i]->caught_up()) {
			baseline_pid_[i] = w.pid();
			baseline_[i] = holdings_of(w.pid());
		}
	}
}

void chaos_run::loop()
{
	std::size_t next = 0;
	const double length = o_.seconds;
	faults_start_ = elapsed();
	auto last_check = clock_type::now();
	while (!failed()) {
		const double now = elapsed();
		while (next < schedule_.size() &&
		       faults_start_ + double(schedule_[next].at_ms) / 1000 <= now && !failed()) {
			try {
				apply(schedule_[next]);
			} catch (const std::exception &e) {
				fail(fmt::format("applying {}: {}",
				                 describe(schedule_[next], shapes(wcfg_)),
				                 e.what()));
			}
			++next;
		}
		while (!ends_.empty() && ends_.top().at <= now && !failed()) {
			auto fn = ends_.top().fn;
			ends_.pop();
			try {
				fn();
			} catch (const std::exception &e) {
				fail(std::string("ending a fault: ") + e.what());
			}
		}
		reap_tasks(false);
		if (clock_type::now() - last_check >= 250ms) {
			check_round();
			last_check = clock_type::now();
		}
		if (now >= faults_start_ + length && next >= schedule_.size() && ends_.empty())
			break;
		const auto before = clock_type::now();
		std::this_thread::sleep_for(20ms);
		const double late =
		    std::chrono::duration<double>(clock_type::now() - before).count() - 0.020;
		lags_.emplace_back(elapsed(), std::max(0.0, late));
		while (!lags_.empty() && lags_.front().first < elapsed() - 60)
			lags_.pop_front();
	}
}

void chaos_run::finish()
{
	note("the schedule is over: faults healed, writers brought back, replicas awaited");
	while (!ends_.empty()) {
		auto fn = ends_.top().fn;
		ends_.pop();
		try {
			fn();
		} catch (const std::exception &e) {
			fail(std::string("ending a fault: ") + e.what());
		}
	}
	for (int h = 0; h < cl_->size(); ++h)
		cl_->heal(h);
	reap_tasks(true);
	if (failed())
		return;
	for (auto &w : ws_) {
		std::lock_guard g(w->mu);
		if (w->current() == writer::phase::down) {
			if (!start_until_ready(*w, false, 120s))
				return;
		}
	}
	// Every replica back in sync, covering what was acknowledged after the faults ended.
	const auto until = clock_type::now() + 180s;
	for (;;) {
		check_round();
		if (failed())
			return;
		bool all = true;
		for (auto &c : cs_)
			all = all && c->caught_up();
		if (all)
			break;
		if (clock_type::now() > until) {
			std::string which;
			for (std::size_t i = 0; i < ws_.size(); ++i)
				if (!cs_[i]->caught_up())
					which += fmt::format("  writer {}:\n{}", ws_[i]->name(),
					                     cs_[i]->describe());
			fail(
			    "180 s after the faults ended, replicas are still not back in sync:\n" +
			    which);
			return;
		}
		std::this_thread::sleep_for(250ms);
	}
	// Let a few more observations cover what is acknowledged now, then compare holdings.
	for (int i = 0; i < 8 && !failed(); ++i) {
		std::this_thread::sleep_for(250ms);
		check_round();
	}
	for (std::size_t i = 0; i < ws_.size(); ++i) {
		auto &w = *ws_[i];
		const auto now = holdings_of(w.pid());
		if (baseline_[i] && baseline_pid_[i] == w.pid()) {
			note(fmt::format("writer {} (pid {}): {} when first in sync, {} now",
			                 w.name(), w.pid(), baseline_[i]->describe(),
			                 now.describe()));
			if (now.fds > baseline_[i]->fds || now.threads > baseline_[i]->threads)
				fail(fmt::format(
				    "writer {} (pid {}) holds more than when its replicas were "
				    "first in sync, after the faults: {} then, {} now",
				    w.name(), w.pid(), baseline_[i]->describe(), now.describe()));
		}
	}
	if (failed())
		return;
	for (auto &w : ws_) {
		std::lock_guard g(w->mu);
		w->request_close();
	}
	for (std::size_t i = 0; i < ws_.size(); ++i) {
		auto &w = *ws_[i];
		std::lock_guard g(w.mu);
		const auto until_closed = clock_type::now() + 180s;
		std::optional<std::string> r;
		while (!(r = w.poll_close()) && clock_type::now() < until_closed)
			std::this_thread::sleep_for(20ms);
		if (!r) {
			fail(fmt::format("writer {} did not close within 180 s:\n{}", w.name(),
			                 tail(w.err_file(), 20)));
			return;
		}
		if (!r->empty())
			notes_ += fmt::format("writer {}: {}\n", w.name(), *r);
		auto v = cs_[i]->final_check();
		if (v.rfind("note:", 0) == 0 || v.find("\nnote:") != std::string::npos)
			notes_ += fmt::format("writer {}: {}", w.name(), v);
		else if (!v.empty()) {
			fail(fmt::format("writer {}: {}", w.name(), v));
			return;
		}
		note(fmt::format(
		    "writer {} closed; every replica checked against its whole history", w.name()));
	}
	// The operator's view of the same: rpmem verify, and a promoted replica opened by stock
	// libpmemobj with every acknowledged record.
	for (auto &w : ws_) {
		if (!w->has_poolset())
			continue;
		bool marked = false;
		for (std::size_t r = 0; r < w->replicas(); ++r)
			marked = marked || w->marked(r).value_or(true);
		if (marked)
			continue;
		auto v = run_tool(
		    *w, {RPMEM_BINARY_DIR "/bin/rpmem", "verify", w->master_set().string()}, true,
		    clock_type::now() + 30s, w->name() + "-verify");
		note(fmt::format("writer {}: rpmem verify: {}", w->name(), v.describe()));
		if (!v.exited(0)) {
			fail(fmt::format("rpmem verify {} after a clean close: {}:\n{}",
			                 w->master_set().string(), v.describe(),
			                 first_lines(v.output, 16)));
			return;
		}
		if (w->config().kind != writer_kind::pmemobj)
			continue;
		const auto out = (cl_->at(w->config().hosts[0]).fs / (w->name() + "-promoted.set"));
		auto p = run_tool(*w,
		                  {RPMEM_BINARY_DIR "/bin/rpmem", "promote",
		                   w->replica_set(0).string(), "--output", out.string()},
		                  false, clock_type::now() + 30s, w->name() + "-final-promote");
		auto c = run_bounded({RPMEM_BINARY_DIR "/bin/rpmem_pmemobj_log", "check",
		                      out.string(), w->history_file().string()},
		                     w->environment(), run_dir_ / (w->name() + "-final-check.log"),
		                     300s);
		note(
		    fmt::format("writer {}: replica 0 promoted ({}), stock libpmemobj checks every "
		                "acknowledged record on it: {}: {}",
		                w->name(), p.describe(), c.describe(), first_lines(c.output, 1)));
		if (!p.exited(0) || !c.exited(0) || c.output.rfind("ok ", 0) != 0) {
			fail(fmt::format(
			    "after a clean close, replica 0 of {} promoted: {}, checked: "
			    "{}:\n{}{}",
			    w->name(), p.describe(), c.describe(), first_lines(p.output, 8),
			    first_lines(c.output, 8)));
			return;
		}
	}
}

void chaos_run::teardown()
{
	for (auto &w : ws_)
		w->kill();
	// rpmemd ends when its session does: none may outlive its writer.
	std::string left;
	if (!failed() && cl_) {
		const auto until = clock_type::now() + 60s;
		for (int h = 0; h < cl_->size(); ++h)
			while (!cl_->rpmemds(h).empty() && clock_type::now() < until)
				std::this_thread::sleep_for(50ms);
		for (int h = 0; h < cl_->size(); ++h)
			for (pid_t pid : cl_->rpmemds(h))
				left += fmt::format(
				    "  host {}: rpmemd pid {} still runs 60 s after every "
				    "writer ended\n",
				    h, pid);
		for (int h = 0; h < cl_->size(); ++h)
			cl_->at(h).sshd->stop_listening();
		// sshd's session processes end once their clients' connections close, or 15 s
		// after a client gone with the network last answered (ClientAliveInterval 5,
		// ClientAliveCountMax 3): give them that and as long again for a busy machine,
		// then say who still holds what.
		const auto settled = clock_type::now() + 30s;
		do
			std::this_thread::sleep_for(200ms);
		while (!cl_->processes_in_namespaces().empty() && clock_type::now() < settled);
		left += cl_->processes_in_namespaces();
	}
	ws_.clear();
	if (cl_)
		left += cl_->teardown();
	cl_.reset();
	const auto self = holdings_of(getpid());
	if (self.fds != self_before_.fds || self.threads != self_before_.threads)
		left += fmt::format("  the driver: {} before the run, {} after\n",
		                    self_before_.describe(), self.describe());
	left += machine_leftovers(fmt::format("rpmemch{}", getpid()), run_dir_.string());
	if (!left.empty() && !failed())
		fail("after the run, processes, descriptors or namespaces are not back to where "
		     "they "
		     "started:\n" +
		     left);
	if (!o_.keep || !failed()) {
		std::error_code ec;
		fs::remove_all(shm_dir_, ec);
		if (!o_.keep)
			fs::remove_all(run_dir_, ec);
	}
}

// ---------------------------------------------------------------------------------------------
// reports

void chaos_run::report_failure()
{
	std::printf("\nchaos: FAILED at t=%.3f (seed %llu): %s\n", failure_at_,
	            static_cast<unsigned long long>(o_.seed), failure_->c_str());
	std::printf("chaos: replay: %s\n", replay_command(o_).c_str());
	std::printf("\nchaos: what happened up to the failure (the run's log):\n");
	{
		std::lock_guard g(log_mu_);
		const std::size_t from = log_.size() > 80 ? log_.size() - 80 : 0;
		if (from > 0)
			std::printf("  ... %zu earlier lines\n", from);
		for (std::size_t i = from; i < log_.size(); ++i)
			std::printf("  %s\n", log_[i].c_str() + 7);
	}
	std::printf("\nchaos: the history around it:\n");
	for (std::size_t i = 0; i < ws_.size(); ++i) {
		auto &w = *ws_[i];
		std::printf("  writer %s (%s), generation %d, pid %d, %s:\n%s", w.name().c_str(),
		            name(w.config().kind), w.generation(), w.pid(),
		            cs_[i]->bound_text().c_str(), cs_[i]->describe().c_str());
		std::printf("    its log (%s), last lines:\n%s", w.err_file().string().c_str(),
		            tail(w.err_file(), 12).c_str());
	}
	if (cl_)
		for (int h = 0; h < cl_->size(); ++h)
			std::printf("  host %d rpmemd log, last lines:\n%s", h,
			            tail(cl_->at(h).fs / "rpmemd.log", 8).c_str());
	std::fflush(stdout);
}

void chaos_run::report_summary()
{
	int applied = 0;
	std::printf("\nchaos: faults by kind (seed %llu, %.0f s, %d hosts):\n",
	            static_cast<unsigned long long>(o_.seed), o_.seconds, o_.hosts);
	for (int k = 0; k < fault_kinds; ++k) {
		const auto &st = stats_[k];
		applied += st.applied;
		std::string outcomes;
		for (const auto &[what, n] : st.outcomes)
			outcomes += fmt::format("{}{} {}", outcomes.empty() ? "" : "; ", n, what);
		std::printf("  %-12s %4d scheduled, %4d applied%s%s\n", name(static_cast<fault>(k)),
		            st.scheduled, st.applied, outcomes.empty() ? "" : ": ",
		            outcomes.c_str());
	}
	std::printf("chaos: writers:\n");
	for (std::size_t i = 0; i < cs_.size(); ++i)
		std::printf("  %-4s %-52s %llu check rounds, %llu replica reads, %llu in-sync "
		            "observations; longest call %.3f s (%s; bound %.3f s: %s); %llu calls "
		            "over it behind a throttled link; %llu rounds found a replica "
		            "unmarked by the documented gap\n",
		            wcfg_[i].name.c_str(), name(wcfg_[i].kind),
		            static_cast<unsigned long long>(cs_[i]->rounds),
		            static_cast<unsigned long long>(cs_[i]->replica_reads),
		            static_cast<unsigned long long>(cs_[i]->in_sync_observations),
		            double(cs_[i]->longest_ns) / 1e9, cs_[i]->longest_what.c_str(),
		            double(cs_[i]->bound_ns()) / 1e9, cs_[i]->bound_text().c_str(),
		            static_cast<unsigned long long>(cs_[i]->over_bound_throttled),
		            static_cast<unsigned long long>(cs_[i]->unmarked_by_gap));
	std::printf("chaos: %llu tool runs, %llu refusal probes\n",
	            static_cast<unsigned long long>(tool_runs_),
	            static_cast<unsigned long long>(probes_));
	if (!notes_.empty())
		std::printf("chaos: noted:\n%s", notes_.c_str());
	std::printf("chaos: not injected here: power loss of a replica host (tmpfs and page cache "
	            "survive a killed process; no pmem to lose), RDMA/verbs faults (no hardware), "
	            "packet delay and loss (no netem in this kernel; nftables is not installed), "
	            "a replica host's reboot (approximated by its link down with its rpmemd "
	            "killed), media errors (no device-mapper here)\n");
	std::printf("chaos: PASSED: seed %llu, %d faults applied, 0 acknowledged records missing, "
	            "0 calls over their bound, 0 leaks\n",
	            static_cast<unsigned long long>(o_.seed), applied);
}

int chaos_run::main()
{
	s_.threads = 2;
	wcfg_ = writer_configs(o_);
	schedule_config sc;
	sc.seed = o_.seed;
	sc.length_ms = static_cast<std::int64_t>(o_.seconds * 1000);
	sc.hosts = o_.hosts;
	sc.writers = shapes(wcfg_);
	sc.mean_gap_ms = o_.mean_gap_ms;
	schedule_ = make_schedule(sc);
	if (!o_.kinds.empty())
		schedule_.erase(std::remove_if(schedule_.begin(), schedule_.end(),
		                               [&](const event &e) {
			                               return std::find(o_.kinds.begin(),
			                                                o_.kinds.end(),
			                                                e.what) == o_.kinds.end();
		                               }),
		                schedule_.end());
	for (const auto &e : schedule_)
		++stats_[static_cast<int>(e.what)].scheduled;
	std::printf("chaos: seed %llu, %.0f s of faults, %d hosts, writers %s, %zu faults "
	            "scheduled (replay: %s)\n",
	            static_cast<unsigned long long>(o_.seed), o_.seconds, o_.hosts,
	            fmt::format("{}", fmt::join(o_.writers, ",")).c_str(), schedule_.size(),
	            replay_command(o_).c_str());
	std::fflush(stdout);
	if (o_.print_schedule) {
		for (const auto &e : schedule_)
			std::printf("  %s\n", describe(e, sc.writers).c_str());
		return 0;
	}
	std::signal(SIGPIPE, SIG_IGN);
	self_before_ = holdings_of(getpid());
	try {
		setup();
		start_all();
		// Each writer's replicas in sync once before the faults start.
		const auto until = clock_type::now() + 120s;
		while (!failed()) {
			check_round();
			bool all = true;
			for (auto &c : cs_)
				all = all && c->caught_up();
			if (all)
				break;
			if (clock_type::now() > until) {
				fail("the writers' replicas are not in sync 120 s after they "
				     "started");
				break;
			}
			std::this_thread::sleep_for(100ms);
		}
		if (!failed()) {
			note("faults start");
			loop();
		}
		if (!failed())
			finish();
	} catch (const std::exception &e) {
		if (!cl_) {
			std::printf("chaos: SETUP FAILED (seed %llu): %s\n",
			            static_cast<unsigned long long>(o_.seed), e.what());
			teardown();
			return 2;
		}
		fail(std::string("the driver: ") + e.what());
	}
	const bool failed_in_run = failed();
	if (failed_in_run)
		report_failure();
	teardown(); // may find leftovers: a failure of its own
	if (failed()) {
		if (!failed_in_run)
			report_failure(); // what was left behind
		std::printf(
		    "chaos: FAILED: seed %llu%s\n", static_cast<unsigned long long>(o_.seed),
		    o_.keep ? fmt::format(" (files kept in {})", run_dir_.string()).c_str() : "");
		return 1;
	}
	report_summary();
	return 0;
}

} // namespace rpmem::chaos

int main(int argc, char **argv)
{
	auto o = rpmem::chaos::parse(argc, argv);
	if (geteuid() != 0 && !o.print_schedule) {
		std::fprintf(stderr,
		             "rpmem-chaos: needs root (network namespaces, tmpfs mounts)\n");
		return 2;
	}
	rpmem::chaos::chaos_run run(std::move(o));
	return run.main();
}
