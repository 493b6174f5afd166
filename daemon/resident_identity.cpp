// SPDX-License-Identifier: BSD-3-Clause
#include "resident_identity.hpp"

#include "control/session_record.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <grp.h>
#include <sched.h>
#include <sstream>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

namespace rpmemd::resident
{

namespace
{

/** The first `limit` bytes of a file, or nullopt (errno set) when it cannot be read. Read in
 *  small steps: a buffer of `limit` bytes up front cost the front ~7 ms of page faults. */
std::optional<std::string> read_text(const std::string &path, std::size_t limit = 1 << 20)
{
	std::ifstream in(path, std::ios::binary);
	if (!in) {
		if (errno == 0)
			errno = EIO;
		return std::nullopt;
	}
	std::string text;
	char chunk[4096];
	while (text.size() < limit && in) {
		in.read(chunk,
		        static_cast<std::streamsize>(std::min(sizeof chunk, limit - text.size())));
		text.append(chunk, static_cast<std::size_t>(in.gcount()));
	}
	return text;
}

std::string hash_hex(std::string_view bytes)
{
	const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
	return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

/** A value that may hold anything, on one line: its length first, then its bytes escaped. */
std::string quoted(std::string_view s)
{
	std::string out = fmt::format("{}:", s.size());
	for (unsigned char c : s)
		out += (c < 0x20 || c == 0x7f || c == '\\') ? fmt::format("\\x{:02x}", c)
		                                            : std::string(1, static_cast<char>(c));
	return out;
}

void executable(std::string &t)
{
	struct stat st {
	};
	if (::stat("/proc/self/exe", &st) != 0)
		t += fmt::format("exe unknown {}\n", errno);
	else
		t += fmt::format("exe {} {} {} {}.{:09}\n", st.st_dev, st.st_ino, st.st_size,
		                 st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

void credentials(std::string &t)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	::getresuid(&ru, &eu, &su);
	::getresgid(&rg, &eg, &sg);
	t += fmt::format("uid {} {} {}\ngid {} {} {}\ngroups", ru, eu, su, rg, eg, sg);
	std::vector<gid_t> groups(static_cast<std::size_t>(std::max(0, ::getgroups(0, nullptr))));
	groups.resize(static_cast<std::size_t>(
	    std::max(0, ::getgroups(static_cast<int>(groups.size()), groups.data()))));
	std::sort(groups.begin(), groups.end());
	for (gid_t g : groups)
		t += fmt::format(" {}", g);
	t += "\n";
}

void process_state(std::string &t)
{
	for (int r = 0; r < RLIM_NLIMITS; ++r) {
		rlimit l{};
		if (::getrlimit(static_cast<__rlimit_resource>(r), &l) == 0)
			t += fmt::format("rlimit {} {} {}\n", r, l.rlim_cur, l.rlim_max);
	}
	for (const char *ns : {"cgroup", "ipc", "mnt", "net", "pid", "pid_for_children", "time",
	                       "time_for_children", "user", "uts"}) {
		char link[256] = {};
		const auto path = fmt::format("/proc/self/ns/{}", ns);
		const ssize_t n = ::readlink(path.c_str(), link, sizeof link - 1);
		t += fmt::format("ns {} {}\n", ns, n > 0 ? std::string(link, n) : "-");
	}
	struct stat root {
	};
	if (::stat("/", &root) == 0)
		t += fmt::format("root {} {}\n", root.st_dev, root.st_ino);
	// Capabilities, no_new_privs, seccomp, and the signals blocked and ignored (inherited
	// across exec: a session must start with the front's).
	if (auto status = read_text("/proc/self/status")) {
		std::istringstream in(*status);
		for (std::string line; std::getline(in, line);)
			for (const char *key :
			     {"Cap", "NoNewPrivs:", "Seccomp", "SigBlk:", "SigIgn:"})
				if (line.starts_with(key))
					t += "status " + line + "\n";
	}
	auto label = read_text("/proc/self/attr/current", 4096);
	t += "label " + quoted(label ? *label : "-") + "\n";
	auto oom = read_text("/proc/self/oom_score_adj", 64);
	t += "oom " + quoted(oom ? *oom : "-") + "\n";
	cpu_set_t cpus;
	CPU_ZERO(&cpus);
	t += "cpus";
	if (::sched_getaffinity(0, sizeof cpus, &cpus) == 0)
		for (int c = 0; c < CPU_SETSIZE; ++c)
			if (CPU_ISSET(c, &cpus))
				t += fmt::format(" {}", c);
	errno = 0;
	const int nice = ::getpriority(PRIO_PROCESS, 0);
	t += fmt::format("\nnice {}\npersonality {:x}\n", errno ? 0 : nice,
	                 static_cast<unsigned>(::personality(0xffffffff)));
}

} // namespace

bool per_session_variable(std::string_view entry)
{
	return entry.starts_with("SSH_") || entry.starts_with("XDG_SESSION_");
}

std::vector<std::string> config_files(const config &cfg, const environment &env)
{
	if (cfg.config_file)
		return {*cfg.config_file};
	return {env.etc_config, env.home + "/.rpmemd.conf"};
}

identity identify(const std::vector<std::string> &args, const std::vector<std::string> &files)
{
	identity id;
	std::string &t = id.text;
	t = "rpmemd resident identity 1\n";
	executable(t);
	credentials(t);
	for (const auto &a : args)
		t += "arg " + quoted(a) + "\n";
	for (const auto &f : files) {
		errno = 0;
		auto text = read_text(f);
		t += "config " + quoted(f) + " " +
		     (text              ? hash_hex(*text)
		      : errno == ENOENT ? std::string("absent")
		                        : fmt::format("unreadable {}", errno)) +
		     "\n";
	}
	std::vector<std::string> env;
	for (char **e = environ; e && *e; ++e)
		if (!per_session_variable(*e))
			env.emplace_back(*e);
	std::sort(env.begin(), env.end());
	for (const auto &e : env)
		t += "env " + quoted(e) + "\n";
	process_state(t);
	id.id = hash_hex(t).substr(0, 16);
	return id;
}

std::optional<place> locate(const config &cfg, const identity &id, std::string *why)
{
	const std::string dir = cfg.status_dir.empty() || cfg.status_dir == "none"
	                            ? rpmem::control::default_session_dir()
	                            : cfg.status_dir;
	if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
		*why = fmt::format("cannot create {}: {}", dir, std::strerror(errno));
		return std::nullopt;
	}
	struct stat st {
	};
	if (::lstat(dir.c_str(), &st) != 0) {
		*why = fmt::format("cannot use {}: {}", dir, std::strerror(errno));
		return std::nullopt;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != ::getuid()) {
		*why = fmt::format("{} is not a directory owned by this user (a symbolic link, or "
		                   "another user's)",
		                   dir);
		return std::nullopt;
	}
	if ((st.st_mode & 077) != 0) {
		*why = fmt::format("{} is open to its group or others (mode {:o}): make it 0700",
		                   dir, st.st_mode & 07777);
		return std::nullopt;
	}
	place p{dir, fmt::format("{}/resident-{}.sock", dir, id.id),
	        fmt::format("{}/resident-{}.lock", dir, id.id)};
	if (p.socket.size() >= sizeof(sockaddr_un{}.sun_path)) {
		*why = fmt::format("the socket path {} is longer than a Unix socket allows ({} "
		                   "bytes): choose a shorter status-dir",
		                   p.socket, sizeof(sockaddr_un{}.sun_path) - 1);
		return std::nullopt;
	}
	return p;
}

} // namespace rpmemd::resident
