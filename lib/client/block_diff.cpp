// SPDX-License-Identifier: BSD-3-Clause
#include "client/block_diff.hpp"

#include "checksum/block_sums.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <future>

namespace rpmem::client
{

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

} // namespace rpmem::client
