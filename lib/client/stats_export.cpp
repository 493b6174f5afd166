// SPDX-License-Identifier: BSD-3-Clause
#include "client/stats_export.hpp"

#include "client/json.hpp"
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

namespace
{

/** A label value with \, " and newline escaped (exposition format). */
std::string label(std::string_view v)
{
	std::string out;
	for (char c : v) {
		if (c == '\\' || c == '"')
			out += '\\', out += c;
		else if (c == '\n')
			out += "\\n";
		else
			out += c;
	}
	return out;
}

constexpr double quantiles[] = {0.5, 0.9, 0.99, 0.999};

struct metric {
	const char *name, *type, *help;
};

} // namespace

std::int64_t unix_now_ns() noexcept
{
	timespec t{};
	clock_gettime(CLOCK_REALTIME, &t);
	return std::int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

std::string prometheus_text(const std::vector<pool_report> &pools, std::int64_t now_unix_ns)
{
	std::string out;
	auto family_of = [&](const std::vector<pool_report> &which, const metric &m,
	                     auto &&value_of) {
		out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", m.name, m.help, m.name, m.type);
		for (const auto &p : which) {
			auto labels = fmt::format("target=\"{}\",descriptor=\"{}\"",
			                          label(p.target), label(p.descriptor));
			if (p.replica)
				labels += fmt::format(",replica=\"{}\"", *p.replica);
			value_of(p, [&](const std::string &extra, double v) {
				out += fmt::format("{}{{{}{}}} {}\n", m.name, labels, extra, v);
			});
		}
	};
	auto family = [&](const metric &m, auto &&value_of) { family_of(pools, m, value_of); };
	auto one = [](auto get) {
		return [get](const pool_report &p, auto &&emit) { emit("", get(p)); };
	};
	family({"rpmem_pool_info", "gauge",
	        "A pool this process has open (1); its provider, persist method, mode, state"},
	       [](const pool_report &p, auto &&emit) {
		       emit(fmt::format(",provider=\"{}\",method=\"{}\",mode=\"{}\",state=\"{}\"",
		                        label(p.provider), label(p.method), p.mode, p.state),
		            1.0);
	       });
	family({"rpmem_pool_up", "gauge",
	        "1 while the pool's replica is connected and in sync, 0 otherwise"},
	       one([](const pool_report &p) { return p.state == "connected" ? 1.0 : 0.0; }));
	family({"rpmem_pool_lanes", "gauge", "Lanes granted"},
	       one([](const pool_report &p) { return double(p.lanes); }));
	family({"rpmem_operations_total", "counter", "Calls that reached the replica, by kind"},
	       [](const pool_report &p, auto &&emit) {
		       const auto &s = p.stats;
		       emit(",op=\"persist\"", double(s.persists));
		       emit(",op=\"flush\"", double(s.flushes));
		       emit(",op=\"drain\"", double(s.drains));
		       emit(",op=\"read\"", double(s.reads));
		       emit(",op=\"deep_persist\"", double(s.deep_persists));
	       });
	family({"rpmem_bytes_total", "counter", "Bytes made durable on the replica, or read back"},
	       [](const pool_report &p, auto &&emit) {
		       emit(",op=\"persist\"", double(p.stats.bytes_persisted));
		       emit(",op=\"read\"", double(p.stats.bytes_read));
	       });
	family({"rpmem_round_trips_total", "counter", "Round trips to the replica"},
	       one([](const pool_report &p) { return double(p.stats.round_trips); }));
	family({"rpmem_round_trip_seconds", "gauge",
	        "Round-trip latency quantiles since the pool opened (upper bound of a power-of-two "
	        "bucket)"},
	       [](const pool_report &p, auto &&emit) {
		       for (double q : quantiles)
			       emit(fmt::format(",quantile=\"{}\"", q),
			            double(p.stats.quantile_ns(q)) / 1e9);
	       });
	family({"rpmem_errors_total", "counter", "Calls on the pool that failed"},
	       one([](const pool_report &p) { return double(p.errors); }));
	family({"rpmem_last_persist_timestamp_seconds", "gauge",
	        "When the last persist or drain returned successfully (0: none yet)"},
	       one([](const pool_report &p) { return double(p.last_persist_unix_ns) / 1e9; }));
	std::vector<pool_report> async;
	for (const auto &p : pools)
		if (p.lag_bytes)
			async.push_back(p);
	if (!async.empty()) {
		family_of(
		    async,
		    {"rpmem_async_lag_bytes", "gauge",
		     "Bytes persisted locally, not yet on the replica (RPMEM_REPLICATION=async)"},
		    one([](const pool_report &p) { return double(*p.lag_bytes); }));
		family_of(async,
		          {"rpmem_async_lag_seconds", "gauge",
		           "Age of the oldest persist not yet on the replica "
		           "(RPMEM_REPLICATION=async)"},
		          one([](const pool_report &p) { return p.lag_seconds.value_or(0.0); }));
	}
	std::vector<pool_report> throttled;
	for (const auto &p : pools)
		if (p.throttled)
			throttled.push_back(p);
	if (!throttled.empty())
		family_of(
		    throttled,
		    {"rpmem_async_throttled_total", "counter",
		     "Persists that waited because the replica fell behind: the lag bound, or "
		     "no room to copy them aside (RPMEM_REPLICATION=async)"},
		    one([](const pool_report &p) { return double(*p.throttled); }));
	std::vector<pool_report> healing;
	for (const auto &p : pools)
		if (p.bytes_to_go)
			healing.push_back(p);
	if (!healing.empty())
		family_of(healing,
		          {"rpmem_replica_bytes_to_go", "gauge",
		           "Bytes the replica lacks while lost or catching up (0: in sync)"},
		          one([](const pool_report &p) { return double(*p.bytes_to_go); }));
	out += fmt::format("# HELP rpmem_stats_timestamp_seconds When this file was written\n"
	                   "# TYPE rpmem_stats_timestamp_seconds gauge\n"
	                   "rpmem_stats_timestamp_seconds {}\n",
	                   double(now_unix_ns) / 1e9);
	return out;
}

std::string json_text(const std::vector<pool_report> &pools, std::int64_t now_unix_ns)
{
	constexpr const char *names[] = {"p50", "p90", "p99", "p999"};
	static_assert(std::size(names) == std::size(quantiles));
	json j;
	j.begin_object().member("time_unix_ns", now_unix_ns).key("pools").begin_array();
	for (const auto &p : pools) {
		const auto &s = p.stats;
		j.begin_object().member("target", p.target).member("descriptor", p.descriptor);
		if (p.replica)
			j.member("replica", std::uint64_t{*p.replica});
		j.member("provider", p.provider)
		    .member("method", p.method)
		    .member("mode", p.mode)
		    .member("state", p.state)
		    .member("lanes", p.lanes)
		    .key("operations")
		    .begin_object()
		    .member("persist", s.persists)
		    .member("flush", s.flushes)
		    .member("drain", s.drains)
		    .member("read", s.reads)
		    .member("deep_persist", s.deep_persists)
		    .end_object()
		    .key("bytes")
		    .begin_object()
		    .member("persist", s.bytes_persisted)
		    .member("read", s.bytes_read)
		    .end_object()
		    .member("round_trips", s.round_trips)
		    .member("errors", p.errors)
		    .member("last_persist_unix_ns", p.last_persist_unix_ns)
		    .key("round_trip_ns")
		    .begin_object();
		for (std::size_t i = 0; i < std::size(quantiles); ++i)
			j.member(names[i], s.quantile_ns(quantiles[i]));
		j.end_object();
		if (p.lag_bytes)
			j.member("async_lag_bytes", *p.lag_bytes)
			    .member("async_lag_seconds", p.lag_seconds.value_or(0.0));
		if (p.throttled)
			j.member("async_throttled", *p.throttled);
		if (p.bytes_to_go)
			j.member("bytes_to_go", *p.bytes_to_go);
		j.end_object();
	}
	j.end_array().end_object();
	return j.str() + "\n";
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
	pool_report r = current_();
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
	const std::string text = json ? json_text(reports, now) : prometheus_text(reports, now);
	// Atomically: readers (node_exporter) never see half a file.
	const int err =
	    posix::replace_file(path_, fmt::format("{}.{}.tmp", path_, ::getpid()), text, 0644);
	if (err) {
		if (!warned_) // once: a metrics file must not flood the application's stderr
			std::fprintf(
			    stderr,
			    "<librpmem>: cannot write the metrics file RPMEM_STATS_FILE=%s "
			    "(%s): fix the path or its directory's permissions\n",
			    path_.c_str(), std::strerror(err));
		warned_ = true;
	}
}

} // namespace rpmem::client
