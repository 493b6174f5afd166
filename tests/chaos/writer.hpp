// SPDX-License-Identifier: BSD-3-Clause
// A writer of the chaos run as the driver sees it: the program (stock libpmemobj through our
// librpmem, rpmem::replicated_pool synchronous or asynchronous, rpmem::pool), its files (the
// master pool set on the client's /dev/shm, a replica pool set on each of its hosts' tmpfs,
// its history), its life (started, killed, opened again, closed), and what the checks read:
// what it acknowledged, how it last saw its replicas, and the replicas' part files themselves.
#pragma once

#include "chaos/cluster.hpp"
#include "chaos/history.hpp"
#include "chaos/proc.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace rpmem::chaos
{

enum class writer_kind { pmemobj, rp_sync, rp_async, pool };
const char *name(writer_kind k) noexcept;

/** The library settings every writer runs with (its environment). */
struct run_settings {
	std::chrono::milliseconds timeout{2000};           // RPMEM_TIMEOUT
	std::chrono::milliseconds reconnect_timeout{3000}; // RPMEM_RECONNECT_TIMEOUT
	std::chrono::milliseconds reconnect_delay{100};    // RPMEM_RECONNECT_DELAY
	std::chrono::milliseconds ssh_timeout{3000};       // RPMEM_SSH_TIMEOUT
	unsigned threads = 2;
	unsigned pace_us = 2000; // each writer thread's pause between records
};

struct writer_config {
	std::string name;
	writer_kind kind = writer_kind::pmemobj;
	std::vector<int> hosts; // its replicas, in the pool set's order
};

/** How a writer last saw its replicas: states[r] of replica r, sampled at some moment after
 *  `after` (on the writer's clock, writer::now()). */
struct observation {
	bool valid = false;
	std::uint64_t after = 0;
	std::vector<replica_state> states;
};

class writer
{
public:
	enum class phase { down, starting, running, closing, closed };

	writer(writer_config c, cluster &cl, const fs::path &dir, const run_settings &s);
	~writer();
	writer(const writer &) = delete;
	writer &operator=(const writer &) = delete;

	const writer_config &config() const { return c_; }
	const std::string &name() const { return c_.name; }
	std::size_t replicas() const { return c_.hosts.size(); }
	/** Whether its replicas carry the "possibly behind" mark while it has them open
	 *  (RPMEM_ON_OUTAGE=continue, failure_policy::degrade); rpmem::pool marks nothing. */
	bool marks_replicas() const { return c_.kind != writer_kind::pool; }
	/** Whether `rpmem sync|check` and promotion apply: a master pool set. */
	bool has_poolset() const { return c_.kind != writer_kind::pool; }

	// --- life; the caller holds mu
	/** fresh: a new generation (every pool and the history removed, created anew); else the
	 *  pools a killed writer left, opened again. */
	void start(bool fresh);
	/** nullopt while it starts; "" once it printed "ready"; else why it failed. */
	std::optional<std::string> poll_start();
	void kill();
	void request_close();
	/** nullopt while it closes; "" when it printed "closed" and exited 0; else why not. */
	std::optional<std::string> poll_close();
	/** A running writer that ended, or printed "error": why (else ""). */
	std::string poll_running();
	phase current() const { return ph_; }
	pid_t pid() const { return proc_ ? proc_->pid() : -1; }
	int generation() const { return generation_; }
	/** Removes the master and every replica of this writer (a new generation follows). */
	void remove_pools();
	/** The master part: removed to declare the master lost. */
	fs::path master_part() const;

	// --- files
	fs::path master_set() const;
	std::string replica_set_name() const { return c_.name + ".set"; }
	fs::path replica_set(int r) const;
	fs::path replica_part(int r) const;
	const fs::path &history_file() const { return history_; }
	const fs::path &err_file() const { return err_; }
	/** The command line that runs it (for the report). */
	std::string command() const;
	const std::vector<std::string> &environment() const { return env_; }

	// --- what the checks read
	unsigned threads() const;
	std::vector<std::uint64_t> acked() const;
	/** What a replica observed in sync must hold: acked (synchronous, rpmem::pool), or what a
	 *  barrier covered (asynchronous). */
	std::vector<std::uint64_t> coverable() const;
	/** Now on the clock of observe() (the metrics file's realtime for stock libpmemobj). */
	std::uint64_t now() const;
	observation observe();
	struct call_info {
		std::size_t slot = 0;
		std::uint64_t running_ns = 0; // the call in progress so far (0: none)
		std::string what, longest_what;
		std::uint64_t longest_ns = 0;
	};
	std::vector<call_info> calls() const;
	/** Checks replica r's part file against the history: every record of thread t up to
	 *  covered[t] whole (the newest up to a window; older slots are overwritten), and for an
	 *  asynchronous writer (prefix) the records present form a prefix of each thread's.
	 *  "" or what is wrong, with the bytes found. */
	std::string check_replica(std::size_t r, const std::vector<std::uint64_t> &covered,
	                          bool prefix, std::uint64_t window = 256) const;
	/** Whether replica r's part header carries the "possibly behind" mark (nullopt: no
	 *  readable header). */
	std::optional<bool> marked(std::size_t r) const;
	/** Whether replica r may be unmarked while open by replicated_pool's documented gap: it
	 *  was unreachable when the running (or last killed) process opened the set, and that
	 *  process has not seen it in sync since (history::unmarked_at_open). */
	bool unmarked_by_gap(std::size_t r) const;

	std::mutex mu; // held by a task that kills, restarts or regenerates it

private:
	void write_poolsets();
	void map();

	writer_config c_;
	cluster &cl_;
	fs::path dir_, history_, out_, err_, metrics_;
	run_settings s_;
	std::vector<std::string> env_;
	std::unique_ptr<process> proc_;
	phase ph_ = phase::down;
	std::size_t out_offset_ = 0;
	int generation_ = 0;
	history *h_ = nullptr;           // my writers' history
	void *obj_h_ = nullptr;          // pmemobj_log's history
	std::uint64_t metrics_seen_ = 0; // time_unix_ns of the last metrics file read
	observation metrics_obs_;
};

} // namespace rpmem::chaos
