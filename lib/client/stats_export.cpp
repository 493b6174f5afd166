// SPDX-License-Identifier: BSD-3-Clause
#include "client/stats_export.hpp"

#include "posix/file.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <unistd.h>

namespace rpmem::client
{

std::int64_t unix_now_ns() noexcept
{
	timespec t{};
	clock_gettime(CLOCK_REALTIME, &t);
	return std::int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

namespace
{

/** The process's exporter: set from the environment on first use, or by configure().
 *  Never destroyed: pools may close (and report) during static destruction. */
std::mutex process_mu;
stats_exporter *process_exporter = nullptr;
bool environment_read = false;

/** RPMEM_STATS_FILE's exporter, once (process_mu held). */
void read_environment()
{
	if (environment_read)
		return;
	environment_read = true;
	const char *path = std::getenv("RPMEM_STATS_FILE");
	if (!path || !*path)
		return;
	long long ms = 10000;
	if (const char *i = std::getenv("RPMEM_STATS_INTERVAL"); i && *i) {
		char *end = nullptr;
		errno = 0;
		ms = std::strtoll(i, &end, 10);
		if (errno || *end || ms < 100) {
			std::fprintf(stderr,
			             "<librpmem>: RPMEM_STATS_INTERVAL='%s' is not a number of "
			             "milliseconds of at least 100; using 10000\n",
			             i);
			ms = 10000;
		}
	}
	process_exporter = new stats_exporter(path, std::chrono::milliseconds(ms));
}

} // namespace

stats_exporter *stats_exporter::instance()
{
	std::lock_guard g(process_mu);
	read_environment();
	return process_exporter;
}

stats_exporter *stats_exporter::configure(const std::string &path,
                                          std::chrono::milliseconds interval)
{
	if (path.empty())
		throw rpmem::error(EINVAL, "export_stats: the metrics file path is empty");
	if (interval < std::chrono::milliseconds(100))
		throw rpmem::error(EINVAL, fmt::format("export_stats: an interval of {} ms is "
		                                       "too short: give at least 100 ms",
		                                       interval.count()));
	std::lock_guard g(process_mu);
	read_environment();
	if (process_exporter) {
		if (process_exporter->path() == path)
			return process_exporter;
		throw rpmem::error(
		    EBUSY, fmt::format("export_stats: this process already reports its pools "
		                       "to {} (RPMEM_STATS_FILE or an earlier call): one "
		                       "metrics file per process",
		                       process_exporter->path()));
	}
	process_exporter = new stats_exporter(path, interval);
	return process_exporter;
}

pool_export::pool_export(stats_exporter &e, std::function<pool_report()> current)
    : exporter_(e), current_(std::move(current))
{
	id_ = exporter_.add([this] { return report(nullptr); });
}

pool_report pool_export::report(const char *state) const
{
	pool_report r;
	{
		std::lock_guard g(current_mu_);
		r = current_();
	}
	r.errors = errors_.load(std::memory_order_relaxed);
	r.last_persist_unix_ns = last_persist_ns_.load(std::memory_order_relaxed);
	if (failed_.load(std::memory_order_relaxed))
		r.state = "failed";
	else if (state && r.state != "failed")
		r.state = state;
	return r;
}

void pool_export::state_changed() noexcept
{
	if (!id_)
		return;
	try {
		exporter_.write_now();
	} catch (...) {
		// Reporting never fails the pool.
	}
}

void pool_export::finish(const char *state) noexcept
{
	if (!id_)
		return;
	try {
		exporter_.remove(id_, report(state));
	} catch (...) {
		// Reporting never fails the pool.
	}
	id_ = 0;
}

stats_exporter::stats_exporter(std::string path, std::chrono::milliseconds interval)
    : path_(std::move(path)), interval_(interval), thread_([this] { run(); })
{
}

stats_exporter::~stats_exporter()
{
	{
		std::lock_guard g(mu_);
		stop_ = true;
	}
	cv_.notify_all();
	thread_.join();
}

std::uint64_t stats_exporter::add(source s)
{
	auto e = std::make_shared<entry>();
	e->fn = std::move(s);
	std::lock_guard g(mu_);
	auto id = next_id_++;
	sources_.emplace(id, std::move(e));
	return id;
}

void stats_exporter::remove(std::uint64_t id, const pool_report &last)
{
	std::shared_ptr<entry> e;
	{
		std::lock_guard g(mu_);
		auto it = sources_.find(id);
		if (it == sources_.end())
			return;
		e = std::move(it->second);
		sources_.erase(it);
	}
	{
		std::lock_guard g(e->call); // a call in progress ends first
		e->removed = true;
	}
	write({last});
}

void stats_exporter::write_now()
{
	write({});
}

void stats_exporter::run()
{
	std::unique_lock lock(mu_);
	while (!stop_) {
		cv_.wait_for(lock, interval_, [this] { return stop_; });
		if (stop_ || sources_.empty())
			continue;
		lock.unlock();
		write({});
		lock.lock();
	}
}

void stats_exporter::write(const std::vector<pool_report> &extra)
{
	// One write at a time, from collecting to renaming: a pool's final report (remove)
	// is never overwritten by a write that collected it still open.
	std::lock_guard w(write_mu_);
	std::vector<std::shared_ptr<entry>> entries;
	{
		std::lock_guard g(mu_);
		for (auto &[id, e] : sources_)
			entries.push_back(e);
	}
	std::vector<pool_report> reports;
	for (auto &e : entries) {
		std::lock_guard g(e->call);
		if (!e->removed)
			reports.push_back(e->fn());
	}
	reports.insert(reports.end(), extra.begin(), extra.end());
	const auto now = unix_now_ns();
	const bool json = path_.size() >= 5 && path_.compare(path_.size() - 5, 5, ".json") == 0;
	const std::string text =
	    json ? json_text(reports, now) : prometheus_text(reports, now, path_);
	// Atomically: readers (node_exporter) never see half a file; and through a new file
	// no one else can have made (it would be written with the application's privileges).
	std::string why;
	if (posix::replace_file(path_, text, 0644, &why) != 0) {
		if (!warned_) // once: a metrics file must not flood the application's stderr
			std::fprintf(
			    stderr,
			    "<librpmem>: cannot write the metrics file RPMEM_STATS_FILE=%s "
			    "(%s): fix the path or its directory's permissions\n",
			    path_.c_str(), why.c_str());
		warned_ = true;
	}
}

} // namespace rpmem::client
