// SPDX-License-Identifier: BSD-3-Clause
// The metrics file (RPMEM_STATS_FILE): both formats read back by parsers from Debian
// (tests/support/metrics_samples.py), label values that need escaping survive, the file is
// replaced atomically and a pool's last report is written when it is removed.
#include "client/stats_export.hpp"
#include "metrics_reports.hpp"

#include "../integration/process.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using namespace rpmem::client;
using rpmem::test::every_metric;
using rpmem::test::metrics_samples;
using rpmem::test::sample_report;
using rpmem::test::sample_value;

namespace
{

struct temp_dir {
	fs::path path = fs::temp_directory_path() / ("rpmem-stats-" + std::to_string(::getpid()));
	temp_dir() { fs::create_directories(path); }
	~temp_dir() { fs::remove_all(path); }
};

std::string slurp(const fs::path &p)
{
	std::ifstream f(p);
	std::stringstream s;
	s << f.rdbuf();
	return s.str();
}

} // namespace

TEST_CASE("the Prometheus text parses, escaped labels and quantiles included", "[stats]")
{
	temp_dir d;
	auto async = sample_report();
	async.descriptor = "async.set";
	async.mode = "async";
	async.lag_bytes = 4096;
	async.lag_seconds = 0.25;
	async.throttled = 3;
	async.lag_bound_bytes = 64 << 20;
	async.lag_bound_seconds = 1;
	const auto file = d.path / "m.prom";
	std::ofstream(file) << prometheus_text({sample_report(), async}, 1'800'000'000'000'000'000,
	                                       "/var/lib/node \"x\".prom");
	auto s = metrics_samples(file.string());
	INFO(slurp(file) << "\nparsed:\n" << s.output);
	REQUIRE(s.status == 0);
	// The parser gives the label back unescaped.
	CHECK(s.output.find("target=\"me@node\"2\\x\"") != std::string::npos);
	CHECK(sample_value(s.output, "rpmem_operations_total", "op=\"persist\"") == 10);
	CHECK(sample_value(s.output, "rpmem_errors_total", "a b.set") == 2);
	CHECK(sample_value(s.output, "rpmem_round_trip_seconds", "quantile=\"0.5\"") ==
	      Approx(32768e-9));
	CHECK(sample_value(s.output, "rpmem_round_trip_seconds", "quantile=\"0.999\"") ==
	      Approx(2097152e-9));
	CHECK(sample_value(s.output, "rpmem_async_lag_bytes", "async.set") == 4096);
	CHECK(sample_value(s.output, "rpmem_async_lag_bytes", "a b.set") == -1);
	CHECK(sample_value(s.output, "rpmem_async_throttled_total", "async.set") == 3);
	CHECK(sample_value(s.output, "rpmem_async_throttled_total", "a b.set") == -1);
	CHECK(sample_value(s.output, "rpmem_async_lag_bound_bytes", "async.set") == 64 << 20);
	CHECK(sample_value(s.output, "rpmem_async_lag_bound_seconds", "async.set") == 1);
	CHECK(sample_value(s.output, "rpmem_async_lag_bound_bytes", "a b.set") == -1);
	CHECK(sample_value(s.output, "rpmem_stats_timestamp_seconds") == Approx(1.8e9));
	// The file-wide samples name their file (escaped), so that two processes' files in one
	// textfile directory never hold the same series; both pools are open.
	CHECK(s.output.find("rpmem_stats_timestamp_seconds{file=\"/var/lib/node \"x\".prom\"}") !=
	      std::string::npos);
	CHECK(sample_value(s.output, "rpmem_stats_open_pools", "file=") == 2);
}

TEST_CASE("the metrics file counts the pools its process has not closed", "[stats]")
{
	auto closed = sample_report();
	closed.descriptor = "closed.set";
	closed.state = "closed";
	auto failed = sample_report();
	failed.state = "failed"; // still open: its process may go on, or die with it open
	const auto text = prometheus_text({closed, failed, sample_report()}, 0, "m.prom");
	INFO(text);
	CHECK(text.find("rpmem_stats_open_pools{file=\"m.prom\"} 2\n") != std::string::npos);
	CHECK(prometheus_text({closed}, 0, "m.prom")
	          .find("rpmem_stats_open_pools{file=\"m.prom\"} 0\n") != std::string::npos);
}

TEST_CASE("the exporter replaces the file whole and writes a removed pool's last report", "[stats]")
{
	temp_dir d;
	const auto file = d.path / "m.json";
	int calls = 0;
	{
		stats_exporter e(file.string(), std::chrono::milliseconds(3600000));
		auto id = e.add([&] {
			++calls;
			return sample_report();
		});
		e.write_now();
		auto s = metrics_samples(file.string());
		INFO(slurp(file) << "\nparsed:\n" << s.output);
		REQUIRE(s.status == 0);
		CHECK(sample_value(s.output, "rpmem_json_operations_persist") == 10);
		CHECK(s.output.find("} connected\n") != std::string::npos);
		auto last = sample_report();
		last.state = "closed";
		last.stats.persists = 11;
		e.remove(id, last);
		auto after = metrics_samples(file.string());
		INFO(slurp(file) << "\nparsed:\n" << after.output);
		CHECK(sample_value(after.output, "rpmem_json_operations_persist") == 11);
		CHECK(after.output.find("} closed\n") != std::string::npos);
		CHECK(after.output.find("} connected\n") == std::string::npos);
	}
	CHECK(calls == 1); // the removed pool's source is not called again
	std::size_t n = 0;
	for ([[maybe_unused]] const auto &f : fs::directory_iterator(d.path))
		++n;
	CHECK(n == 1); // no temporary file left
}

TEST_CASE("a pool's last report is not overwritten by a write that collected it still open",
          "[stats]")
{
	// The exporter's write collects every open pool's report and then replaces the file. A
	// pool removed while such a write runs its source must end with its final state in the
	// file, not with the report that write collected: remove() waits for the source, and its
	// own write follows the one that called it.
	temp_dir d;
	const auto file = d.path / "m.json";
	stats_exporter e(file.string(), std::chrono::milliseconds(3600000));
	std::atomic<bool> entered{false};
	auto id = e.add([&] {
		entered = true;
		// Long enough for remove() to be waiting for this call when it returns.
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
		return sample_report();
	});
	std::thread writer([&] { e.write_now(); });
	while (!entered)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	auto last = sample_report();
	last.state = "closed";
	last.stats.persists = 12;
	e.remove(id, last);
	writer.join();
	auto s = metrics_samples(file.string());
	INFO(slurp(file) << "\nparsed:\n" << s.output);
	REQUIRE(s.status == 0);
	CHECK(s.output.find("} closed\n") != std::string::npos);
	CHECK(s.output.find("} connected\n") == std::string::npos);
	CHECK(sample_value(s.output, "rpmem_json_operations_persist") == 12);
}

TEST_CASE("a metrics file that cannot be written is said once on stderr, naming it and why",
          "[stats]")
{
	temp_dir d;
	const auto file = d.path / "no-such-dir" / "m.prom";
	const auto err_file = d.path / "stderr";
	int saved = ::dup(2);
	int fd = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	REQUIRE(fd >= 0);
	::dup2(fd, 2);
	::close(fd);
	{
		stats_exporter e(file.string(), std::chrono::milliseconds(3600000));
		e.add([] { return sample_report(); });
		e.write_now();
		e.write_now();
	}
	::dup2(saved, 2);
	::close(saved);
	const auto err = slurp(err_file);
	INFO("stderr:\n" << err);
	CHECK(err.find("cannot write the metrics file RPMEM_STATS_FILE=" + file.string()) !=
	      std::string::npos);
	CHECK(err.find("No such file or directory") != std::string::npos);
	CHECK(err.find("cannot write", err.find("cannot write") + 1) == std::string::npos); // once
	CHECK(!fs::exists(file.parent_path()));
}

namespace
{

/** The metric families of a Prometheus text (each its HELP, TYPE and samples), sorted: the
 *  format leaves their order free. */
std::vector<std::string> families(const std::string &text)
{
	std::vector<std::string> out;
	for (std::size_t at = 0; at < text.size();) {
		auto next = text.find("# HELP ", at + 1);
		if (next == std::string::npos)
			next = text.size();
		out.push_back(text.substr(at, next - at));
		at = next;
	}
	std::sort(out.begin(), out.end());
	return out;
}

} // namespace

TEST_CASE("both formats of the metrics file hold every metric, byte for byte", "[stats]")
{
	// What rpmem 0.1 wrote (librpmem(7), METRICS): a reader that parses either file keeps
	// working. Prometheus families may come in any order; their lines may not change (new
	// families and pools only add lines). One exception, a fix: rpmem_stats_timestamp_seconds
	// had no label, and two processes' files in one node_exporter textfile directory then
	// held the same series (node_exporter kept one and logged an error on every scrape);
	// it is labelled with its file.
	const std::string prometheus =
	    R"golden(# HELP rpmem_pool_info A pool this process has open (1); its provider, persist method, mode, state
# TYPE rpmem_pool_info gauge
rpmem_pool_info{target="me@node\"2\\x",descriptor="pools/a b.set",provider="tcp",method="gpspm",mode="sync",state="connected"} 1
rpmem_pool_info{target="me@node\"2\\x",descriptor="async.set",replica="1",provider="tcp",method="gpspm",mode="async",state="failed"} 1
rpmem_pool_info{target="me@node\"2\\x",descriptor="healing.set",provider="tcp",method="gpspm",mode="sync",state="catching_up"} 1
# HELP rpmem_pool_up 1 while the pool's connection works, 0 after a failure or close
# TYPE rpmem_pool_up gauge
rpmem_pool_up{target="me@node\"2\\x",descriptor="pools/a b.set"} 1
rpmem_pool_up{target="me@node\"2\\x",descriptor="async.set",replica="1"} 0
rpmem_pool_up{target="me@node\"2\\x",descriptor="healing.set"} 0
# HELP rpmem_pool_lanes Lanes granted
# TYPE rpmem_pool_lanes gauge
rpmem_pool_lanes{target="me@node\"2\\x",descriptor="pools/a b.set"} 4
rpmem_pool_lanes{target="me@node\"2\\x",descriptor="async.set",replica="1"} 4
rpmem_pool_lanes{target="me@node\"2\\x",descriptor="healing.set"} 4
# HELP rpmem_operations_total Calls that reached the replica, by kind
# TYPE rpmem_operations_total counter
rpmem_operations_total{target="me@node\"2\\x",descriptor="pools/a b.set",op="persist"} 10
rpmem_operations_total{target="me@node\"2\\x",descriptor="pools/a b.set",op="flush"} 0
rpmem_operations_total{target="me@node\"2\\x",descriptor="pools/a b.set",op="drain"} 0
rpmem_operations_total{target="me@node\"2\\x",descriptor="pools/a b.set",op="read"} 0
rpmem_operations_total{target="me@node\"2\\x",descriptor="pools/a b.set",op="deep_persist"} 0
rpmem_operations_total{target="me@node\"2\\x",descriptor="async.set",replica="1",op="persist"} 10
rpmem_operations_total{target="me@node\"2\\x",descriptor="async.set",replica="1",op="flush"} 3
rpmem_operations_total{target="me@node\"2\\x",descriptor="async.set",replica="1",op="drain"} 2
rpmem_operations_total{target="me@node\"2\\x",descriptor="async.set",replica="1",op="read"} 5
rpmem_operations_total{target="me@node\"2\\x",descriptor="async.set",replica="1",op="deep_persist"} 1
rpmem_operations_total{target="me@node\"2\\x",descriptor="healing.set",op="persist"} 10
rpmem_operations_total{target="me@node\"2\\x",descriptor="healing.set",op="flush"} 0
rpmem_operations_total{target="me@node\"2\\x",descriptor="healing.set",op="drain"} 0
rpmem_operations_total{target="me@node\"2\\x",descriptor="healing.set",op="read"} 0
rpmem_operations_total{target="me@node\"2\\x",descriptor="healing.set",op="deep_persist"} 0
# HELP rpmem_bytes_total Bytes made durable on the replica, or read back
# TYPE rpmem_bytes_total counter
rpmem_bytes_total{target="me@node\"2\\x",descriptor="pools/a b.set",op="persist"} 640
rpmem_bytes_total{target="me@node\"2\\x",descriptor="pools/a b.set",op="read"} 0
rpmem_bytes_total{target="me@node\"2\\x",descriptor="async.set",replica="1",op="persist"} 640
rpmem_bytes_total{target="me@node\"2\\x",descriptor="async.set",replica="1",op="read"} 4096
rpmem_bytes_total{target="me@node\"2\\x",descriptor="healing.set",op="persist"} 640
rpmem_bytes_total{target="me@node\"2\\x",descriptor="healing.set",op="read"} 0
# HELP rpmem_round_trips_total Round trips to the replica
# TYPE rpmem_round_trips_total counter
rpmem_round_trips_total{target="me@node\"2\\x",descriptor="pools/a b.set"} 10
rpmem_round_trips_total{target="me@node\"2\\x",descriptor="async.set",replica="1"} 10
rpmem_round_trips_total{target="me@node\"2\\x",descriptor="healing.set"} 10
# HELP rpmem_errors_total Calls on the pool that failed
# TYPE rpmem_errors_total counter
rpmem_errors_total{target="me@node\"2\\x",descriptor="pools/a b.set"} 2
rpmem_errors_total{target="me@node\"2\\x",descriptor="async.set",replica="1"} 2
rpmem_errors_total{target="me@node\"2\\x",descriptor="healing.set"} 2
# HELP rpmem_last_persist_timestamp_seconds When the last persist or drain returned successfully (0: none yet)
# TYPE rpmem_last_persist_timestamp_seconds gauge
rpmem_last_persist_timestamp_seconds{target="me@node\"2\\x",descriptor="pools/a b.set"} 1800000000
rpmem_last_persist_timestamp_seconds{target="me@node\"2\\x",descriptor="async.set",replica="1"} 1800000000
rpmem_last_persist_timestamp_seconds{target="me@node\"2\\x",descriptor="healing.set"} 1800000000
# HELP rpmem_round_trip_seconds Round-trip latency quantiles since the pool opened (upper bound of a power-of-two bucket)
# TYPE rpmem_round_trip_seconds gauge
rpmem_round_trip_seconds{target="me@node\"2\\x",descriptor="pools/a b.set",quantile="0.5"} 3.2768e-05
rpmem_round_trip_seconds{target="me@node\"2\\x",descriptor="pools/a b.set",quantile="0.9"} 0.002097152
rpmem_round_trip_seconds{target="me@node\"2\\x",descriptor="pools/a b.set",quantile="0.99"} 0.002097152
rpmem_round_trip_seconds{target="me@node\"2\\x",descriptor="pools/a b.set",quantile="0.999"} 0.002097152
rpmem_round_trip_seconds{target="me@node\"2\\x",descriptor="async.set",replica="1",quantile="0.5"} 3.2768e-05
rpmem_round_trip_seconds{target="me@node\"2\\x",descriptor="async.set",replica="1",quantile="0.9"} 0.002097152
rpmem_round_trip_seconds{target="me@node\"2\\x",descriptor="async.set",replica="1",quantile="0.99"} 0.002097152
rpmem_round_trip_seconds{target="me@node\"2\\x",descriptor="async.set",replica="1",quantile="0.999"} 0.002097152
rpmem_round_trip_seconds{target="me@node\"2\\x",descriptor="healing.set",quantile="0.5"} 3.2768e-05
rpmem_round_trip_seconds{target="me@node\"2\\x",descriptor="healing.set",quantile="0.9"} 0.002097152
rpmem_round_trip_seconds{target="me@node\"2\\x",descriptor="healing.set",quantile="0.99"} 0.002097152
rpmem_round_trip_seconds{target="me@node\"2\\x",descriptor="healing.set",quantile="0.999"} 0.002097152
# HELP rpmem_async_lag_bytes Bytes persisted locally, not yet on the replica (RPMEM_REPLICATION=async)
# TYPE rpmem_async_lag_bytes gauge
rpmem_async_lag_bytes{target="me@node\"2\\x",descriptor="async.set",replica="1"} 4096
# HELP rpmem_async_lag_seconds Age of the oldest persist not yet on the replica (RPMEM_REPLICATION=async)
# TYPE rpmem_async_lag_seconds gauge
rpmem_async_lag_seconds{target="me@node\"2\\x",descriptor="async.set",replica="1"} 0.25
# HELP rpmem_async_throttled_total Persists that waited because the replica fell behind: the lag bound, or no room to copy them aside (RPMEM_REPLICATION=async)
# TYPE rpmem_async_throttled_total counter
rpmem_async_throttled_total{target="me@node\"2\\x",descriptor="async.set",replica="1"} 3
# HELP rpmem_async_lag_bound_bytes The lag in bytes past which persists wait for the replica (RPMEM_ASYNC_MAX_LAG_BYTES)
# TYPE rpmem_async_lag_bound_bytes gauge
rpmem_async_lag_bound_bytes{target="me@node\"2\\x",descriptor="async.set",replica="1"} 4194304
# HELP rpmem_async_lag_bound_seconds The lag in time past which persists wait for the replica (RPMEM_ASYNC_MAX_LAG_MS)
# TYPE rpmem_async_lag_bound_seconds gauge
rpmem_async_lag_bound_seconds{target="me@node\"2\\x",descriptor="async.set",replica="1"} 1.5
# HELP rpmem_replica_bytes_to_go Bytes the replica lacks while lost or catching up (0: in sync)
# TYPE rpmem_replica_bytes_to_go gauge
rpmem_replica_bytes_to_go{target="me@node\"2\\x",descriptor="healing.set"} 8192
# HELP rpmem_stats_timestamp_seconds When this file was written
# TYPE rpmem_stats_timestamp_seconds gauge
rpmem_stats_timestamp_seconds{file="/run/m.prom"} 1800000000.1234567
# HELP rpmem_stats_open_pools Pools of this file not closed (0: its process closed them all; the file stays as it left it)
# TYPE rpmem_stats_open_pools gauge
rpmem_stats_open_pools{file="/run/m.prom"} 3
)golden";
	const std::string json =
	    R"golden({"time_unix_ns":1800000000123456789,"pools":[{"target":"me@node\"2\\x","descriptor":"pools/a b.set","provider":"tcp","method":"gpspm","mode":"sync","state":"connected","lanes":4,"operations":{"persist":10,"flush":0,"drain":0,"read":0,"deep_persist":0},"bytes":{"persist":640,"read":0},"round_trips":10,"errors":2,"last_persist_unix_ns":1800000000000000000,"round_trip_ns":{"p50":32768,"p90":2097152,"p99":2097152,"p999":2097152}},{"target":"me@node\"2\\x","descriptor":"async.set","replica":1,"provider":"tcp","method":"gpspm","mode":"async","state":"failed","lanes":4,"operations":{"persist":10,"flush":3,"drain":2,"read":5,"deep_persist":1},"bytes":{"persist":640,"read":4096},"round_trips":10,"errors":2,"last_persist_unix_ns":1800000000000000000,"round_trip_ns":{"p50":32768,"p90":2097152,"p99":2097152,"p999":2097152},"async_lag_bytes":4096,"async_lag_seconds":0.25,"async_throttled":3,"async_lag_bound_bytes":4194304,"async_lag_bound_seconds":1.5},{"target":"me@node\"2\\x","descriptor":"healing.set","provider":"tcp","method":"gpspm","mode":"sync","state":"catching_up","lanes":4,"operations":{"persist":10,"flush":0,"drain":0,"read":0,"deep_persist":0},"bytes":{"persist":640,"read":0},"round_trips":10,"errors":2,"last_persist_unix_ns":1800000000000000000,"round_trip_ns":{"p50":32768,"p90":2097152,"p99":2097152,"p999":2097152},"bytes_to_go":8192}]}
)golden";
	const auto pools = every_metric();
	const std::int64_t now = 1'800'000'000'123'456'789;
	CHECK(families(prometheus_text(pools, now, "/run/m.prom")) == families(prometheus));
	CHECK(json_text(pools, now) == json);
}

TEST_CASE("the metrics file is written through no link and adopts no file planted beside it",
          "[stats]")
{
	// Whoever may write the metrics directory (a node_exporter textfile directory is often
	// group-writable) plants a link, or a file of their own, at the name a temporary file
	// would have: the application writes with its own privileges, so neither may be used.
	temp_dir d;
	const auto file = d.path / "m.prom";
	const auto victim = d.path / "victim";
	std::ofstream(victim) << "precious\n";
	const std::vector<fs::path> guesses = {
	    file.string() + "." + std::to_string(::getpid()) + ".tmp", file.string() + ".tmp"};
	for (const auto &g : guesses)
		fs::create_symlink(victim, g);
	stats_exporter e(file.string(), std::chrono::milliseconds(3600000));
	e.add([] { return sample_report(); });
	e.write_now();
	CHECK(slurp(victim) == "precious\n");
	CHECK(!fs::is_symlink(file));
	CHECK(slurp(file).find("rpmem_pool_info{") != std::string::npos);
	for (const auto &g : guesses) {
		CHECK(fs::is_symlink(g));
		fs::remove(g);
		std::ofstream(g) << "spoofed\n";
	}
	e.write_now();
	struct stat metrics {
	};
	REQUIRE(::stat(file.c_str(), &metrics) == 0);
	for (const auto &g : guesses) {
		struct stat planted {
		};
		REQUIRE(::stat(g.c_str(), &planted) == 0);
		CHECK(planted.st_ino != metrics.st_ino);
		CHECK(slurp(g) == "spoofed\n");
	}
	CHECK(slurp(file).find("rpmem_pool_info{") != std::string::npos);
}

TEST_CASE("a pool whose connection fails is reported failed before the failing call returns",
          "[stats]")
{
	temp_dir d;
	const auto file = d.path / "m.json";
	stats_exporter e(file.string(), std::chrono::milliseconds(3600000));
	pool_export pool(e, [] { return sample_report(); });
	pool.error(false); // a bad argument: the pool is fine, nothing to say before the interval
	CHECK(!fs::exists(file));
	pool.error(true); // the connection failed: said now, not an interval later
	REQUIRE(fs::exists(file));
	auto s = metrics_samples(file.string());
	INFO(slurp(file) << "\nparsed:\n" << s.output);
	REQUIRE(s.status == 0);
	CHECK(s.output.find("} failed\n") != std::string::npos);
	CHECK(s.output.find("} connected\n") == std::string::npos);
}

TEST_CASE("a latency counts in the power-of-two bucket it falls in, the last one open-ended",
          "[stats]")
{
	using rpmem::pool_stats;
	CHECK(pool_stats::latency_bucket(0) == 0);
	CHECK(pool_stats::latency_bucket(1) == 0);
	CHECK(pool_stats::latency_bucket(2) == 1);
	CHECK(pool_stats::latency_bucket(3) == 1);
	CHECK(pool_stats::latency_bucket(1023) == 9);
	CHECK(pool_stats::latency_bucket(1024) == 10);
	CHECK(pool_stats::latency_bucket((std::uint64_t(1) << 39) - 1) == 38);
	CHECK(pool_stats::latency_bucket(std::uint64_t(1) << 39) == 39);
	CHECK(pool_stats::latency_bucket(~std::uint64_t(0)) == 39);
}
