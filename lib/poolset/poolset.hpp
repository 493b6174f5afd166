// SPDX-License-Identifier: BSD-3-Clause
// Pool set files (PMDK syntax, poolset(5)): parsed once here, shared by library, daemon and tools.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rpmem::poolset
{

struct part {
	std::uint64_t size = 0; // bytes, > 0 (PMDK's AUTO size and directory parts: unsupported)
	std::string path;       // absolute
	unsigned line = 0;      // where it was declared
};

/** A replica: local (parts) or remote (target + descriptor). Replica 0 is the master. */
struct replica {
	std::vector<part> parts; // empty for a remote replica
	std::string target;      // remote: [user@]host[:port]
	std::string descriptor;  // remote: pool set name relative to rpmemd's poolset dir
	unsigned line = 0;

	bool is_remote() const { return !target.empty(); }
	/** Sum of part sizes (parse() guarantees it fits in 64 bits). */
	std::uint64_t total_size() const;
};

struct options {
	bool single_header = false; // OPTION SINGLEHDR
	bool no_headers = false;    // OPTION NOHDRS
};

struct poolset {
	std::string file; // where it was read from ("<string>" when parsed from memory)
	std::vector<replica> replicas;
	options opts;

	/** Bytes of the pool as seen through replica r (PMDK rules: minus a 4 KiB header per
	 * part, once with SINGLEHDR, none with NOHDRS). Local replicas only. */
	std::uint64_t usable_size(std::size_t r = 0) const;
	bool has_remote() const;

	/** PMDK's "pool size" of replica r (set->poolsize): the contiguous mapping from part 0's
	 * header to the end, i.e. usable_size() plus part 0's header when there are headers.
	 * libpmemobj passes this as rpmem_create/rpmem_open's pool_size and rpmemd requires its
	 * own pool to be at least as large. Part sizes are rounded down to 4 KiB as PMDK maps
	 * them. Local replicas only; throws rpmem::error(EINVAL) for a remote or missing one. */
	std::uint64_t pool_size(std::size_t r = 0) const;
	/** Number of 4 KiB part headers in each local replica: parts, 1 (SINGLEHDR), 0 (NOHDRS). */
	std::size_t header_count(std::size_t r = 0) const;
};

/** Size of one PMDK part header (POOL_HDR_SIZE); also the alignment parts are rounded to. */
inline constexpr std::uint64_t header_size = 4096;

/** A syntax or semantic error; what() is "<file>:<line>: <what is wrong> — <what to do>",
 * naming the offending token. Line 0 (the file could not be read) prints as "<file>: ...". */
class parse_error : public std::runtime_error
{
public:
	parse_error(const std::string &file, unsigned line, const std::string &what);
	const std::string &file() const { return file_; }
	unsigned line() const { return line_; }

private:
	std::string file_;
	unsigned line_;
};

/** Parses pool set text. name is used in error messages. */
poolset parse(std::string_view text, const std::string &name = "<string>");
/** Reads and parses a file; an unreadable file is a parse_error at line 0 naming the errno. */
poolset parse_file(const std::string &path);

/** Parses a size as PMDK's util_parse_size: digits with an optional, case-sensitive suffix
 * B, K/M/G/T/P or KiB..PiB (binary), kB/MB/GB/TB/PB (decimal). Unlike PMDK, rejects signs and
 * values above 2^64 - 1. 0 is accepted here; parse() rejects a zero part size. */
bool parse_size(std::string_view s, std::uint64_t &out);

/** True when the file starts with the PMEMPOOLSET signature. PMDK treats any other file named
 * by a descriptor as a single-part pool (a plain pool file or Device DAX), so callers test
 * this before parse_file(). An unreadable file is a parse_error at line 0 naming the errno. */
bool is_poolset_file(const std::string &path);

/** A canonical pool set file for ps: signature, options, then the replicas in order, sizes
 * with the largest exact binary suffix. parse(to_string(ps)) yields ps again (files, lines
 * aside). Throws rpmem::error(EINVAL) when ps cannot be written as a valid pool set (no
 * parts in a local replica, a relative or blank-containing path, zero size, ...). */
std::string to_string(const poolset &ps);

} // namespace rpmem::poolset
