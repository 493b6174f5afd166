// SPDX-License-Identifier: BSD-3-Clause
// The rpmem command-line tool: what its commands share (exit codes, messages, attributes,
// remote pool options). Each command lives in its own file as cmd_NAME(its arguments); its
// options and help are in main.cpp, the one file that includes CLI11 (a header-only library
// costing ~9 s of compile per file that includes it, ~20 s with sanitizers).
#pragma once

#include "control/messages.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rpmem::tool
{

/** What runs a command once the command line is parsed; returns the exit status. */
using command_run = std::function<int()>;

/** Exit codes, as pmempool's: 0 success, 1 failure. verify: 1 = replicas differ. */
inline constexpr int exit_ok = 0;
inline constexpr int exit_failed = 1;
inline constexpr int exit_differ = 1;
/** The command line is wrong (CLI11 parse errors) or verify could not compare at all. */
inline constexpr int exit_usage = 2;

/** A line of a command's text output; nothing with --json (its object says it all). */
template <class... A> void say(bool json, fmt::format_string<A...> f, A &&...args)
{
	if (!json)
		fmt::print(f, std::forward<A>(args)...);
}

/** A failure the tool reports as "rpmem CMD: <message>" and exits with `code`. */
class failure : public std::runtime_error
{
public:
	failure(const std::string &msg, int code = exit_failed)
	    : std::runtime_error(msg), code_(code)
	{
	}
	int code() const noexcept { return code_; }

private:
	int code_;
};

/** Attribute fields a user may give on the command line; unset fields keep their value. */
struct attr_options {
	std::string signature;
	std::int64_t major = -1;
	std::string compat, incompat, ro_compat; // numbers, 0x.. allowed
	std::string poolset_uuid, uuid, next_uuid, prev_uuid;
	bool any() const;
	/** Applies the given fields to a. Throws failure on a malformed value. */
	void apply(control::pool_attr &a) const;
};

/** "a1b2c3d4-..." (PMDK's byte order, as pmempool info prints) <-> 16 bytes. */
std::array<std::uint8_t, 16> parse_uuid(const std::string &text);
std::string uuid_text(const std::array<std::uint8_t, 16> &u);
std::array<std::uint8_t, 16> random_uuid();
/** Signature as printable text ("PMEMOBJ"). */
std::string signature_text(const std::array<char, 8> &sig);
/** "64 MiB" style. */
std::string size_text(std::uint64_t bytes);
/** A size with PMDK's suffixes (poolset syntax). Throws failure. */
std::uint64_t parse_size_arg(const std::string &text, const char *what);
/** Prints attributes pmempool-info style, one "Name : value" line each. */
void print_attr(const control::pool_attr &a);
} // namespace rpmem::tool
namespace rpmem
{
class json;
}
namespace rpmem::tool
{
/** The attributes as a JSON object's members (or "headers": false for a pool without). */
void json_attr(json &j, const control::pool_attr &a);

struct remote_args {
	std::string target;
	std::string descriptor;
	std::string size = "8KiB"; // local pool size registered (create: the pool's size)
	unsigned lanes = 1;
	bool json = false; // --json: one JSON object on stdout instead of the text
};

// One remote pool (remote.cpp).
int cmd_create(const remote_args &r, const attr_options &attrs, bool no_headers);
int cmd_open_check(const remote_args &r);
int cmd_info(const remote_args &r);
int cmd_attr(const remote_args &r, const attr_options &attrs);
int cmd_rm(const remote_args &r, bool force, bool pool_set);

struct replicate_args {
	std::string poolset;
	std::vector<unsigned> replicas;        // empty: every remote replica
	unsigned max_ranges = 16;              // verify: ranges printed per replica
	std::string progress = "auto";         // sync: auto|bar|lines|none
	bool json = false;                     // verify/sync --json
	bool dry_run = false;                  // sync: report what would move, write nothing
	bool full = false;                     // sync: copy the whole pool, no checksums
	std::string block_size_text = "64KiB"; // sync --block-size
	std::uint32_t block_size = 64 * 1024;  // parsed from block_size_text
	int from = -1;                         // sync --from R: rebuild the master from replica R
	bool force = false; // sync --from: even from a replica marked possibly behind
};

// The master against its remote replicas (verify.cpp, sync.cpp).
int cmd_verify(const replicate_args &a);
int cmd_sync(const replicate_args &given);

struct check_args {
	std::string poolset;
	bool repair = false; // fix what can be fixed from copies known good
	bool json = false;
};

int cmd_check(const check_args &a);

struct status_args {
	std::string dir; // the session status directory; empty: control::default_session_dir()
	bool json = false;
	bool prune = false; // remove the records of sessions whose rpmemd is gone
};

int cmd_status(const status_args &a);

struct top_args {
	std::vector<std::string> paths; // metrics files or directories; none: found in /proc
	std::string dir;                // rpmemd's session records; empty: the default
	double delay = 1;               // seconds between refreshes
	int iterations = 0;             // refreshes before exiting; 0: until q (1 in batch)
	bool batch = false;
	std::string sort = "state";
	double stale = 0; // seconds; 0: 3 of the writer's RPMEM_STATS_INTERVAL (else 30)
};

/** rpmem top: the live view of this host's pools (top.cpp, top_view.hpp). */
int cmd_top(const top_args &a);

struct promote_args {
	std::string poolset; // the replica's pool set file on this host
	std::string output;  // optional: a new local pool set file
	bool dry_run = false;
	bool force = false; // promote even if the replica links already point at itself
	bool json = false;  // one JSON object instead of the text lines
};

int cmd_promote(const promote_args &a);

/** rpmem bench: replaces the process with rpmem-bench from the directory of this
 *  executable, with `args`. */
int cmd_bench(const std::vector<std::string> &args);

} // namespace rpmem::tool
