// SPDX-License-Identifier: BSD-3-Clause
// The Prometheus side of the metrics file, with Prometheus's own tools and real files: two
// writers (stock libpmemobj through our librpmem.so.1, one synchronous, one asynchronous, each
// replicating to its own sshd and rpmemd) report into one directory, which a real
// prometheus-node-exporter (textfile collector, loopback) serves: every rpmem metric must
// arrive with its labels, nothing dropped. The rules rpmem-tools ships
// (packaging/prometheus/rpmem.rules.yml) pass `promtool check rules`, and `promtool test
// rules` on series taken from the files those writers wrote while a replica was lost, caught
// up, and failed (tests/support/rules_unit_test.py lays them on a timeline).
#include "pmemobj_log_setup.hpp"

#include <regex>
#include <set>

using namespace rpmem::test;

namespace
{

const std::string rules = RPMEM_SOURCE_DIR "/packaging/prometheus/rpmem.rules.yml";

/** A directory removed at the end (declared first: removed last). */
struct temp_directory {
	fs::path path = make_temp_dir("/tmp", "rpmem-rules-");
	~temp_directory()
	{
		std::error_code ec;
		fs::remove_all(path, ec);
	}
};

/** Replica parts in memory, made durable by pmem_persist: an asynchronous batch of a few
 *  thousand ranges msync'd one by one on a loaded disk kept persists waiting for the lag bound
 *  for a minute, and the writer's close as long; the metrics do not need a disk. */
replica_options in_memory()
{
	replica_options o;
	o.parent = "/dev/shm";
	o.force_pmem = true;
	return o;
}

/** Two writers, each replicating to a node of its own sshd (so their pools' targets differ),
 *  both reporting every 100 ms into one directory, as a node_exporter textfile directory. */
struct two_writers {
	temp_directory dir;
	sshd server_sync, server_async;
	replica node_sync{server_sync, in_memory()}, node_async{server_async, in_memory()};
	log_setup sync{server_sync, node_sync, {}, (dir.path / "sync.prom").string()};
	log_setup async{server_async, node_async, {}, (dir.path / "async.prom").string()};
	std::unique_ptr<child> sync_writer, async_writer;
	std::string last_text; // the metrics file wait_for read last, whole
	fs::path reports() const { return dir.path / "writer-reports"; }

	two_writers()
	{
		sync_writer =
		    sync.start({"RPMEM_RECONNECT_TIMEOUT=1000", "RPMEM_STATS_INTERVAL=100"});
		// Ended by libpmemobj when its replica is lost (the fail policy, below).
		auto async_env = ended_by_libpmemobj_env(reports());
		async_env.insert(async_env.end(),
		                 {"RPMEM_REPLICATION=async", "RPMEM_STATS_INTERVAL=100",
		                  // Its pool fails when its replica is lost (below), as
		                  // PMDK's would: no reconnect time.
		                  "RPMEM_ASYNC_ON_FAILURE=fail", "RPMEM_RECONNECT_TIMEOUT=0"});
		async_writer = async.start(async_env);
		// libpmemobj persists by flush and drain under asynchronous replication: bytes.
		for (const auto *l : {&sync, &async})
			wait_for(l->metrics_file(), "bytes reaching the replica",
			         [](const auto &s) {
				         return sample_value(s, "rpmem_bytes_total",
				                             "op=\"persist\"") > 0;
			         });
	}

	/** Polls a metrics file (parsed by tests/support/metrics_samples.py) until `ready` holds
	 *  for its samples; returns them, and writes the file as it was then to `copy` if given.
	 *  The bound is generous (a stall, not a measurement). */
	std::string wait_for(const fs::path &file, const std::string &what,
	                     const std::function<bool(const std::string &)> &ready,
	                     const fs::path &copy = {})
	{
		const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(180);
		std::string samples;
		for (;;) {
			last_text = slurp(file);
			const auto at = dir.path / "read.prom";
			std::ofstream(at) << last_text;
			auto parsed = metrics_samples(at.string());
			samples = parsed.status == 0 ? parsed.output : std::string();
			if ((!samples.empty() && ready(samples)) ||
			    std::chrono::steady_clock::now() > give_up)
				break;
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		}
		INFO("waiting in " << file << " for " << what << "; the last samples:\n"
		                   << samples << "\nthe writers' stderr:\n"
		                   << sync.errors() << async.errors()
		                   << sanitizer_reports(reports()));
		REQUIRE(ready(samples));
		if (!copy.empty())
			std::ofstream(copy) << last_text;
		return samples;
	}
};

/** The samples' names and label sets, without their values. */
std::set<std::string> series(const std::string &samples)
{
	std::set<std::string> out;
	std::istringstream in(samples);
	for (std::string line; std::getline(in, line);)
		if (line.rfind("rpmem_", 0) == 0)
			out.insert(line.substr(0, line.rfind(' ')));
	return out;
}

/** Every metric family the library writes, as its table names them (stats_format.cpp). */
std::set<std::string> library_metrics()
{
	const auto source = slurp(RPMEM_SOURCE_DIR "/lib/client/stats_format.cpp");
	std::set<std::string> names;
	const std::regex name("\"(rpmem_[a-z_]+)");
	for (auto it = std::sregex_iterator(source.begin(), source.end(), name);
	     it != std::sregex_iterator(); ++it)
		names.insert((*it)[1]);
	return names;
}

/** prometheus-node-exporter with only its textfile collector, on a free loopback port. */
class node_exporter
{
public:
	explicit node_exporter(const fs::path &textfile_dir)
	    : log_(textfile_dir.parent_path() / "node-exporter.log")
	{
		port_ = free_port("127.0.0.1");
		process_ = std::make_unique<child>(
		    std::vector<std::string>{
		        "/usr/bin/prometheus-node-exporter", "--collector.disable-defaults",
		        "--collector.textfile",
		        "--collector.textfile.directory=" + textfile_dir.string(),
		        fmt::format("--web.listen-address=127.0.0.1:{}", port_)},
		    std::vector<std::string>{}, log_.string());
	}
	~node_exporter()
	{
		process_->kill(SIGTERM);
		process_->wait(std::chrono::seconds(30));
	}

	/** GET /metrics, once it answers (it may still be starting). */
	process_result scrape() const
	{
		process_result r;
		for (int i = 0; i < 600; ++i) {
			r = run(fmt::format("/usr/bin/python3 -c 'import sys, urllib.request; "
			                    "sys.stdout.write(urllib.request."
			                    "urlopen(\"http://127.0.0.1:{}/metrics\", "
			                    "timeout=60).read().decode())'",
			                    port_));
			if (r.status == 0 || process_->wait(std::chrono::milliseconds(0)))
				break;
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
		}
		return r;
	}
	std::string log() const { return slurp(log_); }

private:
	fs::path log_;
	std::uint16_t port_ = 0;
	std::unique_ptr<child> process_;
};

} // namespace

TEST_CASE("prometheus rules: promtool check rules accepts the rules rpmem-tools ships", "[rules]")
{
	auto r = run("promtool check rules " + rules);
	INFO("promtool printed:\n" << r.output);
	REQUIRE(r.status == 0);
	CHECK(has(r.output, "SUCCESS: 14 rules found"));
}

TEST_CASE("prometheus-node-exporter serves every rpmem metric of two processes' files in one "
          "textfile directory, with its labels",
          "[rules][metrics]")
{
	two_writers w;
	const auto textfiles = w.dir.path / "textfiles";
	fs::create_directory(textfiles);
	// The files as they were at one moment, in a directory of their own (the writers rewrite
	// theirs ten times a second: values change, names and labels do not).
	const auto sync_samples = w.wait_for(
	    w.sync.metrics_file(), "a connected pool",
	    [](const auto &s) { return has(s, "state=\"connected\""); }, textfiles / "sync.prom");
	const auto async_samples = w.wait_for(
	    w.async.metrics_file(), "a connected pool",
	    [](const auto &s) { return has(s, "state=\"connected\""); }, textfiles / "async.prom");
	node_exporter exporter(textfiles);
	const auto scraped = exporter.scrape();
	INFO("node_exporter served:\n" << scraped.output << "\nits log:\n" << exporter.log());
	REQUIRE(scraped.status == 0);
	const auto body = w.dir.path / "scraped.prom";
	std::ofstream(body) << scraped.output;
	const auto parsed = metrics_samples(body.string());
	REQUIRE(parsed.status == 0);

	// Every sample of both files, with exactly its labels; nothing of ours dropped.
	auto expected = series(sync_samples);
	const auto more = series(async_samples);
	expected.insert(more.begin(), more.end());
	const auto served = series(parsed.output);
	for (const auto &s : expected) {
		INFO("missing from the scrape: " << s);
		CHECK(served.count(s) == 1);
	}
	CHECK(served.size() == expected.size());
	// ... and every metric the library's table has (both files together have them all).
	for (const auto &name : library_metrics()) {
		INFO("no " << name << " in the scrape");
		CHECK(has(parsed.output, name + "{"));
	}
	// Both processes' file-wide samples arrive: labelled with their files, they are
	// different series (unlabelled, node_exporter kept one and logged an error).
	CHECK(sample_value(parsed.output, "rpmem_stats_timestamp_seconds", "/sync.prom") > 1.7e9);
	CHECK(sample_value(parsed.output, "rpmem_stats_timestamp_seconds", "/async.prom") > 1.7e9);
	CHECK(sample_value(parsed.output, "rpmem_stats_open_pools", "/sync.prom") == 1);
	CHECK(sample_value(parsed.output, "rpmem_stats_open_pools", "/async.prom") == 1);
	CHECK(sample_value(parsed.output, "node_textfile_scrape_error") == 0);
	CHECK(!has(exporter.log(), "level=error"));

	w.sync.finish(*w.sync_writer);
	w.async.finish(*w.async_writer);
}

TEST_CASE("prometheus rules: promtool test rules on series from a real writer's files while its "
          "replica is lost, caught up and failed",
          "[rules]")
{
	two_writers w;
	const auto &d = w.dir.path;
	auto state_is = [](const std::string &state) {
		return [state](const std::string &s) {
			return sample_value(s, "rpmem_pool_info", "state=\"" + state + "\"") == 1;
		};
	};
	w.wait_for(w.sync.metrics_file(), "in sync", state_is("connected"), d / "connected.prom");
	w.wait_for(w.async.metrics_file(), "in sync", state_is("connected"), d / "live.prom");

	// The synchronous writer's replica lost (logins refused, rpmemd killed), then back.
	const auto keys = w.server_sync.dir() / "authorized_keys";
	fs::rename(keys, w.server_sync.dir() / "authorized_keys.off");
	REQUIRE(run_kill_rpmemd(w.node_sync.dir().string()));
	w.wait_for(w.sync.metrics_file(), "the replica lost", state_is("lost"), d / "lost.prom");
	fs::rename(w.server_sync.dir() / "authorized_keys.off", keys);
	// A catch-up may end between two reads: its file is kept where one is seen.
	w.wait_for(
	    w.sync.metrics_file(), "the replica catching up or back",
	    [&](const std::string &s) {
		    if (state_is("catching_up")(s) && !fs::exists(d / "catching.prom"))
			    std::ofstream(d / "catching.prom") << w.last_text;
		    return state_is("connected")(s);
	    },
	    d / "back.prom");
	// The asynchronous writer's replica lost: under RPMEM_ASYNC_ON_FAILURE=fail and no
	// reconnect time its pool fails, the file says so at once (the replicator met the loss),
	// the writer's next call fails and is counted, and libpmemobj ends the writer. The file
	// kept is the one with the failed call in it.
	REQUIRE(run_kill_rpmemd(w.node_async.dir().string()));
	w.wait_for(
	    w.async.metrics_file(), "the pool failed, a call failed",
	    [&](const std::string &s) {
		    return state_is("failed")(s) &&
		           sample_value(s, "rpmem_errors_total", "log.set") >= 1;
	    },
	    d / "failed.prom");
	w.async_writer->wait(std::chrono::seconds(120));
	only_libpmemobj_crashes(w.reports());

	auto unit_test = [&](const fs::path &rules_file, const fs::path &out) {
		std::string files =
		    fmt::format("connected={} lost={} back={} async={} failed={}",
		                (d / "connected.prom").string(), (d / "lost.prom").string(),
		                (d / "back.prom").string(), (d / "live.prom").string(),
		                (d / "failed.prom").string());
		if (fs::exists(d / "catching.prom"))
			files += " catching=" + (d / "catching.prom").string();
		auto made =
		    run(fmt::format("/usr/bin/python3 {}/tests/support/rules_unit_test.py {} {} {}",
		                    RPMEM_SOURCE_DIR, rules_file.string(), out.string(), files));
		INFO("rules_unit_test.py printed:\n" << made.output);
		REQUIRE(made.status == 0);
		return run("promtool test rules " + out.string());
	};
	const auto tested = unit_test(rules, d / "rules-test.yml");
	INFO("promtool test rules printed:\n"
	     << tested.output << "\nits test file: " << (d / "rules-test.yml").string()
	     << (fs::exists(d / "catching.prom") ? "" : " (no catching-up file was read)"));
	CHECK(tested.status == 0);
	CHECK(has(tested.output, "SUCCESS"));

	// The test bites: the same series against a rule that misses the lost replica fail.
	auto broken = slurp(rules);
	const std::string lost_expr = "expr: rpmem_pool_info{state=\"lost\"} == 1";
	REQUIRE(has(broken, lost_expr));
	broken.replace(broken.find(lost_expr), lost_expr.size(),
	               "expr: rpmem_pool_info{state=\"lost\"} == 2");
	std::ofstream(d / "broken.rules.yml") << broken;
	const auto bitten = unit_test(d / "broken.rules.yml", d / "broken-test.yml");
	INFO("promtool test rules on the broken rules printed:\n" << bitten.output);
	CHECK(bitten.status != 0);
	CHECK(has(bitten.output, "RpmemReplicaLost"));

	w.sync.finish(*w.sync_writer);
}
