// SPDX-License-Identifier: BSD-3-Clause
// rpmem verify POOLSET: the master's local parts against each remote replica, range by range.
// The replica is read back through the data path (remote_pool::read) and the ranges that
// differ are reported (bytes libpmemobj never replicates left out: unreplicated.hpp).
#include "master.hpp"
#include "replicas.hpp"
#include "tool.hpp"
#include "unreplicated.hpp"
#include "json/json.hpp"

#include "client/remote_pool.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace rpmem::tool
{

namespace
{

using client::remote_pool;

constexpr std::uint64_t verify_chunk = 1u << 20;
constexpr std::uint64_t block = 4096;

struct range {
	std::uint64_t begin, end;
};

/** Appends the byte ranges where a and b (at pool offset base) differ, merging neighbours. */
void diff_chunk(const std::uint8_t *a, const std::uint8_t *b, std::uint64_t len, std::uint64_t base,
                std::vector<range> &out)
{
	for (std::uint64_t off = 0; off < len; off += block) {
		std::uint64_t n = std::min(block, len - off);
		if (std::memcmp(a + off, b + off, n) == 0)
			continue;
		std::uint64_t first = off, last = off + n - 1;
		while (a[first] == b[first])
			++first;
		while (a[last] == b[last])
			--last;
		range d{base + first, base + last + 1};
		if (!out.empty() && out.back().end + block > d.begin)
			out.back().end = d.end;
		else
			out.push_back(d);
	}
}

/** What verify found on one replica. */
struct verify_result {
	std::size_t replica = 0;
	bool marked_behind = false;
	std::vector<std::string> header_problems;
	std::vector<range> diffs;
	std::uint64_t diff_bytes = 0;
	std::uint64_t compared = 0; // bytes compared
	std::uint64_t skipped = 0;  // bytes libpmemobj never replicates, not compared
	std::size_t skipped_ranges = 0;
	std::string error; // could not compare at all (json mode; text mode throws)
	bool in_sync() const { return error.empty() && diffs.empty() && header_problems.empty(); }
};

verify_result verify_replica(const poolset::poolset &ps, const master &m, ring &ring, std::size_t r)
{
	const auto &rep = ps.replicas[r];
	verify_result res;
	res.replica = r;
	scratch buf(m.size());
	unsigned lanes = 1;
	control::pool_attr have{};
	auto pool =
	    remote_pool::open(rep.target, rep.descriptor, buf.data(), m.size(), &lanes, &have);
	res.marked_behind = pmdk::marked_behind(have);
	if (m.header()) {
		ring.learn(r, have.uuid, have.prev_uuid, have.next_uuid);
		auto want = expected_attr(m, ring, r, have);
		res.header_problems = attr_differences(want, have, ring, r);
	} else if (!have.is_zero()) {
		res.header_problems.push_back("the replica has a pool header, the master has none "
		                              "(OPTION NOHDRS)");
	}
	const std::uint64_t begin = m.data_offset();
	const auto skip = ignored(m);
	for (const auto &s : skip)
		res.skipped += s.end > begin ? s.end - std::max(s.begin, begin) : 0;
	res.skipped_ranges = skip.size();
	res.compared = m.size() - begin - res.skipped;
	std::size_t next = 0;
	for (std::uint64_t off = begin; off < m.size(); off += verify_chunk) {
		std::uint64_t n = std::min(verify_chunk, m.size() - off);
		pool->read(buf.data(), off, n, 0);
		mask_ignored(m, skip, next, buf.data(), off, n);
		diff_chunk(m.base() + off, buf.data(), n, off, res.diffs);
	}
	pool->close();
	for (const auto &d : res.diffs)
		res.diff_bytes += d.end - d.begin;
	return res;
}

void print_text(const poolset::poolset &ps, const verify_result &res, std::size_t max_ranges)
{
	const auto name = replica_name(ps, res.replica);
	if (res.marked_behind)
		fmt::print(
		    "{}: marked possibly behind the master (its writer has it open, or could "
		    "leave it behind and did not close it cleanly); the comparison below "
		    "says whether it is; `rpmem sync` clears the mark\n",
		    name);
	for (const auto &d : res.header_problems)
		fmt::print("{}: header: {}\n", name, d);
	if (res.in_sync()) {
		fmt::print(
		    "{}: in sync ({} compared{})\n", name, size_text(res.compared),
		    res.skipped_ranges == 0
		        ? ""
		        : fmt::format("; {} in {} range(s) skipped: what libpmemobj never "
		                      "replicates (run-time fields, huge-chunk footers, free "
		                      "space)",
		                      size_text(res.skipped), res.skipped_ranges));
		return;
	}
	if (!res.diffs.empty())
		fmt::print("{}: {} range(s) differ, {} in all:\n", name, res.diffs.size(),
		           size_text(res.diff_bytes));
	for (std::size_t i = 0; i < res.diffs.size() && i < max_ranges; ++i)
		fmt::print("  0x{:x}-0x{:x} ({} bytes)\n", res.diffs[i].begin, res.diffs[i].end,
		           res.diffs[i].end - res.diffs[i].begin);
	if (res.diffs.size() > max_ranges)
		fmt::print("  ... and {} more (--max-ranges)\n", res.diffs.size() - max_ranges);
}

void add_json(json &j, const poolset::poolset &ps, const verify_result &res, std::size_t max_ranges)
{
	const auto &rep = ps.replicas[res.replica];
	j.begin_object()
	    .member("replica", std::uint64_t{res.replica})
	    .member("target", rep.target)
	    .member("descriptor", rep.descriptor)
	    .member("status", !res.error.empty() ? "error"
	                      : res.in_sync()    ? "in_sync"
	                                         : "differ");
	if (!res.error.empty()) {
		j.member("error", res.error).end_object();
		return;
	}
	j.member("marked_behind", res.marked_behind).key("header_problems").begin_array();
	for (const auto &p : res.header_problems)
		j.value(p);
	j.end_array()
	    .member("compared_bytes", res.compared)
	    .member("skipped_bytes", res.skipped)
	    .member("skipped_ranges", std::uint64_t{res.skipped_ranges})
	    .member("differing_bytes", res.diff_bytes)
	    .member("differing_range_count", std::uint64_t{res.diffs.size()})
	    .key("differing_ranges")
	    .begin_array();
	for (std::size_t i = 0; i < res.diffs.size() && i < max_ranges; ++i)
		j.begin_object()
		    .member("begin", res.diffs[i].begin)
		    .member("end", res.diffs[i].end)
		    .end_object();
	j.end_array().end_object();
}

} // namespace

int cmd_verify(const replicate_args &a)
{
	poolset::poolset ps;
	std::unique_ptr<master> m;
	std::vector<std::size_t> which;
	try {
		ps = load(a.poolset);
		which = selected(ps, a.replicas);
		m = std::make_unique<master>(ps);
	} catch (const failure &f) {
		throw failure(f.what(), exit_usage); // could not compare at all
	}
	ring ring(ps, *m);
	int result = exit_ok;
	json j;
	if (a.json)
		j.begin_object().member("poolset", a.poolset).key("replicas").begin_array();
	for (auto r : which) {
		verify_result res;
		try {
			res = verify_replica(ps, *m, ring, r);
		} catch (const rpmem::error &e) {
			if (!a.json)
				throw failure(
				    fmt::format("{}: {}", replica_name(ps, r), rpmem::describe(e)),
				    exit_usage);
			res.replica = r;
			res.error = rpmem::describe(e);
			result = exit_usage;
		}
		if (!res.in_sync() && result == exit_ok)
			result = exit_differ;
		if (a.json)
			add_json(j, ps, res, a.max_ranges);
		else
			print_text(ps, res, a.max_ranges);
	}
	if (a.json) {
		j.end_array()
		    .member("in_sync", result == exit_ok)
		    .member("exit_status", result)
		    .end_object();
		fmt::print("{}\n", j.str());
	}
	return result;
}

} // namespace rpmem::tool
