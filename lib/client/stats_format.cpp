// SPDX-License-Identifier: BSD-3-Clause
#include "client/stats_format.hpp"

#include "json/json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <variant>

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
constexpr const char *quantile_members[] = {"p50", "p90", "p99", "p999"};
static_assert(std::size(quantile_members) == std::size(quantiles));

/** One value of a metric for one pool. */
struct sample {
	std::string label;  // what tells it apart in Prometheus (",op=\"persist\""); "" if alone
	const char *member; // its member in the metric's JSON object; nullptr if alone
	std::variant<std::uint64_t, std::int64_t, double> value; // as JSON writes it
	double divisor = 1; // Prometheus writes value / divisor (nanoseconds as seconds)
};
using samples = std::vector<sample>;

samples one(std::variant<std::uint64_t, std::int64_t, double> v, double divisor = 1)
{
	return {{"", nullptr, v, divisor}};
}

/** One metric: its Prometheus family, its JSON member, which pools have it, its values. */
struct metric {
	const char *name, *type, *help;
	const char *member;               // nullptr: Prometheus only
	bool (*has)(const pool_report &); // nullptr: every pool
	samples (*of)(const pool_report &);
};

bool is_async(const pool_report &p)
{
	return p.lag_bytes.has_value();
}

bool counts_throttled(const pool_report &p)
{
	return p.throttled.has_value();
}

bool has_lag_bound(const pool_report &p)
{
	return p.lag_bound_bytes.has_value();
}

bool can_fall_behind(const pool_report &p)
{
	return p.bytes_to_go.has_value();
}

/** Every metric of a pool, in the order of the JSON members (librpmem(7), METRICS). The pool's
 *  identity (target, descriptor, replica; provider, method, mode, state) is no metric: it
 *  labels every Prometheus sample (the last four only rpmem_pool_info's) and leads each JSON
 *  pool. */
const std::array<metric, 15> metrics = {{
    {"rpmem_pool_info", "gauge",
     "A pool this process has open (1); its provider, persist method, mode, state", nullptr,
     nullptr,
     [](const pool_report &p) {
	     return samples{{fmt::format(",provider=\"{}\",method=\"{}\",mode=\"{}\",state=\"{}\"",
	                                 label(p.provider), label(p.method), p.mode, p.state),
	                     nullptr, std::uint64_t{1}}};
     }},
    {"rpmem_pool_up", "gauge", "1 while the pool's connection works, 0 after a failure or close",
     nullptr, nullptr,
     [](const pool_report &p) { return one(std::uint64_t{p.state == "connected"}); }},
    {"rpmem_pool_lanes", "gauge", "Lanes granted", "lanes", nullptr,
     [](const pool_report &p) { return one(std::uint64_t{p.lanes}); }},
    {"rpmem_operations_total", "counter", "Calls that reached the replica, by kind", "operations",
     nullptr,
     [](const pool_report &p) {
	     const auto &s = p.stats;
	     return samples{{",op=\"persist\"", "persist", s.persists},
	                    {",op=\"flush\"", "flush", s.flushes},
	                    {",op=\"drain\"", "drain", s.drains},
	                    {",op=\"read\"", "read", s.reads},
	                    {",op=\"deep_persist\"", "deep_persist", s.deep_persists}};
     }},
    {"rpmem_bytes_total", "counter", "Bytes made durable on the replica, or read back", "bytes",
     nullptr,
     [](const pool_report &p) {
	     return samples{{",op=\"persist\"", "persist", p.stats.bytes_persisted},
	                    {",op=\"read\"", "read", p.stats.bytes_read}};
     }},
    {"rpmem_round_trips_total", "counter", "Round trips to the replica", "round_trips", nullptr,
     [](const pool_report &p) { return one(p.stats.round_trips); }},
    {"rpmem_errors_total", "counter", "Calls on the pool that failed", "errors", nullptr,
     [](const pool_report &p) { return one(p.errors); }},
    {"rpmem_last_persist_timestamp_seconds", "gauge",
     "When the last persist or drain returned successfully (0: none yet)", "last_persist_unix_ns",
     nullptr, [](const pool_report &p) { return one(p.last_persist_unix_ns, 1e9); }},
    {"rpmem_round_trip_seconds", "gauge",
     "Round-trip latency quantiles since the pool opened (upper bound of a power-of-two "
     "bucket)",
     "round_trip_ns", nullptr,
     [](const pool_report &p) {
	     samples out;
	     for (std::size_t i = 0; i < std::size(quantiles); ++i)
		     out.push_back({fmt::format(",quantile=\"{}\"", quantiles[i]),
		                    quantile_members[i], p.stats.quantile_ns(quantiles[i]), 1e9});
	     return out;
     }},
    {"rpmem_async_lag_bytes", "gauge",
     "Bytes persisted locally, not yet on the replica (RPMEM_REPLICATION=async)", "async_lag_bytes",
     is_async, [](const pool_report &p) { return one(*p.lag_bytes); }},
    {"rpmem_async_lag_seconds", "gauge",
     "Age of the oldest persist not yet on the replica (RPMEM_REPLICATION=async)",
     "async_lag_seconds", is_async,
     [](const pool_report &p) { return one(p.lag_seconds.value_or(0.0)); }},
    {"rpmem_async_throttled_total", "counter",
     "Persists that waited because the replica fell behind: the lag bound, or no room to copy "
     "them aside (RPMEM_REPLICATION=async)",
     "async_throttled", counts_throttled, [](const pool_report &p) { return one(*p.throttled); }},
    {"rpmem_async_lag_bound_bytes", "gauge",
     "The lag in bytes past which persists wait for the replica (RPMEM_ASYNC_MAX_LAG_BYTES)",
     "async_lag_bound_bytes", has_lag_bound,
     [](const pool_report &p) { return one(*p.lag_bound_bytes); }},
    {"rpmem_async_lag_bound_seconds", "gauge",
     "The lag in time past which persists wait for the replica (RPMEM_ASYNC_MAX_LAG_MS)",
     "async_lag_bound_seconds", has_lag_bound,
     [](const pool_report &p) { return one(p.lag_bound_seconds.value_or(0.0)); }},
    {"rpmem_replica_bytes_to_go", "gauge",
     "Bytes the replica lacks while lost or catching up (0: in sync)", "bytes_to_go",
     can_fall_behind, [](const pool_report &p) { return one(*p.bytes_to_go); }},
}};

bool reports(const metric &m, const pool_report &p)
{
	return !m.has || m.has(p);
}

double prometheus_value(const sample &s)
{
	return std::visit([&](auto v) { return double(v) / s.divisor; }, s.value);
}

void json_member(json &j, const char *name, const sample &s)
{
	std::visit([&](auto v) { j.member(name, v); }, s.value);
}

/** A metric's members of one pool: a value, or an object of its samples' members. */
void json_metric(json &j, const metric &m, const pool_report &p)
{
	const samples values = m.of(p);
	if (values.size() == 1 && !values[0].member)
		return json_member(j, m.member, values[0]);
	j.key(m.member).begin_object();
	for (const auto &s : values)
		json_member(j, s.member, s);
	j.end_object();
}

} // namespace

std::string prometheus_text(const std::vector<pool_report> &pools, std::int64_t now_unix_ns,
                            std::string_view file)
{
	std::string out;
	for (const auto &m : metrics) {
		// A family no pool has is left out whole (the async ones, in a synchronous
		// process).
		if (m.has && std::none_of(pools.begin(), pools.end(), m.has))
			continue;
		out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", m.name, m.help, m.name, m.type);
		for (const auto &p : pools) {
			if (!reports(m, p))
				continue;
			auto labels = fmt::format("target=\"{}\",descriptor=\"{}\"",
			                          label(p.target), label(p.descriptor));
			if (p.replica)
				labels += fmt::format(",replica=\"{}\"", *p.replica);
			for (const auto &s : m.of(p))
				out += fmt::format("{}{{{}{}}} {}\n", m.name, labels, s.label,
				                   prometheus_value(s));
		}
	}
	const auto open = std::count_if(pools.begin(), pools.end(),
	                                [](const pool_report &p) { return p.state != "closed"; });
	out += fmt::format("# HELP rpmem_stats_timestamp_seconds When this file was written\n"
	                   "# TYPE rpmem_stats_timestamp_seconds gauge\n"
	                   "rpmem_stats_timestamp_seconds{{file=\"{}\"}} {}\n"
	                   "# HELP rpmem_stats_open_pools Pools of this file not closed (0: its "
	                   "process closed them all; the file stays as it left it)\n"
	                   "# TYPE rpmem_stats_open_pools gauge\n"
	                   "rpmem_stats_open_pools{{file=\"{}\"}} {}\n",
	                   label(file), double(now_unix_ns) / 1e9, label(file), open);
	return out;
}

std::string json_text(const std::vector<pool_report> &pools, std::int64_t now_unix_ns)
{
	json j;
	j.begin_object().member("time_unix_ns", now_unix_ns).key("pools").begin_array();
	for (const auto &p : pools) {
		j.begin_object().member("target", p.target).member("descriptor", p.descriptor);
		if (p.replica)
			j.member("replica", std::uint64_t{*p.replica});
		j.member("provider", p.provider)
		    .member("method", p.method)
		    .member("mode", p.mode)
		    .member("state", p.state);
		for (const auto &m : metrics)
			if (m.member && reports(m, p))
				json_metric(j, m, p);
		j.end_object();
	}
	j.end_array().end_object();
	return j.str() + "\n";
}

} // namespace rpmem::client
