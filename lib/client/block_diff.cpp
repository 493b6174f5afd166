// SPDX-License-Identifier: BSD-3-Clause
#include "client/block_diff.hpp"

#include "checksum/block_sums.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <future>

namespace rpmem::client
{

namespace
{

/** Bytes moved per step, either way (the old full copy's chunk): one persist round trip, or
 *  one read and one local persist. */
constexpr std::uint64_t move_chunk = 4u << 20;

} // namespace

std::uint64_t block_diff::bytes() const
{
	std::uint64_t n = 0;
	for (const auto &r : ranges)
		n += r.size();
	return n;
}

std::vector<control::block_sum> local_checksums(const std::uint8_t *local, std::uint64_t begin,
                                                std::uint64_t end, std::uint32_t block)
{
	std::vector<control::block_sum> out(control::checksum_count(
	    {begin, end - begin, block, control::checksum_algorithm::xxh3_128}));
	checksum::blocks(local + begin, end - begin, block, out);
	return out;
}

block_diff diff_sums(const std::vector<control::block_sum> &a,
                     const std::vector<control::block_sum> &b, std::uint64_t begin,
                     std::uint64_t end, std::uint32_t block)
{
	block_diff d;
	d.block = block;
	d.begin = begin;
	d.end = end;
	d.blocks = a.size();
	for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
		if (a[i] == b[i])
			continue;
		++d.differing_blocks;
		const std::uint64_t from = begin + std::uint64_t{i} * block;
		const std::uint64_t to = std::min(end, from + block);
		if (!d.ranges.empty() && d.ranges.back().end == from)
			d.ranges.back().end = to;
		else
			d.ranges.push_back({from, to});
	}
	return d;
}

block_diff compare_blocks(remote_pool &rp, const std::uint8_t *local, std::uint64_t begin,
                          std::uint64_t end, std::uint32_t block)
{
	if (end <= begin)
		return block_diff{block, begin, end, 0, 0, {}, 0, 0};
	using clock = std::chrono::steady_clock;
	const auto start = clock::now();
	double local_seconds = 0;
	// The local sums on a thread of their own while rpmemd hashes its copy: the comparison
	// costs about the slower of the two, not their sum.
	auto mine = std::async(std::launch::async, [=, &local_seconds] {
		const auto t0 = clock::now();
		auto sums = local_checksums(local, begin, end, block);
		local_seconds = std::chrono::duration<double>(clock::now() - t0).count();
		return sums;
	});
	std::vector<control::block_sum> theirs;
	try {
		theirs = rp.checksums(begin, end - begin, block);
	} catch (...) {
		mine.wait();
		throw;
	}
	auto d = diff_sums(mine.get(), theirs, begin, end, block);
	d.local_seconds = local_seconds;
	d.compare_seconds = std::chrono::duration<double>(clock::now() - start).count();
	return d;
}

namespace
{

/** Calls step(offset, length) for every chunk of `ranges`, then progress(done, total). */
template <class Step>
void chunked(const std::vector<byte_span> &ranges, const progress_fn &progress, Step &&step)
{
	std::uint64_t total = 0, done = 0;
	for (const auto &r : ranges)
		total += r.size();
	for (const auto &r : ranges) {
		for (std::uint64_t off = r.begin; off < r.end; off += move_chunk) {
			const std::uint64_t n = std::min(move_chunk, r.end - off);
			step(off, n);
			done += n;
			if (progress)
				progress(done, total);
		}
	}
}

} // namespace

void push_ranges(remote_pool &rp, const std::vector<byte_span> &ranges, const progress_fn &progress)
{
	chunked(ranges, progress,
	        [&](std::uint64_t off, std::uint64_t n) { rp.persist(off, n, 0, 0); });
}

void pull_ranges(remote_pool &rp, std::uint8_t *local, const std::vector<byte_span> &ranges,
                 const std::function<void(std::uint64_t, std::uint64_t)> &persist,
                 const progress_fn &progress)
{
	chunked(ranges, progress, [&](std::uint64_t off, std::uint64_t n) {
		rp.read(local + off, off, n, 0);
		persist(off, n);
	});
}

} // namespace rpmem::client
