// SPDX-License-Identifier: BSD-3-Clause
// The log that tests replicated_pool's prefix promise ("a replica always holds a prefix of the
// master's persists"): rpmem_async_writer appends steps of records to it and a replica's copy
// is checked after the writer was killed mid-stream.
//
// Pool layout (offsets from the pool's start):
//   4096  commit record {u64 step, u64 end}: persisted after every step's records
//   8192  records, appended: {u32 magic, u32 length, u64 step, u32 index, u32 pad} + payload,
//         each padded to 8 bytes; a step's records are persisted one by one or all together
// Steps count from 1; a step holds 1..6 records of mixed sizes: bytes that travel inside the
// lane request and bytes that are RDMA-written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace rpmem::test::prefix_log
{

inline constexpr std::size_t commit_offset = 4096;
inline constexpr std::size_t log_offset = 8192;
inline constexpr std::uint32_t magic = 0xa5c3f00d;
inline constexpr std::size_t header_size = 24;
inline constexpr std::size_t max_payload = 48 * 1024;
inline constexpr std::size_t max_record = header_size + max_payload + 8;

struct commit {
	std::uint64_t step = 0;
	std::uint64_t end = 0; // pool offset after the step's last record
};

inline std::uint8_t payload_byte(std::uint64_t step, std::uint32_t index, std::size_t j)
{
	return static_cast<std::uint8_t>((step * 131) ^ (index * 29) ^ (j * 7) ^ 0x5a);
}

inline std::size_t record_size(std::size_t payload)
{
	return (header_size + payload + 7) / 8 * 8;
}

/** The payload sizes of one step: small ones travel inline, large ones are RDMA-written. */
inline std::vector<std::size_t> step_sizes(std::mt19937_64 &rng)
{
	std::vector<std::size_t> out(1 + rng() % 6);
	for (auto &n : out) {
		switch (rng() % 3) {
		case 0:
			n = 8 + rng() % 200;
			break;
		case 1:
			n = 200 + rng() % 2800;
			break;
		default:
			n = 4096 + rng() % (max_payload - 4096);
			break;
		}
	}
	return out;
}

/** Writes one record at dst; returns its size. */
inline std::size_t write_record(std::uint8_t *dst, std::uint64_t step, std::uint32_t index,
                                std::size_t payload)
{
	std::uint32_t len = static_cast<std::uint32_t>(payload), pad = 0;
	std::memcpy(dst, &magic, 4);
	std::memcpy(dst + 4, &len, 4);
	std::memcpy(dst + 8, &step, 8);
	std::memcpy(dst + 16, &index, 4);
	std::memcpy(dst + 20, &pad, 4);
	for (std::size_t j = 0; j < payload; ++j)
		dst[header_size + j] = payload_byte(step, index, j);
	return record_size(payload);
}

struct record {
	std::size_t offset;
	std::size_t end;
	std::uint64_t step;
	std::uint32_t index;
};

/** The record at `off` if it is whole (header and every payload byte), else nullopt. */
inline std::optional<record> read_record(const std::uint8_t *pool, std::size_t size,
                                         std::size_t off)
{
	if (off + header_size > size)
		return std::nullopt;
	std::uint32_t m, len, index;
	std::uint64_t step;
	std::memcpy(&m, pool + off, 4);
	std::memcpy(&len, pool + off + 4, 4);
	std::memcpy(&step, pool + off + 8, 8);
	std::memcpy(&index, pool + off + 16, 4);
	if (m != magic || len > max_payload || off + record_size(len) > size)
		return std::nullopt;
	for (std::size_t j = 0; j < len; ++j)
		if (pool[off + header_size + j] != payload_byte(step, index, j))
			return std::nullopt;
	return record{off, off + record_size(len), step, index};
}

struct verdict {
	std::string violation; // empty: the replica holds a prefix of the persists
	commit committed;      // the replica's commit record
	std::size_t records = 0;
};

/**
 * Checks that a replica's pool bytes are a prefix of the writer's persists: every record the
 * commit record covers is whole, the records after it belong to the next step only and come in
 * order, and nothing lies beyond them but one torn record (the write in flight at the kill).
 */
inline verdict check(const std::uint8_t *pool, std::size_t size)
{
	verdict v;
	std::memcpy(&v.committed.step, pool + commit_offset, 8);
	std::memcpy(&v.committed.end, pool + commit_offset + 8, 8);
	const commit c = v.committed;
	std::uint64_t step = 0;
	std::uint32_t index = 0;
	std::size_t off = log_offset;
	bool committed_seen = c.end == 0;
	while (auto r = read_record(pool, size, off)) {
		const bool next_step = r->step == step + 1 && r->index == 0;
		const bool same_step = r->step == step && r->index == index + 1 && step != 0;
		if (!next_step && !same_step) {
			v.violation =
			    fmt::format("record at offset {} is step {} index {} after step "
			                "{} index {}: a persist in between is missing",
			                off, r->step, r->index, step, index);
			return v;
		}
		step = r->step;
		index = r->index;
		++v.records;
		if (r->end == c.end) {
			committed_seen = true;
			if (step != c.step) {
				v.violation =
				    fmt::format("the commit record says step {} ends at {}, "
				                "the record ending there is step {}",
				                c.step, c.end, step);
				return v;
			}
		}
		if (step > c.step + 1) {
			v.violation =
			    fmt::format("record of step {} at offset {}, but the commit "
			                "record says step {}: step {}'s commit is missing",
			                step, off, c.step, c.step + 1);
			return v;
		}
		off = r->end;
	}
	if (!committed_seen) {
		v.violation = fmt::format("the commit record says step {} ends at offset {}, but "
		                          "the whole records end at {}: a persist before the "
		                          "commit is missing",
		                          c.step, c.end, off);
		return v;
	}
	for (std::size_t i = off + max_record; i < size; ++i)
		if (pool[i] != 0) {
			v.violation =
			    fmt::format("byte {} is written, beyond the whole records (end "
			                "{}) and one torn record: a later persist arrived "
			                "before an earlier one",
			                i, off);
			return v;
		}
	return v;
}

} // namespace rpmem::test::prefix_log
