// SPDX-License-Identifier: BSD-3-Clause
// Pool reports with every metric set, for the tests of the metrics file's writer
// (stats_export_test) and of rpmem top's reader (top_test): one set of values, both sides.
#pragma once

#include "client/stats_format.hpp"

#include <vector>

namespace rpmem::test
{

/** A synchronous pool; its target needs escaping in both formats. */
inline client::pool_report sample_report()
{
	client::pool_report r;
	r.target = "me@node\"2\\x";
	r.descriptor = "pools/a b.set";
	r.provider = "tcp";
	r.method = "gpspm";
	r.lanes = 4;
	r.stats.persists = 10;
	r.stats.bytes_persisted = 640;
	r.stats.round_trips = 10;
	r.stats.latency_ns_log2[14] = 9; // [16 us, 32 us)
	r.stats.latency_ns_log2[20] = 1; // [1 ms, 2 ms)
	r.errors = 2;
	r.last_persist_unix_ns = 1'800'000'000'000'000'000;
	return r;
}

/** The reports the format tests write: a synchronous pool, and an asynchronous replica that
 *  failed, with every counter set. */
inline std::vector<client::pool_report> every_metric()
{
	auto async = sample_report();
	async.descriptor = "async.set";
	async.mode = "async";
	async.replica = 1;
	async.state = "failed";
	async.stats.flushes = 3;
	async.stats.drains = 2;
	async.stats.reads = 5;
	async.stats.deep_persists = 1;
	async.stats.bytes_read = 4096;
	async.lag_bytes = 4096;
	async.lag_seconds = 0.25;
	async.throttled = 3;
	async.lag_bound_bytes = 4 << 20;
	async.lag_bound_seconds = 1.5;
	auto healing = sample_report();
	healing.descriptor = "healing.set";
	healing.state = "catching_up";
	healing.bytes_to_go = 8192;
	return {sample_report(), async, healing};
}

} // namespace rpmem::test
