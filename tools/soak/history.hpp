// SPDX-License-Identifier: BSD-3-Clause
// rpmem-soak's model of what it acknowledged (main.cpp runs the soak): the options, the content
// of every write as a function of (seed, operation, offset), checksums, the last writer of each
// piece of a lane's slice, the checksum log and the totals.
#pragma once

#include "client/remote_pool.hpp"
#include "rpmem/error.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <random>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace rpmem::soak
{

using clock_type = std::chrono::steady_clock;
using rpmem::client::remote_pool;

constexpr std::size_t header = rpmem::client::header_size;

enum class kind : std::uint8_t { initial, persist, persist_relaxed, flush, deep_persist, drain };
constexpr const char *kind_names[] = {"initial", "persist", "persist-relaxed",
                                      "flush",   "deep",    "flush+drain"};

struct options {
	std::string target;
	std::string poolset;
	unsigned threads = 4;
	unsigned lanes = 2;
	double seconds = 60;
	std::size_t pool_size = 256 << 20;
	std::size_t max_range = 256 << 10;
	unsigned max_batch = 8;
	std::uint64_t seed = 0;
	std::string replica_file;
	std::string log;
	bool keep = false;
};

inline std::uint64_t mix(std::uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/** The content of operation `op` at pool offset o: one pseudo-random word per aligned 8 bytes. */
struct content {
	std::uint64_t seed;
	std::uint64_t word(std::uint64_t op, std::uint64_t index) const
	{
		return mix(seed ^ mix(op) ^ (index * 0xc2b2ae3d27d4eb4fULL));
	}
	void fill(std::uint8_t *dst, std::uint64_t op, std::uint64_t off, std::uint64_t len) const
	{
		std::uint64_t end = off + len;
		while (off < end) {
			std::uint64_t w = word(op, off / 8);
			std::uint64_t in = off % 8;
			std::uint64_t n = std::min<std::uint64_t>(8 - in, end - off);
			if (n == 8)
				std::memcpy(dst, &w, 8);
			else
				for (std::uint64_t i = 0; i < n; ++i)
					dst[i] = static_cast<std::uint8_t>(w >> (8 * (in + i)));
			dst += n;
			off += n;
		}
	}
	/** Offset (relative to off) of the first byte of [p, p+len) that differs, or len. */
	std::uint64_t first_mismatch(const std::uint8_t *p, std::uint64_t op, std::uint64_t off,
	                             std::uint64_t len) const
	{
		std::uint8_t buf[4096];
		for (std::uint64_t done = 0; done < len;) {
			std::uint64_t n = std::min<std::uint64_t>(sizeof buf, len - done);
			fill(buf, op, off + done, n);
			if (std::memcmp(buf, p + done, n) != 0)
				for (std::uint64_t i = 0; i < n; ++i)
					if (buf[i] != p[done + i])
						return done + i;
			done += n;
		}
		return len;
	}
};

/** 64-bit checksum of a byte range (FNV-1a over words, then the tail). */
inline std::uint64_t checksum(const std::uint8_t *p, std::uint64_t len)
{
	std::uint64_t h = 0xcbf29ce484222325ULL ^ len;
	std::uint64_t i = 0;
	for (; i + 8 <= len; i += 8) {
		std::uint64_t w;
		std::memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	for (; i < len; ++i)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return mix(h);
}

/** What last wrote a piece of the pool: the acknowledged operation and its whole range. */
struct writer {
	std::uint64_t end;
	std::uint64_t op;
	std::uint64_t range_off, range_len;
	std::uint64_t sum;
	unsigned lane;
	kind k;
};

/** Pieces of one slice, keyed by start, covering the slice without gaps after the initial fill. */
class last_writer_map
{
public:
	void record(std::uint64_t off, std::uint64_t len, const writer &w)
	{
		if (len == 0)
			return;
		std::uint64_t end = off + len;
		auto it = pieces_.lower_bound(off);
		if (it != pieces_.begin()) {
			auto prev = std::prev(it);
			if (prev->second.end > off) {
				writer tail = prev->second;
				prev->second.end = off;
				if (tail.end > end)
					pieces_.emplace(end, tail);
			}
		}
		it = pieces_.lower_bound(off);
		while (it != pieces_.end() && it->first < end) {
			if (it->second.end > end) {
				writer tail = it->second;
				pieces_.erase(it);
				pieces_.emplace(end, tail);
				break;
			}
			it = pieces_.erase(it);
		}
		writer n = w;
		n.end = end;
		pieces_.emplace(off, n);
	}
	const std::map<std::uint64_t, writer> &pieces() const { return pieces_; }

private:
	std::map<std::uint64_t, writer> pieces_;
};

struct slice {
	std::uint64_t begin, end;
	unsigned lane;
	last_writer_map map;
	std::deque<writer> history; // the last acknowledged ranges, to explain a mismatch
};
constexpr std::size_t history_size = 512;

class checksum_log
{
public:
	explicit checksum_log(const std::string &path)
	{
		if (path.empty())
			return;
		// Follows no link planted at the name (O_NOFOLLOW).
		int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		                0644);
		f_ = fd < 0 ? nullptr : ::fdopen(fd, "w");
		if (!f_)
			throw rpmem::error(errno, fmt::format("cannot create the checksum log {}: "
			                                      "check the directory and --log",
			                                      path));
	}
	~checksum_log()
	{
		if (f_)
			std::fclose(f_);
	}
	checksum_log(const checksum_log &) = delete;
	checksum_log &operator=(const checksum_log &) = delete;
	bool enabled() const { return f_ != nullptr; }
	void write(const std::string &lines)
	{
		std::lock_guard lk(m_);
		std::fwrite(lines.data(), 1, lines.size(), f_);
	}

private:
	std::FILE *f_ = nullptr;
	std::mutex m_;
};

struct totals {
	std::atomic<std::uint64_t> ops{0}, ranges{0}, bytes{0};
	std::atomic<std::uint64_t> per_kind[6]{};
};

struct verify_result {
	std::uint64_t bytes = 0, pieces = 0, checksummed = 0, mismatched_bytes = 0,
	              mismatched_pieces = 0, checksum_mismatches = 0;
};

} // namespace rpmem::soak
