// SPDX-License-Identifier: BSD-3-Clause
#include "control/session_record.hpp"

#include "posix/file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace rpmem::control
{

namespace
{

/** Closes an fd at scope exit. */
constexpr std::string_view magic = "rpmemd-session 1";

std::string one_line(std::string s)
{
	std::replace(s.begin(), s.end(), '\n', ' ');
	return s;
}

template <class T> bool parse_number(std::string_view s, T &out)
{
	auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
	return ec == std::errc() && p == s.data() + s.size();
}

} // namespace

std::string encode(const session_record &r)
{
	return fmt::format("{}\npid {}\nprocess_start {}\nsince {}\nuser {}\npeer {}\ndescriptor "
	                   "{}\npoolset {}\npool_size {}\ncreated {}\nis_pmem {}\nprovider "
	                   "{}\nmethod {}\nlanes {}\nversion {}\n",
	                   magic, r.pid, r.process_start, r.since, one_line(r.user),
	                   one_line(r.peer), one_line(r.descriptor), one_line(r.poolset),
	                   r.pool_size, r.created ? 1 : 0, r.is_pmem ? 1 : 0, one_line(r.provider),
	                   one_line(r.method), r.lanes, one_line(r.version));
}

std::optional<session_record> decode_session(std::string_view text)
{
	if (!text.starts_with(magic))
		return std::nullopt;
	session_record r;
	std::istringstream in{std::string(text)};
	std::string line;
	std::getline(in, line);
	while (std::getline(in, line)) {
		auto sp = line.find(' ');
		std::string_view key = std::string_view(line).substr(0, sp);
		std::string_view value = sp == std::string::npos
		                             ? std::string_view{}
		                             : std::string_view(line).substr(sp + 1);
		std::uint64_t n = 0;
		if (key == "pid" && !parse_number(value, r.pid))
			return std::nullopt;
		else if (key == "process_start")
			parse_number(value, r.process_start);
		else if (key == "since")
			parse_number(value, r.since);
		else if (key == "user")
			r.user = value;
		else if (key == "peer")
			r.peer = value;
		else if (key == "descriptor")
			r.descriptor = value;
		else if (key == "poolset")
			r.poolset = value;
		else if (key == "pool_size")
			parse_number(value, r.pool_size);
		else if (key == "created" && parse_number(value, n))
			r.created = n != 0;
		else if (key == "is_pmem" && parse_number(value, n))
			r.is_pmem = n != 0;
		else if (key == "provider")
			r.provider = value;
		else if (key == "method")
			r.method = value;
		else if (key == "lanes")
			parse_number(value, r.lanes);
		else if (key == "version")
			r.version = value;
		// Unknown keys: a newer rpmemd's; ignored.
	}
	if (r.pid <= 0 || r.descriptor.empty())
		return std::nullopt;
	return r;
}

std::string default_session_dir()
{
	const auto uid = getuid();
	const std::string run = fmt::format("/run/user/{}", uid);
	struct stat st {
	};
	if (lstat(run.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid)
		return run + "/rpmemd";
	return fmt::format("/tmp/rpmemd-{}", uid);
}

std::optional<std::uint64_t> process_start_time(std::int64_t pid)
{
	std::ifstream in(fmt::format("/proc/{}/stat", pid));
	std::string stat;
	if (!std::getline(in, stat))
		return std::nullopt;
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses; fields after the
	// last ')' are space separated, starting with field 3 (state).
	auto close = stat.rfind(')');
	if (close == std::string::npos)
		return std::nullopt;
	std::istringstream rest(stat.substr(close + 2));
	std::string field;
	for (int i = 3; i <= 22 && rest >> field; ++i)
		if (i == 3 && (field == "Z" || field == "X"))
			return std::nullopt; // ended, not yet reaped: gone all the same
		else if (i == 22) {
			std::uint64_t t = 0;
			if (parse_number(std::string_view(field), t))
				return t;
		}
	return std::nullopt;
}

namespace
{

/** Why `dir` is not a session directory this user may trust (rpmemd's rule: a directory,
 *  not a symbolic link, owned by this user), or nullopt. */
std::optional<std::string> untrusted_dir(const std::string &dir)
{
	struct stat st {
	};
	if (lstat(dir.c_str(), &st) != 0)
		return fmt::format("cannot use the session status directory {}: {}", dir,
		                   std::strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid())
		return fmt::format("the session status directory {} is not a directory owned by "
		                   "this user (a symbolic link, or another user's): not used",
		                   dir);
	return std::nullopt;
}

/** A record file's text: a regular file only (never a FIFO or device, which could block),
 *  not through a symbolic link, bounded. */
std::optional<std::string> read_record(const std::string &path)
{
	posix::unique_fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
	struct stat st {
	};
	if (fd.get() < 0 || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > 64 * 1024)
		return std::nullopt;
	std::string text(static_cast<std::size_t>(st.st_size), '\0');
	auto n = ::read(fd.get(), text.data(), text.size());
	if (n < 0)
		return std::nullopt;
	text.resize(static_cast<std::size_t>(n));
	return text;
}

} // namespace

std::vector<listed_session> list_sessions(const std::string &dir, std::string *problem)
{
	std::vector<listed_session> out;
	struct stat st {
	};
	if (lstat(dir.c_str(), &st) != 0 && errno == ENOENT)
		return out; // no session ever recorded here
	if (auto why = untrusted_dir(dir)) {
		if (problem)
			*problem = *why;
		return out;
	}
	DIR *d = opendir(dir.c_str());
	if (!d) {
		if (problem)
			*problem = fmt::format("cannot read the session status directory {}: {}",
			                       dir, std::strerror(errno));
		return out;
	}
	while (dirent *e = readdir(d)) {
		std::string name = e->d_name;
		if (!name.ends_with(".session"))
			continue;
		std::string path = dir + "/" + name;
		auto text = read_record(path);
		if (!text)
			continue;
		auto r = decode_session(*text);
		if (!r)
			continue;
		listed_session s{*r, path, false};
		auto start = process_start_time(r->pid);
		s.alive = start && *start == r->process_start;
		out.push_back(std::move(s));
	}
	closedir(d);
	std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) {
		return a.record.since != b.record.since ? a.record.since < b.record.since
		                                        : a.record.pid < b.record.pid;
	});
	return out;
}

bool still_gone(const std::string &file, const session_record &r)
{
	auto text = read_record(file);
	auto now = text ? decode_session(*text) : std::nullopt;
	if (!now || now->pid != r.pid || now->process_start != r.process_start)
		return false;
	auto start = process_start_time(r.pid);
	return !start || *start != r.process_start;
}

std::size_t prune_gone(const std::string &dir)
{
	std::size_t removed = 0;
	for (const auto &s : list_sessions(dir))
		if (!s.alive && still_gone(s.file, s.record) && ::unlink(s.file.c_str()) == 0)
			++removed;
	return removed;
}

std::optional<std::string> session_file::publish(const std::string &dir, const session_record &r)
{
	if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
		return fmt::format("cannot create the session status directory {}: {}", dir,
		                   std::strerror(errno));
	if (auto why = untrusted_dir(dir))
		return why;
	// Named after the process, start time included: a session that reuses the PID of a killed
	// one writes another file, so a prune that found the old record gone (and unlinks it a
	// moment later) can never remove the new one in its place.
	const std::string path = fmt::format("{}/{}-{}.session", dir, r.pid, r.process_start);
	std::string why;
	if (posix::replace_file(path, encode(r), 0600, &why) != 0)
		return fmt::format("cannot write {}: {}", path, why);
	path_ = path;
	return std::nullopt;
}

void session_file::withdraw() noexcept
{
	if (!path_.empty())
		::unlink(path_.c_str());
	path_.clear();
}

} // namespace rpmem::control
