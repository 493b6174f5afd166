// SPDX-License-Identifier: BSD-3-Clause
// rpmemd's configuration: command line (PMDK-compatible, getopt_long) and config files.
//
// libpmempool runs `rpmemd --remove DESC --force` over ssh by itself and PMDK's test harness
// runs `rpmemd --log-file=F --log-level=L --poolset-dir=D --config=C --persist-apm`, so the
// options, their spellings and the config file syntax are PMDK 1.12's
// (docs/design.md, PMDK §P1), plus extensions: heartbeat-timeout, wait, persist-commit, mr-mode,
// auth-timeout, block-checksums, status-dir, nic-writes-durable, port-range.
#pragma once

#include "log.hpp"

#include "fabric/mr_mode.hpp"
#include "fabric/spin_policy.hpp"

#include <bitset>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#ifndef RPMEMD_VERSION
#define RPMEMD_VERSION "0.1.0"
#endif

namespace rpmemd
{

/** Bad command line, config file or resulting configuration. what() says what is wrong,
 * where, and what to do. rpmemd exits with status 255 on it, as PMDK's did. */
class config_error : public std::runtime_error
{
public:
	using std::runtime_error::runtime_error;
};

/** Ports the fabric listener may take: first to last, both included. */
struct port_range {
	std::uint16_t first = 0;
	std::uint16_t last = 0;
	bool operator==(const port_range &) const = default;
};

struct config {
	std::string log_file = "/var/log/rpmemd.log";
	std::string poolset_dir = "$HOME"; // absolute after load(); "$HOME" is substituted
	bool persist_apm = false;          // APM where it is durable (design.md, 7)
	bool persist_general = true;       // accepted for PMDK compatibility; GPSPM is always there
	bool use_syslog = true;
	log_level level = log_level::notice; // PMDK: err; notice logs each session's start and end
	unsigned nthreads = 0;               // worker threads; 0 = choose automatically
	std::optional<std::string> config_file; // --config: read only this file
	std::optional<std::string> remove_desc; // --remove: remove this pool set and exit
	bool force = false;                     // --force: with --remove, ignore errors
	bool remove_poolset = false;            // --pool-set: with --remove, delete the file too
	bool help = false;                      // -h: print usage() to stderr, exit 0
	bool version = false;                   // -V: print version_string() to stderr, exit 0
	bool check_config = false;              // --check-config: check_config(), then exit

	// Extension (also a config key): how long the daemon waits on a silent client (no control
	// message, no fabric traffic) before it declares the session dead and cleans up.
	std::chrono::milliseconds heartbeat_timeout{5000};
	// Extensions: how workers wait for requests (adaptive: poll while it pays and a core is
	// free, then block); offer the commit-complete persist where the provider grants
	// FI_RMA_PMEM and the pool is pmem; the MR mode asked of the provider (when neither the
	// command line nor a config file sets it: RPMEM_MR_MODE in rpmemd's environment, else
	// auto).
	rpmem::fabric::wait_mode wait = rpmem::fabric::wait_mode::adaptive;
	bool persist_commit = false;
	std::optional<rpmem::fabric::mr_mode> mr_mode;
	// Extension: how long a connection to the fabric port may stay open without sending its
	// connection request (the session secret) before rpmemd closes it (daemon/port_guard.hpp).
	std::chrono::milliseconds auth_timeout{1000};
	// Extension: the operator asserts that this host's RDMA NICs write durably (their writes
	// bypass the CPU caches, DDIO off, or the platform flushes the caches on power loss):
	// persist-apm is then honoured on verbs too (target_method.hpp).
	bool nic_writes_durable = false;
	// Extension: the ports a session's fabric listener may take, for a firewall between
	// client and replica (unset: an ephemeral port); a session takes the first free one and
	// keeps it while it listens, until its client's connections are up.
	std::optional<port_range> ports;
	// Extension: answer clients' block checksum requests (delta resync reads the pool to hash
	// it; "no" makes clients copy whole pools instead).
	bool block_checksums = true;
	// Extension: where each session with an open pool keeps its status record (`rpmem
	// status` lists them); empty: control::default_session_dir(); "none": no records.
	std::string status_dir;
	// Extension: how long a resident rpmemd (daemon/resident.hpp) waits for the next session
	// after the last one ended before it exits; 0 ("no", the default): no resident, every
	// session starts its own rpmemd as PMDK's did.
	std::chrono::seconds resident{0};
};

/** The settings a config file may set; command-line values for them win over config files. */
enum class setting {
	log_file,
	poolset_dir,
	persist_apm,
	persist_general,
	use_syslog,
	log_level,
	heartbeat_timeout,
	wait,
	persist_commit,
	mr_mode,
	auth_timeout,
	block_checksums,
	status_dir,
	nic_writes_durable,
	port_range,
	resident,
	count_
};

/** Which settings the command line gave (and config files therefore must not change). */
class cmdline_mask
{
public:
	void set(setting s) { bits_.set(static_cast<std::size_t>(s)); }
	bool has(setting s) const { return bits_.test(static_cast<std::size_t>(s)); }

private:
	std::bitset<static_cast<std::size_t>(setting::count_)> bits_;
};

/** Where load() looks: tests point these elsewhere. */
struct environment {
	std::string home; // the user's home directory (for ~/.rpmemd.conf and $HOME)
	std::string etc_config = "/etc/rpmemd/rpmemd.conf";
	std::optional<std::string> mr_mode{}; // RPMEM_MR_MODE: mr-mode when no option sets it

	/** $HOME, or the password database entry of the real user when HOME is unset. */
	static environment from_process();
};

/**
 * Parses the command line (getopt_long, short options "c:hVr:fst:", long options in both
 * `--opt=value` and `--opt value` forms). Non-option arguments are ignored, as PMDK did.
 * Stops at -h / -V (config.help / config.version set). Records in `given` which settings
 * came from the command line. Throws config_error on an unknown option or a bad value.
 */
config parse_command_line(int argc, char **argv, cmdline_mask *given = nullptr);

/**
 * Applies config file text to cfg, skipping settings in `given`. `file` names the text in
 * errors. Throws config_error "Invalid config file line at <file>:<n>: ..." on the first bad
 * line (lines before it are applied).
 */
void parse_config_text(config &cfg, std::string_view text, const std::string &file,
                       const cmdline_mask &given);

/** Reads config files: only cfg.config_file (must exist) if set, else env.etc_config then
 * env.home/.rpmemd.conf, each optional. Later files override earlier ones. */
void load_config_files(config &cfg, const cmdline_mask &given, const environment &env);

/** Replaces the first "$HOME" in `path` that is not followed by an alphanumeric character. */
std::string substitute_home(std::string_view path, std::string_view home);

/** Command line, then config files, then $HOME substitution and validation (poolset-dir must
 * be absolute). With -h or -V, returns right after the command line. With --check-config it
 * does not return: it prints check_config()'s text on stdout and exits 0, or the error on
 * stderr and exits 255 (nothing on stdout: no client reads it). */
config load(int argc, char **argv, const environment &env);

/**
 * What rpmemd --check-config prints for a configuration load() accepted: the config files
 * read, then every config key with its effective value, as a config file would set it (a
 * value left to rpmemd's default is shown commented out). Throws config_error for what would
 * stop a session although the syntax is right: a poolset-dir that is not a directory, a
 * log-file that cannot be opened for appending (it is created, as rpmemd would).
 */
std::string check_config(const config &cfg, const std::vector<std::string> &files_read);

/** "first-last" or "port" (1 to 65535, first <= last); nullopt otherwise. */
std::optional<port_range> parse_port_range(std::string_view text);

/** Limits of the numeric settings: more would be a typo, not a configuration. */
inline constexpr unsigned max_nthreads = 1024;
inline constexpr long long max_heartbeat_ms = 3'600'000;
inline constexpr long long max_auth_timeout_ms = 60'000;
inline constexpr long long max_resident_s = 604'800; // a week
/** The idle time of `resident = yes`. */
inline constexpr long long default_resident_s = 600;

/** The --help text (usage.cpp); `program` is argv[0]. */
std::string usage(std::string_view program);

/** "rpmemd version <RPMEMD_VERSION>" */
std::string version_string();

} // namespace rpmemd
