// SPDX-License-Identifier: BSD-3-Clause
#include "chaos/records.hpp"

#include "chaos/history.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace rpmem::chaos
{

namespace
{

std::string words_text(const std::uint64_t *w)
{
	std::string s;
	for (std::size_t i = 0; i < record_words; ++i)
		s += fmt::format("{}{:016x}", i ? " " : "", w[i]);
	return s;
}

} // namespace

std::string check_records(const std::string &what, const read_fn &read, const record_layout &l,
                          const std::vector<std::uint64_t> &covered, const acked_fn &acked,
                          bool prefix, std::uint64_t window)
{
	const std::uint64_t slots = l.slots;
	if (slots == 0)
		return {}; // the writer has not laid out its pool yet
	// Read first, then what was acknowledged since: a slot the writer may have written again
	// (SLOTS records later) is not judged.
	struct reading {
		std::uint64_t count = 0;
		std::uint64_t lo = 0, hi = 0;
		std::vector<std::array<std::uint64_t, record_words>> recs;
	};
	const auto before = acked();
	const auto nthreads = std::min(covered.size(), before.size());
	std::vector<reading> rd(nthreads);
	for (std::size_t t = 0; t < nthreads; ++t) {
		auto &x = rd[t];
		if (!read(l.count_at(t), &x.count, 8))
			return fmt::format("{}: cannot read thread {}'s counter", what, t);
		// Prefix: from the newest acknowledged down; else the newest covered.
		x.hi = prefix ? std::max(before[t], covered[t]) : covered[t];
		x.lo = x.hi > window ? x.hi - window + 1 : 1;
		if (before[t] + 2 > slots) // older slots hold newer records already
			x.lo = std::max<std::uint64_t>(x.lo, before[t] + 2 - slots);
		if (x.hi == 0 || x.hi < x.lo)
			continue;
		// Newest first: a record found present was applied before everything read after
		// it, so a hole below it is a hole (asynchronous: persists arrive in order).
		for (std::uint64_t k = x.hi; k >= x.lo; --k) {
			std::array<std::uint64_t, record_words> w{};
			if (!read(l.record_at(t, k), w.data(), record_size))
				return fmt::format("{}: cannot read thread {} record {}", what, t,
				                   k);
			x.recs.push_back(w);
		}
	}
	const auto after = acked();
	for (std::size_t t = 0; t < nthreads && t < after.size(); ++t) {
		const auto &x = rd[t];
		if (x.hi == 0 || x.hi < x.lo)
			continue;
		const std::uint64_t safe = after[t] + 2 > slots ? after[t] + 2 - slots : 1;
		if (!prefix && x.count < covered[t])
			return fmt::format("{}: thread {}'s counter is {}, but {} records are "
			                   "acknowledged and covered",
			                   what, t, x.count, covered[t]);
		bool seen_present = false;
		std::uint64_t newest = 0;
		for (std::size_t i = 0; i < x.recs.size(); ++i) {
			const std::uint64_t k = x.hi - i;
			if (k < safe)
				break;
			bool whole = true;
			for (std::size_t j = 0; j < record_words && whole; ++j)
				whole = x.recs[i][j] == word(t, k, j);
			if (whole && !seen_present) {
				seen_present = true;
				newest = k;
			}
			// Synchronous: only what is covered must be there (a replica being caught
			// up gets newer blocks in any order). Asynchronous: nothing missing below a
			// record that arrived.
			if (!whole && (prefix ? seen_present : k <= covered[t])) {
				std::array<std::uint64_t, record_words> want{};
				for (std::size_t j = 0; j < record_words; ++j)
					want[j] = word(t, k, j);
				return fmt::format(
				    "{}: thread {} record {} (offset {}) is not whole: {}\n"
				    "      expected {}\n      {}; covered {}, acknowledged {} "
				    "before "
				    "the read and {} after",
				    what, t, k, l.record_at(t, k), words_text(x.recs[i].data()),
				    words_text(want.data()),
				    prefix
				        ? fmt::format(
				              "records up to {} are there: a persist before "
				              "one that arrived is missing (not a prefix)",
				              newest)
				        : std::string("acknowledged while the replica was in sync"),
				    covered[t], before[t], after[t]);
			}
		}
		if (prefix && covered[t] >= x.lo && covered[t] >= safe && newest < covered[t])
			return fmt::format("{}: thread {} holds records up to {}, but a barrier "
			                   "covered {} while it was in sync",
			                   what, t, newest, covered[t]);
	}
	return {};
}

} // namespace rpmem::chaos
