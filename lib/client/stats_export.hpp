// SPDX-License-Identifier: BSD-3-Clause
// Metrics without code changes: with RPMEM_STATS_FILE=PATH, librpmem writes what each open pool
// of the process has done to PATH every RPMEM_STATS_INTERVAL ms (default 10000), atomically
// (a temporary file renamed over PATH), and once more when a pool closes. PATH ending in
// ".json" gets JSON; anything else the Prometheus text exposition format, as node_exporter's
// textfile collector reads (name it *.prom in its directory). Schema: librpmem(7), METRICS.
// The formats are stats_format's; this is the writer: the file, the thread, the pools.
#pragma once

#include "client/stats_format.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace rpmem::client
{

/** Now, in ns since the epoch (the clock the reports use). */
std::int64_t unix_now_ns() noexcept;

/** Writes the reports of the registered pools to a file, periodically and at each removal. */
class stats_exporter
{
public:
	using source = std::function<pool_report()>;

	/** The process's exporter; nullptr when RPMEM_STATS_FILE is not set and configure()
	 *  was not called. */
	static stats_exporter *instance();
	/** Makes the process's exporter write to `path` (rpmem::pool::export_stats): pools
	 *  opened from now on are reported. Throws rpmem::error EBUSY when the process already
	 *  reports to another file (RPMEM_STATS_FILE or an earlier call), EINVAL for an empty
	 *  path or an interval under 100 ms. */
	static stats_exporter *configure(const std::string &path,
	                                 std::chrono::milliseconds interval);
	const std::string &path() const { return path_; }

	stats_exporter(std::string path, std::chrono::milliseconds interval);
	~stats_exporter();
	stats_exporter(const stats_exporter &) = delete;
	stats_exporter &operator=(const stats_exporter &) = delete;

	/** Registers a pool; `s` is called from the exporter's thread (or a thread writing the
	 *  file), never twice at once, with only the file-writing lock held: it must not wait
	 *  long (for a lock a sender holds through a network timeout, say) nor write the file. */
	std::uint64_t add(source s);
	/** Forgets the pool (waiting for a call of its source in progress: none follows); the
	 *  file is written once more with `last` (its final state). */
	void remove(std::uint64_t id, const pool_report &last);
	/** Writes the file now (the thread does it every interval). */
	void write_now();

private:
	/** A registered source; `call` is held while it runs, `removed` once it must not. */
	struct entry {
		source fn;
		std::mutex call;
		bool removed = false;
	};
	void run();
	/** Every source's report (no exporter lock held while they run: a source may wait for
	 *  its pool's own locks), then `extra`, written to the file. */
	void write(const std::vector<pool_report> &extra);

	std::string path_;
	std::chrono::milliseconds interval_;
	std::mutex mu_; // sources_, next_id_, stop_
	std::condition_variable cv_;
	std::map<std::uint64_t, std::shared_ptr<entry>> sources_;
	std::uint64_t next_id_ = 1;
	bool stop_ = false;
	std::mutex write_mu_; // one writer of the file at a time; warned_
	bool warned_ = false;
	std::thread thread_;
};

/**
 * One pool reported to the process's exporter while it lives: registered at construction, its
 * final state written by finish() or the destructor. The pool's owner counts what the report
 * cannot see in the pool itself: calls that failed, and when a durable call last returned.
 */
class pool_export
{
public:
	/** `current` gives the pool's report (target, stats, lag...); errors, last persist and
	 *  a failed state are filled in from the counters below. Called on the exporter's
	 *  thread and by finish(), never twice at once. */
	pool_export(stats_exporter &e, std::function<pool_report()> current);
	~pool_export() { finish("closed"); }
	pool_export(const pool_export &) = delete;
	pool_export &operator=(const pool_export &) = delete;

	/** A call failed; `connection`: not about its arguments, so the pool is failed. The
	 *  first such failure writes the file at once: it says so before the failing call
	 *  returns (libpmemobj may end the process right after), and a call on another thread
	 *  that fails meanwhile waits for that write. Call it with no lock held that a source
	 *  of the exporter takes. */
	void error(bool connection) noexcept
	{
		errors_.fetch_add(1, std::memory_order_relaxed);
		if (connection)
			std::call_once(failed_written_, [this] {
				failed_.store(true, std::memory_order_relaxed);
				state_changed();
			});
	}
	/** A persist, drain or barrier returned successfully at `now` (unix_now_ns()); not
	 *  recorded while the pool is lost (replicated_pool: the call did not reach it). */
	void durable(std::int64_t now) noexcept
	{
		if (!lost_.load(std::memory_order_relaxed))
			last_persist_ns_.store(now, std::memory_order_relaxed);
	}
	void durable() noexcept { durable(unix_now_ns()); }
	/** The pool's state changed (client::resilient_pool): the file says so now, before the
	 *  call that met the change returns. */
	void state_changed() noexcept;
	/** replicated_pool: the replica is lost (calls do not reach it) or back (resync). */
	void set_lost(bool lost) noexcept { lost_.store(lost, std::memory_order_relaxed); }
	/** Unregisters, writing the final report once with `state` ("closed", or "failed" when
	 *  the pool failed). Idempotent. */
	void finish(const char *state) noexcept;

private:
	pool_report report(const char *state) const;

	stats_exporter &exporter_;
	std::function<pool_report()> current_;
	/** Held while current_ runs: the exporter's thread and finish() (the owner's thread)
	 *  both call it, and a source may keep state between calls. */
	mutable std::mutex current_mu_;
	std::uint64_t id_ = 0;
	std::atomic<std::uint64_t> errors_{0};
	std::atomic<std::int64_t> last_persist_ns_{0};
	std::atomic<bool> failed_{false};
	std::once_flag failed_written_; // the first failure's write; others wait for it
	std::atomic<bool> lost_{false};
};

} // namespace rpmem::client
