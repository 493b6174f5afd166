// SPDX-License-Identifier: BSD-3-Clause
// rpmem status: on a replica node, the pools this user's rpmemd sessions serve now, from the
// records each session keeps while its pool is open (lib/control/session_record.hpp): PID,
// peer, since when, pool set, size, provider, persist method, lanes; and, read from
// /proc/locks, which process holds the lock of the pool's first part (the rpmemd itself, for
// a live session). A record whose rpmemd is gone (killed before it could remove it) is listed
// as gone until the next session that opens a pool there removes it; --prune does at once.
#include "tool.hpp"

#include "served_pool.hpp"

#include "control/session_record.hpp"
#include "json/json.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

namespace rpmem::tool
{

namespace
{

std::string utc_text(std::uint64_t secs)
{
	std::time_t t = static_cast<std::time_t>(secs);
	std::tm tm{};
	gmtime_r(&t, &tm);
	char buf[32];
	std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
	return buf;
}

std::string age_text(std::uint64_t since)
{
	const auto now = static_cast<std::uint64_t>(std::time(nullptr));
	const std::uint64_t s = now > since ? now - since : 0;
	if (s < 120)
		return fmt::format("{} s", s);
	if (s < 7200)
		return fmt::format("{} min", s / 60);
	return fmt::format("{} h", s / 3600);
}

void print_json(const std::string &dir, const std::vector<control::listed_session> &sessions,
                std::size_t pruned)
{
	json j;
	j.begin_object().member("dir", dir).key("sessions").begin_array();
	for (const auto &s : sessions) {
		const auto &r = s.record;
		j.begin_object()
		    .member("pid", r.pid)
		    .member("alive", s.alive)
		    .member("since", r.since)
		    .member("user", r.user)
		    .member("peer", r.peer)
		    .member("descriptor", r.descriptor)
		    .member("poolset", r.poolset)
		    .member("pool_size", r.pool_size)
		    .member("created", r.created)
		    .member("is_pmem", r.is_pmem)
		    .member("provider", r.provider)
		    .member("persist_method", r.method)
		    .member("lanes", r.lanes)
		    .member("version", r.version);
		j.member("marked_behind", s.alive && marked_behind(r.poolset));
		if (auto holder = s.alive ? lock_holder_pid(r.poolset) : std::nullopt)
			j.member("lock_holder", *holder);
		else
			j.key("lock_holder").null();
		j.end_object();
	}
	j.end_array()
	    .member("pruned", std::uint64_t{pruned})
	    .member("exit_status", exit_ok)
	    .end_object();
	fmt::print("{}\n", j.str());
}

void print_text(const status_args &a, const std::string &dir,
                const std::vector<control::listed_session> &sessions)
{
	std::size_t alive = 0;
	for (const auto &s : sessions)
		alive += s.alive;
	if (sessions.empty())
		fmt::print("no rpmemd session of this user serves a pool on this host ({})\n", dir);
	else
		fmt::print("{} rpmemd session(s) serving a pool on this host ({}):\n", alive, dir);
	for (const auto &s : sessions) {
		const auto &r = s.record;
		if (!s.alive) {
			fmt::print(
			    "  pid {}: gone, {} (served {} from {} since {}): rpmemd ended without "
			    "removing its record (killed?){}\n",
			    r.pid, a.prune ? "record removed" : "record left", r.descriptor, r.peer,
			    utc_text(r.since), a.prune ? "" : "; --prune removes it");
			continue;
		}
		auto holder = lock_holder_pid(r.poolset);
		fmt::print(
		    "  pid {}: {} ({}), {}, {} {} ago by {}, since {}; {} {}, {} lane(s), made "
		    "durable by {}; lock held by {}; rpmemd {}{}\n",
		    r.pid, r.descriptor, r.poolset, size_text(r.pool_size),
		    r.created ? "created" : "opened", age_text(r.since), r.peer, utc_text(r.since),
		    r.provider, r.method, r.lanes, r.is_pmem ? "pmem_persist" : "msync",
		    holder ? fmt::format("pid {}", *holder) : std::string("nobody seen"), r.version,
		    marked_behind(r.poolset) ? "; marked possibly behind (its writer may go on "
		                               "without it: not current until a clean close or "
		                               "`rpmem sync`)"
		                             : "");
	}
}

} // namespace

int cmd_status(const status_args &a)
{
	const std::string dir = a.dir.empty() ? control::default_session_dir() : a.dir;
	std::string problem;
	auto sessions = control::list_sessions(dir, &problem);
	if (!problem.empty())
		throw failure(problem + " (rpmemd would not use it either: check the directory, or "
		                        "give the one rpmemd uses with --dir)");
	std::size_t pruned = 0;
	if (a.prune)
		for (const auto &s : sessions)
			if (!s.alive && control::still_gone(s.file, s.record) &&
			    ::unlink(s.file.c_str()) == 0)
				++pruned;
	if (a.json)
		print_json(dir, sessions, pruned);
	else
		print_text(a, dir, sessions);
	return exit_ok;
}

} // namespace rpmem::tool
