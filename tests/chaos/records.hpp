// SPDX-License-Identifier: BSD-3-Clause
// The heart of the chaos checks, pure (no files, no processes, no libfabric): given a way to
// read a replica's bytes, where a writer's records lie, what a replica must hold (covered) and
// what the writer acknowledged before and after the read, says whether the replica holds what
// it must. writer::check_replica reads a part file through it; tests/chaos/records_test.cpp
// feeds it doctored images (a lost acknowledged record, a hole in an asynchronous prefix) and
// shows it catches them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rpmem::chaos
{

struct record_layout {
	std::uint64_t slots = 0; // records per thread's ring
	std::function<std::uint64_t(std::uint64_t t, std::uint64_t k)> record_at; // record k of t
	std::function<std::uint64_t(std::uint64_t t)> count_at; // thread t's counter
};

/** Reads n bytes at off; false when it cannot. */
using read_fn = std::function<bool(std::uint64_t off, void *buf, std::size_t n)>;
/** What the writer has acknowledged per thread now (read before and after the replica). */
using acked_fn = std::function<std::vector<std::uint64_t>()>;

/** Checks one replica ("what" names it in messages): every record of thread t up to covered[t]
 *  whole and the counter at least covered[t] (the newest up to `window` records; older slots
 *  may hold newer records already), and when `prefix` (asynchronous) the records present form
 *  a prefix of each thread's records, reaching covered[t]. "" or what is wrong, with the bytes
 *  found and expected. */
std::string check_records(const std::string &what, const read_fn &read, const record_layout &l,
                          const std::vector<std::uint64_t> &covered, const acked_fn &acked,
                          bool prefix, std::uint64_t window = 256);

} // namespace rpmem::chaos
