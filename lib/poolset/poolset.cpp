// SPDX-License-Identifier: BSD-3-Clause
// Pool set file parser. Follows PMDK 1.12's util_poolset_parse (src/common/set.c) and
// util_parse_size (src/common/util.c), so what passes here also opens in libpmemobj on the
// client, except where we are deliberately more lenient, which only matters for files
// libpmemobj reads (the client's, not rpmemd's): blanks after PMEMPOOLSET, lines holding only
// blanks, and blanks before REPLICA/OPTION are accepted (PMDK rejects them). Stricter than PMDK,
// to fail early with a clear message: sizes above 2^64 (PMDK wraps), SINGLEHDR with NOHDRS
// (PMDK only logs it), a path used twice (PMDK fails later on flock), control characters.
// Not supported: size AUTO (Device DAX) and directory parts (PMDK stat()s paths while parsing;
// this parser never touches the file system).
#include "poolset/poolset.hpp"

#include "rpmem/error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>

namespace rpmem::poolset
{

namespace
{

constexpr std::string_view signature = "PMEMPOOLSET";
constexpr std::string_view part_form = "'<size> <absolute path>'";
constexpr std::string_view size_syntax =
    "use a positive integer with an optional suffix B, K, M, G, T, P, KiB, MiB, GiB, TiB, PiB "
    "(binary) or kB, MB, GB, TB, PB (decimal)";
constexpr std::string_view replica_syntax =
    "write REPLICA alone for a local replica or 'REPLICA [user@]host[:port] <pool set name>' "
    "for a remote one";
// A pool set is a handful of lines; anything bigger is a pool file or a device named by mistake.
constexpr std::size_t max_file_size = 1 << 20;

[[noreturn]] void fail(const std::string &file, unsigned line, const std::string &what,
                       std::string_view todo)
{
	throw parse_error(file, line, what + " \u2014 " + std::string(todo));
}

std::string quote(std::string_view s)
{
	return "'" + std::string(s) + "'";
}

/** PMDK splits on spaces and tabs only (strtok_r(" \t")); so do we. */
std::vector<std::string_view> tokenize(std::string_view text)
{
	std::vector<std::string_view> tokens;
	std::size_t pos = 0;
	while (true) {
		pos = text.find_first_not_of(" \t", pos);
		if (pos == std::string_view::npos)
			return tokens;
		std::size_t end = text.find_first_of(" \t", pos);
		if (end == std::string_view::npos)
			end = text.size();
		tokens.push_back(text.substr(pos, end - pos));
		pos = end;
	}
}

enum class size_result { ok, bad_format, overflow };

/** util_parse_size's table (src/common/util.c); exact, case-sensitive matches only. */
std::optional<std::uint64_t> suffix_multiplier(std::string_view suffix)
{
	struct entry {
		std::string_view name;
		std::uint64_t mult;
	};
	static constexpr std::uint64_t k = 1000;
	static constexpr entry table[] = {{"", 1},
	                                  {"B", 1},
	                                  {"K", 1ULL << 10},
	                                  {"M", 1ULL << 20},
	                                  {"G", 1ULL << 30},
	                                  {"T", 1ULL << 40},
	                                  {"P", 1ULL << 50},
	                                  {"KiB", 1ULL << 10},
	                                  {"MiB", 1ULL << 20},
	                                  {"GiB", 1ULL << 30},
	                                  {"TiB", 1ULL << 40},
	                                  {"PiB", 1ULL << 50},
	                                  {"kB", k},
	                                  {"MB", k * k},
	                                  {"GB", k * k * k},
	                                  {"TB", k * k * k * k},
	                                  {"PB", k * k * k * k * k}};
	for (const auto &e : table)
		if (e.name == suffix)
			return e.mult;
	return std::nullopt;
}

size_result scan_size(std::string_view s, std::uint64_t &out)
{
	constexpr auto max = std::numeric_limits<std::uint64_t>::max();
	std::size_t i = 0;
	std::uint64_t value = 0;
	bool overflow = false;
	// Digits only: PMDK's sscanf("%zu") also takes '+' and '-' (and wraps "-1"); we do not.
	for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
		auto digit = static_cast<std::uint64_t>(s[i] - '0');
		if (value > (max - digit) / 10)
			overflow = true;
		else
			value = value * 10 + digit;
	}
	auto mult = suffix_multiplier(s.substr(i));
	if (i == 0 || !mult)
		return size_result::bad_format;
	if (overflow || value > max / *mult)
		return size_result::overflow;
	out = value * *mult;
	return size_result::ok;
}

std::uint64_t align_down(std::uint64_t v)
{
	return v & ~(header_size - 1);
}

replica local_replica_at(unsigned line)
{
	replica r;
	r.line = line;
	return r;
}

/** One pass over the text, line by line; every rule lives in one small method. */
class parser
{
public:
	parser(std::string_view text, const std::string &name) : text_(text) { ps_.file = name; }

	poolset run()
	{
		read_signature();
		while (next_line())
			handle_line();
		finish();
		return std::move(ps_);
	}

private:
	using tokens = std::vector<std::string_view>;

	std::string_view text_; // what is left to read
	poolset ps_;
	unsigned line_ = 0;
	std::string_view current_; // the current line without its CR LF
	unsigned single_header_line_ = 0;
	unsigned no_headers_line_ = 0;
	std::uint64_t replica_total_ = 0;                         // to reject a sum above 2^64
	std::map<std::string, unsigned, std::less<>> part_paths_; // path -> line, to catch reuse

	[[noreturn]] void reject(const std::string &what, std::string_view todo) const
	{
		fail(ps_.file, line_, what, todo);
	}

	/** Advances to the next line; false at the end of the text. */
	bool next_line()
	{
		if (text_.empty())
			return false;
		auto nl = text_.find('\n');
		std::string_view raw = text_.substr(0, nl);
		text_ = nl == std::string_view::npos ? std::string_view{} : text_.substr(nl + 1);
		++line_;
		if (!raw.empty() && raw.back() == '\r')
			raw.remove_suffix(1);
		check_plain_text(raw);
		current_ = raw;
		return true;
	}

	/** Control characters (a NUL, a CR not ending the line) mean a binary or mangled file; PMDK
	 * would take them into paths and fail later with a less helpful message. */
	void check_plain_text(std::string_view raw) const
	{
		for (char c : raw) {
			auto u = static_cast<unsigned char>(c);
			if ((u < 0x20 && c != '\t') || u == 0x7f) {
				char code[8];
				std::snprintf(code, sizeof code, "0x%02x", u);
				reject(std::string("the line contains the control character ") +
				           code,
				       "a pool set file is plain text; check its line endings and "
				       "encoding");
			}
		}
	}

	void read_signature()
	{
		if (!next_line())
			fail(ps_.file, 1, "the file is empty",
			     "a pool set file starts with the line PMEMPOOLSET");
		auto end = current_.find_last_not_of(" \t");
		if (current_.substr(0, end == std::string_view::npos ? 0 : end + 1) != signature)
			reject("the first line is " + quote(current_) + ", not PMEMPOOLSET",
			       "a pool set file must start with the line PMEMPOOLSET");
		ps_.replicas.push_back(local_replica_at(line_));
	}

	void handle_line()
	{
		// '#' starts a comment anywhere (PMDK cuts the line at the first '#').
		tokens t = tokenize(current_.substr(0, current_.find('#')));
		if (t.empty())
			return;
		if (t[0] == "OPTION")
			option_line(t);
		else if (t[0] == "REPLICA")
			replica_line(t);
		else
			part_line(t);
	}

	void option_line(const tokens &t)
	{
		if (t.size() == 1)
			reject("OPTION without a name", "write OPTION SINGLEHDR or OPTION NOHDRS");
		for (std::size_t i = 1; i < t.size(); ++i) {
			// Repeating an option is harmless, as in PMDK.
			if (t[i] == "SINGLEHDR") {
				ps_.opts.single_header = true;
				single_header_line_ = line_;
			} else if (t[i] == "NOHDRS") {
				ps_.opts.no_headers = true;
				no_headers_line_ = line_;
			} else {
				reject("unknown option " + quote(t[i]),
				       "the options are SINGLEHDR and NOHDRS (upper case)");
			}
		}
		if (ps_.opts.single_header && ps_.opts.no_headers) {
			unsigned first = std::min(single_header_line_, no_headers_line_);
			reject("OPTION SINGLEHDR and OPTION NOHDRS are both given" +
			           (first != line_
			                ? " (first at line " + std::to_string(first) + ")"
			                : std::string()),
			       "keep one: SINGLEHDR gives the pool one header, NOHDRS none");
		}
	}

	void replica_line(const tokens &t)
	{
		close_replica();
		if (t.size() == 1) {
			ps_.replicas.push_back(local_replica_at(line_));
			return;
		}
		if (t.size() == 2)
			reject("REPLICA " + quote(t[1]) +
			           " has a target but no pool set descriptor",
			       replica_syntax);
		if (t.size() > 3)
			reject("unexpected token " + quote(t[3]) + " after REPLICA " +
			           std::string(t[1]) + " " + std::string(t[2]),
			       "a remote REPLICA line holds exactly a target and a descriptor; "
			       "descriptors with spaces are not supported");
		if (t[2].front() == '/')
			reject("remote pool set descriptor " + quote(t[2]) + " is absolute",
			       "give it relative to rpmemd's poolset directory on " +
			           std::string(t[1]) + ", e.g. pool.set");
		replica remote = local_replica_at(line_);
		remote.target = t[1];
		remote.descriptor = t[2];
		ps_.replicas.push_back(std::move(remote));
	}

	/** A REPLICA line ends the previous replica, which must not be empty (PMDK agrees). */
	void close_replica()
	{
		const replica &last = ps_.replicas.back();
		replica_total_ = 0;
		if (last.is_remote() || !last.parts.empty())
			return;
		if (ps_.replicas.size() == 1)
			reject("REPLICA before any part of the master replica",
			       "the first replica must be local: list its parts (" +
			           std::string(part_form) + ") right after PMEMPOOLSET");
		fail(ps_.file, last.line, "the local REPLICA has no parts",
		     "add at least one part line " + std::string(part_form) + " after it");
	}

	void part_line(const tokens &t)
	{
		const replica &current = ps_.replicas.back();
		if (current.is_remote())
			reject("part line after the remote REPLICA at line " +
			           std::to_string(current.line),
			       "a remote replica's parts are listed in its pool set on the remote "
			       "node; put local parts after a plain REPLICA line");
		if (t.size() == 1 && t[0].front() == '/')
			reject("part line " + quote(t[0]) + " has a path but no size",
			       "write " + std::string(part_form));
		part p;
		p.size = part_size(t[0]);
		if (t.size() == 1)
			reject("part line " + quote(t[0]) + " has a size but no path",
			       "write " + std::string(part_form));
		if (t.size() > 2)
			reject("unexpected token " + quote(t[2]) + " after path " + quote(t[1]),
			       "paths with spaces are not supported (PMDK splits part lines on "
			       "blanks); write " +
			           std::string(part_form));
		p.path = t[1];
		p.line = line_;
		check_path(p.path);
		add_to_total(t[0], p.size);
		ps_.replicas.back().parts.push_back(std::move(p));
	}

	std::uint64_t part_size(std::string_view token) const
	{
		if (token == "AUTO")
			reject("part size AUTO (size of a Device DAX) is not supported",
			       "give the size; " + std::string(size_syntax));
		if (token.front() < '0' || token.front() > '9')
			reject("unexpected " + quote(token) + " at the start of a line",
			       "expected REPLICA, OPTION (upper case) or a part line " +
			           std::string(part_form));
		std::uint64_t size = 0;
		switch (scan_size(token, size)) {
		case size_result::bad_format:
			reject("invalid part size " + quote(token), size_syntax);
		case size_result::overflow:
			reject("part size " + quote(token) + " does not fit in 64 bits",
			       "give a smaller size");
		case size_result::ok:
			break;
		}
		if (size == 0)
			reject("part size " + quote(token) + " is zero", "give a size above 0");
		return size;
	}

	void add_to_total(std::string_view token, std::uint64_t size)
	{
		if (size > std::numeric_limits<std::uint64_t>::max() - replica_total_)
			reject("part size " + quote(token) +
			           " makes the replica larger than 2^64 bytes",
			       "give smaller parts");
		replica_total_ += size;
	}

	void check_path(const std::string &path)
	{
		if (path.front() != '/')
			reject("part path " + quote(path) + " is not absolute",
			       "write the full path, starting with /");
		auto [it, inserted] = part_paths_.emplace(path, line_);
		if (!inserted)
			reject("part path " + quote(path) + " is already used at line " +
			           std::to_string(it->second),
			       "every part needs a file of its own");
	}

	void finish()
	{
		const replica &last = ps_.replicas.back();
		if (ps_.replicas.size() == 1 && last.parts.empty())
			reject("the pool set has no parts", "add at least one part line " +
			                                        std::string(part_form) +
			                                        " after PMEMPOOLSET");
		if (!last.is_remote() && last.parts.empty())
			fail(ps_.file, last.line, "the local REPLICA has no parts",
			     "add at least one part line " + std::string(part_form) + " after it");
	}
};

const replica &local_replica(const poolset &ps, std::size_t r)
{
	if (r >= ps.replicas.size())
		throw error(EINVAL, ps.file + ": no replica " + std::to_string(r) +
		                        ", the set has " + std::to_string(ps.replicas.size()) +
		                        " \u2014 pass an index below that");
	const replica &rep = ps.replicas[r];
	if (rep.is_remote())
		throw error(EINVAL, ps.file + ":" + std::to_string(rep.line) + ": replica " +
		                        std::to_string(r) + " is remote (" + rep.target +
		                        ") \u2014 its size is known only to rpmemd there; "
		                        "ask for a local replica's size");
	return rep;
}

std::ifstream open_or_throw(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	if (!in) {
		int err = errno;
		fail(path, 0, std::string("cannot open: ") + std::strerror(err),
		     "check the path and its permissions");
	}
	return in;
}

} // namespace

parse_error::parse_error(const std::string &file, unsigned line, const std::string &what)
    : std::runtime_error(file + (line ? ":" + std::to_string(line) : std::string()) + ": " + what),
      file_(file), line_(line)
{
}

std::uint64_t replica::total_size() const
{
	std::uint64_t sum = 0;
	for (const auto &p : parts)
		sum += p.size;
	return sum;
}

bool poolset::has_remote() const
{
	for (const auto &r : replicas)
		if (r.is_remote())
			return true;
	return false;
}

std::size_t poolset::header_count(std::size_t r) const
{
	const replica &rep = local_replica(*this, r);
	if (opts.no_headers)
		return 0;
	return opts.single_header ? 1 : rep.parts.size();
}

std::uint64_t poolset::pool_size(std::size_t r) const
{
	// util_poolset_set_size: every part rounded down to the mapping alignment, then every
	// header but part 0's is skipped so the pool stays contiguous.
	std::uint64_t sum = 0;
	for (const auto &p : local_replica(*this, r).parts)
		sum += align_down(p.size); // parts are < 2^64 each; a sum above that is absurd
	std::size_t headers = header_count(r);
	std::uint64_t skipped = headers > 0 ? (headers - 1) * header_size : 0;
	return sum > skipped ? sum - skipped : 0;
}

std::uint64_t poolset::usable_size(std::size_t r) const
{
	std::uint64_t size = pool_size(r);
	if (header_count(r) == 0)
		return size;
	return size > header_size ? size - header_size : 0;
}

poolset parse(std::string_view text, const std::string &name)
{
	return parser(text, name).run();
}

poolset parse_file(const std::string &path)
{
	std::ifstream in = open_or_throw(path);
	std::string text(max_file_size + 1, '\0');
	in.read(text.data(), static_cast<std::streamsize>(text.size()));
	if (in.bad())
		fail(path, 0, std::string("cannot read: ") + std::strerror(errno),
		     "check that it is a readable file");
	text.resize(static_cast<std::size_t>(in.gcount()));
	if (text.size() > max_file_size)
		fail(path, 0, "larger than 1 MiB, too large for a pool set file",
		     "is it a pool file? check is_poolset_file() before parsing");
	return parse(text, path);
}

bool parse_size(std::string_view s, std::uint64_t &out)
{
	return scan_size(s, out) == size_result::ok;
}

bool is_poolset_file(const std::string &path)
{
	std::ifstream in = open_or_throw(path);
	std::string head(signature.size(), '\0');
	in.read(head.data(), static_cast<std::streamsize>(head.size()));
	return static_cast<std::size_t>(in.gcount()) == head.size() && head == signature;
}

} // namespace rpmem::poolset
