// SPDX-License-Identifier: BSD-3-Clause
// What a replica node knows locally about the pools its rpmemd processes serve now: each
// rpmemd session with an open pool keeps one small file in a per-user status directory, written
// when the pool opens and removed when the session ends; `rpmem status` lists them. A file
// whose rpmemd is gone (killed: it could not remove it) is recognised by the process start
// time it records, so a reused PID is not taken for the session, and is reported as gone.
//
// The file is text, one "key value" per line (value to the end of the line), so neither side
// needs a JSON parser; rpmemd writes it atomically (a temporary file renamed into place).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rpmem::control
{

struct session_record {
	std::int64_t pid = 0;
	std::uint64_t process_start = 0; // /proc/PID/stat start time (clock ticks since boot)
	std::uint64_t since = 0;         // seconds since the epoch when the pool opened
	std::string user;
	std::string peer;       // client address:port (SSH_CONNECTION)
	std::string descriptor; // pool set name relative to the poolset directory
	std::string poolset;    // its path
	std::uint64_t pool_size = 0;
	bool created = false; // created in this session (else opened)
	bool is_pmem = false; // made durable by pmem_persist (else msync)
	std::string provider;
	std::string method; // gpspm, apm, commit
	std::uint64_t lanes = 0;
	std::string version; // rpmemd's
};

/** The record as the file holds it. Newlines in values become spaces. */
std::string encode(const session_record &r);
/** The record a file holds; nullopt when it is not one (no pid or descriptor). */
std::optional<session_record> decode_session(std::string_view text);

/**
 * Where this user's rpmemd sessions are recorded when no directory is given:
 * /run/user/UID/rpmemd when /run/user/UID is a directory the user owns (a login session's
 * runtime directory), else /tmp/rpmemd-UID. The same rule on both sides, so rpmemd and
 * `rpmem status` run by the same user agree.
 */
std::string default_session_dir();

/** The start time of process pid (field 22 of /proc/PID/stat); nullopt if it is gone. */
std::optional<std::uint64_t> process_start_time(std::int64_t pid);

/** A record file listed: the record, and whether its rpmemd still runs. */
struct listed_session {
	session_record record;
	std::string file;
	bool alive = false;
};

/** Every record file in dir, oldest session first. An absent directory lists nothing; a
 *  directory rpmemd would not use (a symbolic link, another user's) or cannot be read lists
 *  nothing and says why in *problem; files that are not records are skipped. */
std::vector<listed_session> list_sessions(const std::string &dir, std::string *problem = nullptr);

/** Whether the record at `file` still describes `r` and its rpmemd is gone: what --prune
 *  checks again just before it removes a record (a new session may have reused the PID). */
bool still_gone(const std::string &file, const session_record &r);

/** Removes the records in dir whose rpmemd is gone (checked again with still_gone just before
 *  each removal); returns how many. What rpmemd does when a session publishes its record, so
 *  killed sessions do not stay listed until `rpmem status --prune`. */
std::size_t prune_gone(const std::string &dir);

/**
 * rpmemd's side: publishes a record under dir (created 0700 if needed; a directory that is a
 * symbolic link or owned by another user is refused) as PID-START.session (the process start
 * time makes the name unique to the process, whatever PIDs are reused) and removes it when
 * destroyed or withdrawn. Failures are returned as messages (status is informational: a session
 * does not fail because its record could not be written).
 */
class session_file
{
public:
	session_file() = default;
	~session_file() { withdraw(); }
	session_file(const session_file &) = delete;
	session_file &operator=(const session_file &) = delete;

	/** Writes (or rewrites) the record; returns why not, or nullopt. */
	std::optional<std::string> publish(const std::string &dir, const session_record &r);
	/** Removes the record file, if any. */
	void withdraw() noexcept;
	const std::string &path() const { return path_; }

private:
	std::string path_;
};

} // namespace rpmem::control
