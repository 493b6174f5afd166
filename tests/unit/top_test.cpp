// SPDX-License-Identifier: BSD-3-Clause
// rpmem top's pure parts (tools/rpmem/metrics_read, top_view): the reader gets back every
// metric the library's writer (lib/client/stats_format) puts in either format, skips other
// exporters' samples and names what is malformed; the view computes rates from two writes,
// follows a catch-up with a bar and an estimate, lists the state changes it saw, sorts,
// selects, and fits its lines to the terminal.
#include "metrics_read.hpp"
#include "metrics_reports.hpp"
#include "top_view.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace rpmem::tool;
using rpmem::client::pool_report;

namespace
{

void check_same(const pool_sample &s, const pool_report &r)
{
	INFO(r.descriptor);
	CHECK(s.target == r.target);
	CHECK(s.descriptor == r.descriptor);
	CHECK(s.replica == r.replica);
	CHECK(s.provider == r.provider);
	CHECK(s.method == r.method);
	CHECK(s.mode == r.mode);
	CHECK(s.state == r.state);
	CHECK(s.lanes == r.lanes);
	CHECK(s.persists == double(r.stats.persists));
	CHECK(s.flushes == double(r.stats.flushes));
	CHECK(s.drains == double(r.stats.drains));
	CHECK(s.reads == double(r.stats.reads));
	CHECK(s.deep_persists == double(r.stats.deep_persists));
	CHECK(s.bytes_persisted == double(r.stats.bytes_persisted));
	CHECK(s.bytes_read == double(r.stats.bytes_read));
	CHECK(s.round_trips == double(r.stats.round_trips));
	CHECK(s.errors == double(r.errors));
	CHECK(s.last_persist == Approx(double(r.last_persist_unix_ns) / 1e9));
	CHECK(s.p50 == Approx(double(r.stats.quantile_ns(0.5)) / 1e9));
	CHECK(s.p90 == Approx(double(r.stats.quantile_ns(0.9)) / 1e9));
	CHECK(s.p99 == Approx(double(r.stats.quantile_ns(0.99)) / 1e9));
	CHECK(s.p999 == Approx(double(r.stats.quantile_ns(0.999)) / 1e9));
	auto same = [](const std::optional<double> &a, auto b) {
		return a.has_value() == b.has_value() && (!a || *a == Approx(double(*b)));
	};
	CHECK(same(s.lag_bytes, r.lag_bytes));
	CHECK(same(s.lag_seconds, r.lag_seconds));
	CHECK(same(s.throttled, r.throttled));
	CHECK(same(s.lag_bound_bytes, r.lag_bound_bytes));
	CHECK(same(s.lag_bound_seconds, r.lag_bound_seconds));
	CHECK(same(s.bytes_to_go, r.bytes_to_go));
}

pool_sample pool(const std::string &descriptor, const std::string &state, double persists,
                 std::optional<double> to_go = std::nullopt)
{
	pool_sample p;
	p.target = "node2";
	p.descriptor = descriptor;
	p.mode = "sync";
	p.state = state;
	p.persists = persists;
	p.bytes_persisted = persists * 1024;
	p.bytes_to_go = to_go;
	return p;
}

snapshot at(double now, std::vector<pool_sample> pools, double written = -1)
{
	snapshot s;
	s.now = now;
	s.sessions_dir = "/run/user/0/rpmemd";
	snapshot::file f;
	f.source = {"/tmp/app.prom", 42, "app", 30, false};
	f.metrics = metrics_file{written < 0 ? now : written, std::move(pools)};
	s.files.push_back(f);
	return s;
}

std::string text(const std::vector<std::string> &lines)
{
	std::string t;
	for (const auto &l : lines)
		t += l + "\n";
	return t;
}

bool has(const std::string &t, const std::string &part)
{
	return t.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("rpmem top reads back every metric the library writes, in both formats", "[top]")
{
	const auto written = rpmem::test::every_metric();
	const std::int64_t now = 1'800'000'000'123'456'789;
	for (bool json : {false, true}) {
		const auto file = json ? rpmem::client::json_text(written, now)
		                       : rpmem::client::prometheus_text(written, now, "/m.prom");
		INFO(file);
		std::string why;
		const auto read = parse_metrics(file, &why);
		INFO(why);
		REQUIRE(read);
		CHECK(read->written == Approx(1'800'000'000.123456789));
		REQUIRE(read->pools.size() == written.size());
		for (std::size_t i = 0; i < written.size(); ++i)
			check_same(read->pools[i], written[i]);
	}
}

TEST_CASE("rpmem top skips other exporters' samples and names what is malformed", "[top]")
{
	std::string why;
	const std::string others = "# HELP node_x y\n# TYPE node_x gauge\nnode_x{a=\"b\"} 1\n";
	CHECK(!parse_metrics(others, &why));
	CHECK(why == "no rpmem metric in it");
	const auto mixed = parse_metrics(
	    others + "rpmem_pool_lanes{descriptor=\"p.set\",target=\"n\"} 4 1700000000000\n"
	             "rpmem_new_metric_of_a_later_release{descriptor=\"p.set\",target=\"n\"} 9\n"
	             "rpmem_stats_timestamp_seconds{file=\"/x.prom\"} 17\n",
	    &why);
	REQUIRE(mixed);
	CHECK(mixed->written == 17);
	REQUIRE(mixed->pools.size() == 1);
	CHECK(mixed->pools[0].lanes == 4);
	for (const auto &[bad, where] : std::vector<std::pair<std::string, std::string>>{
	         {"rpmem_pool_lanes{target=\"n} 4\n", "line 1: the value of label target"},
	         {"\nrpmem_pool_lanes{target=\"n\"} four\n", "line 2: 'four' is not a number"},
	         {"rpmem_pool_lanes{target=\"\\x\"} 4\n", "line 1: unknown escape \\x"},
	         {"rpmem_pool_lanes{target=\"n\" 4\n", "line 1: ',' or '}' was expected"},
	         {"rpmem_pool_lanes 4x\n", "line 1: '4x' is not a number"},
	         {"9rpmem 4\n", "line 1: a metric name was expected"},
	         {"rpmem_pool_lanes{target=\"n\",descriptor=\"d\",replica=\"-1\"} 4\n",
	          "line 1: replica label '-1' is not a number"}}) {
		INFO(bad);
		CHECK(!parse_metrics(bad, &why));
		CHECK(why.rfind(where, 0) == 0);
	}
	for (const auto &[bad, where] : std::vector<std::pair<std::string, std::string>>{
	         {"{\"pools\":[]}", "a JSON object without librpmem's"},
	         {"{\"time_unix_ns\":1,\"pools\":[", "JSON: a value expected"},
	         {"{\"time_unix_ns\":1,\"pools\":[]} x", "JSON: text after the JSON value"},
	         {"{\"a\":\"\\q\"}", "JSON: unknown escape \\q"},
	         {"{\"a\":\"\\ud800\"}", "JSON: a lone surrogate"},
	         {"{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}",
	          "JSON: nested too deep"}}) {
		INFO(bad);
		CHECK(!parse_metrics(bad, &why));
		CHECK(why.rfind(where, 0) == 0);
	}
	const auto escaped = parse_metrics(
	    R"({"time_unix_ns":2e9,"pools":[{"target":"\u00e9\ud83d\ude00\/","descriptor":"d"}]})",
	    &why);
	REQUIRE(escaped);
	CHECK(escaped->pools.at(0).target == "\xc3\xa9\xf0\x9f\x98\x80/");
}

TEST_CASE("rpmem top: rates from two writes, a catch-up's bar and estimate, the state changes",
          "[top]")
{
	top_view v;
	v.update(at(100, {pool("a.set", "connected", 0)}));
	REQUIRE(v.rows().size() == 1);
	CHECK(!v.rows()[0].persists_per_s);                        // one write: no rate yet
	v.update(at(100.5, {pool("a.set", "connected", 0)}, 100)); // the same write again
	CHECK(!v.rows()[0].persists_per_s);
	v.update(at(102, {pool("a.set", "connected", 2000)}));
	REQUIRE(v.rows()[0].persists_per_s);
	CHECK(*v.rows()[0].persists_per_s == Approx(1000));
	CHECK(*v.rows()[0].bytes_per_s == Approx(1024000));
	auto shown = text(v.render({}));
	INFO(shown);
	CHECK(has(shown, "1000 "));
	CHECK(has(shown, "1000.0 KiB/s"));

	v.update(at(103, {pool("a.set", "reconnecting", 3000, 0)}));
	v.update(at(104, {pool("a.set", "lost", 3000, 10 << 20)}));
	shown = text(v.render({}));
	INFO(shown);
	CHECK(has(shown, "lost: the writer goes on without it, 10.0 MiB to go"));
	v.update(at(105, {pool("a.set", "catching_up", 3000, 12 << 20)}));
	shown = text(v.render({}));
	CHECK(has(shown, "estimating the time left"));
	v.update(at(106, {pool("a.set", "catching_up", 3000, 6 << 20)}));
	shown = text(v.render({}));
	INFO(shown);
	// The bar measures against the most it lacked (12 MiB); 6 MiB went in 1 s: 1 s left.
	CHECK(has(shown, "catch-up [##########----------]  50%  6.0 MiB to go of 12.0 MiB, about "
	                 "1 s left"));
	v.update(at(120, {pool("a.set", "catching_up", 3000, 6 << 20)}, 106)); // no new write
	shown = text(v.render({}));
	CHECK(has(shown, "no progress for 14 s"));
	v.update(at(121, {pool("a.set", "connected", 3000, 0)}));
	shown = text(v.render({}));
	INFO(shown);
	CHECK(!has(shown, "catch-up ["));
	CHECK(has(shown, "state changes seen"));
	const auto changes = {
	    "a.set: connected -> reconnecting", "a.set: reconnecting -> lost (10.0 MiB to go)",
	    "a.set: lost -> catching_up (12.0 MiB to go)", "a.set: catching_up -> connected"};
	std::size_t last = 0;
	for (const auto *c : changes) {
		const auto where = shown.find(c);
		CHECK(where != std::string::npos);
		CHECK(where >= last); // in the order they happened
		last = where;
	}
}

TEST_CASE("rpmem top sorts, selects, shows details and fits the terminal", "[top]")
{
	top_view v;
	auto s = at(200, {pool("c.set", "connected", 10), pool("a.set", "connected", 5),
	                  pool("b.set", "lost", 1, 4096)});
	snapshot::session served;
	served.record.pid = 77;
	served.record.descriptor = "a.set";
	served.record.poolset = "/srv/a.set";
	served.record.peer = "127.0.0.1:40000";
	served.record.since = 140;
	served.alive = true;
	served.behind = true;
	s.sessions.push_back(served);
	v.update(s);
	auto names = [&] {
		std::string n;
		for (const auto &r : v.rows())
			n += r.pool.descriptor + " ";
		return n;
	};
	CHECK(names() == "b.set a.set c.set "); // the lost one first, then by name
	CHECK(v.sort() == sort_key::state);
	v.next_sort();
	CHECK(v.sort() == sort_key::pool);
	CHECK(names() == "a.set b.set c.set ");
	v.set_sort(sort_key::errors);
	v.next_sort();
	CHECK(v.sort() == sort_key::state); // cycles

	const top_view::render_options term{120, 40, false, true};
	v.select(1); // from b.set (the first row) to a.set
	v.toggle_details();
	const auto shown = text(v.render(term));
	INFO(shown);
	for (const auto &l : v.render({60, 40, false, true}))
		CHECK(l.size() <= 60);
	CHECK(has(shown, "keys: q quit"));
	CHECK(has(shown, "details: node2 a.set"));
	CHECK(has(shown, "metrics file /tmp/app.prom, written 0 s ago by pid 42 (app)"));
	CHECK(has(shown, "rpmemd on this host: pid 77 serves /srv/a.set for 127.0.0.1:40000, "
	                 "marked possibly behind"));
	CHECK(has(shown, "rpmemd sessions here (/run/user/0/rpmemd): 1 serving"));
	v.close_details();
	CHECK(!has(text(v.render(term)), "details:"));

	// A terminal too short for every row still shows the selected one.
	for (int i = 0; i < 2; ++i)
		v.select(1);
	const auto short_lines = v.render({60, 9, false, true});
	const auto short_term = text(short_lines);
	INFO(short_term);
	CHECK(short_lines.size() == 9);
	CHECK(has(short_term, "node2 c.set"));
	CHECK(!has(short_term, "node2 b.set"));
	// Colours only when asked for: the state word, the selection in reverse video.
	CHECK(!has(shown, "\x1b["));
	const auto colored = text(v.render({200, 40, true, true}));
	CHECK(has(colored, "\x1b[31;1mlost"));
	CHECK(has(colored, "\x1b[7m"));
}

TEST_CASE("rpmem top marks a file not written for longer than its bound as stale", "[top]")
{
	top_view v;
	v.update(at(1000, {pool("a.set", "connected", 10), pool("old.set", "closed", 10)}, 900));
	const auto shown = text(v.render({}));
	INFO(shown);
	CHECK(v.rows()[0].stale);
	CHECK(!v.rows()[1].stale); // a closed pool's file stays as its writer left it
	CHECK(has(shown, "stale: its file was last written 100 s ago"));
	CHECK(has(shown, "1 stale"));
	CHECK(has(shown, "100s!"));
}
