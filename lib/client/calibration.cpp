// SPDX-License-Identifier: BSD-3-Clause
#include "client/calibration.hpp"

#include "client/lane.hpp"
#include "client/persist_method.hpp"

#include <algorithm>
#include <vector>

namespace rpmem::client
{

namespace
{

/** The least of the samples: on a shared machine noise only ever adds time, so the least is
 * what each way costs; a median of a few samples followed noise (a 4 KiB GPSPM persist,
 * inline everywhere else, was once measured dearer than its RDMA write). */
double least(const std::vector<double> &v)
{
	return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

} // namespace

calibration calibrate(persist_method &m, lane_state &l, std::uint64_t at, const std::uint8_t *src,
                      void *desc, std::uint64_t small, std::uint64_t large, unsigned rounds)
{
	const lane_batch saved = l.batch;
	// One persist of `size` bytes with every range inline (threshold size) or none (0).
	auto probe = [&](std::uint64_t size, bool inline_) {
		l.batch = lane_batch(saved.slot(), saved.capacity(), inline_ ? size : 0);
		auto t0 = std::chrono::steady_clock::now();
		m.flush(l, {at, size}, src, desc);
		m.drain(l, true);
		return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() -
		                                                 t0)
		    .count();
	};
	std::vector<double> times[2][2]; // [small|large][inline|rma]
	const std::uint64_t sizes[2] = {small, large};
	for (unsigned r = 0; r <= rounds; ++r) {
		for (unsigned s = 0; s < 2; ++s) {
			// Alternate which way goes first: neither always finds the caches warm.
			for (unsigned k = 0; k < 2; ++k) {
				unsigned way = (k + r) % 2;
				double us = probe(sizes[s], way == 0);
				if (r > 0)
					times[s][way].push_back(us);
			}
		}
	}
	l.batch = saved;
	calibration c;
	c.small = {small, least(times[0][0]), least(times[0][1])};
	c.large = {large, least(times[1][0]), least(times[1][1])};
	c.inline_threshold = inline_crossover(
	    c.small, c.large,
	    m.kind() == control::persist_method::gpspm ? tie_goes::inline_ : tie_goes::rdma);
	c.round_trip = std::chrono::nanoseconds(
	    static_cast<std::int64_t>(std::min(c.small.inline_us, c.small.rma_us) * 1000));
	return c;
}

} // namespace rpmem::client
