// SPDX-License-Identifier: BSD-3-Clause
#include "client/log.hpp"

#include "client/env.hpp"

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <mutex>
#include <string>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

namespace rpmem::client
{

namespace
{

/** Whether stderr is the systemd journal: JOURNAL_STREAM ("device:inode", set by systemd
 *  for a service whose stderr goes to the journal) names the file fd 2 is. */
bool stderr_is_journal()
{
	const char *js = std::getenv("JOURNAL_STREAM");
	unsigned long long dev = 0, ino = 0;
	struct stat st {
	};
	if (!js || std::sscanf(js, "%llu:%llu", &dev, &ino) != 2 || ::fstat(2, &st) != 0)
		return false;
	return st.st_dev == dev && st.st_ino == ino;
}

/**
 * The level when RPMEM_LOG_LEVEL is not set: errors (1) when nobody asked for a log file and
 * stderr is a terminal or the journal, else nothing. libpmemobj and libpmempool never call
 * rpmem_errormsg(), so without this a user of stock tools sees only "creating remote replica
 * #1 failed" and never our reason; a program whose stderr is a pipe or a file may parse or
 * keep it, so there the library stays silent unless asked, as PMDK's did.
 */
int default_level(const char *file)
{
	if (file && *file)
		return 0;
	return ::isatty(2) || stderr_is_journal() ? 1 : 0;
}

/** Errors a process sends to syslog at most: a failing program must not flood it. */
constexpr int max_syslog_errors = 8;

struct log_sink {
	int level = 0;
	int fd = 2;
	bool seen = false; // the log puts errors where an operator looks
	std::mutex mu;
	int syslogged = 0; // errors sent to syslog (mu)

	log_sink()
	{
		const char *file = std::getenv("RPMEM_LOG_FILE");
		const char *lvl = std::getenv("RPMEM_LOG_LEVEL");
		level = lvl && *lvl ? static_cast<int>(std::max(0LL, parse_env_int(lvl)))
		                    : default_level(file);
		seen = level >= 1 && (file && *file ? true : ::isatty(2) || stderr_is_journal());
		if (level == 0 || !file || !*file)
			return;
		std::string path = file;
		int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
		if (path.back() == '-') {
			// A name anyone can predict: a link planted there is not followed (it
			// would append to a file of the planter's choosing, with our rights).
			path += std::to_string(getpid());
			flags |= O_NOFOLLOW;
		}
		int f = ::open(path.c_str(), flags, 0600);
		if (f >= 0)
			fd = f;
		else // the log goes to stderr after all
			seen = ::isatty(2) || stderr_is_journal();
	}
};

log_sink &sink()
{
	static log_sink s;
	return s;
}

} // namespace

int log_level() noexcept
{
	return sink().level;
}

bool errors_unseen() noexcept
{
	return !sink().seen;
}

void log_write(int level, std::string_view message) noexcept
{
	static const char *names[] = {"", "error", "warning", "notice", "debug"};
	auto &s = sink();
	std::string line = "<librpmem>: <" + std::to_string(level) + "> [" +
	                   names[std::min(level, 4)] + "] " + std::string(message) + "\n";
	if (level <= s.level) {
		ssize_t r = ::write(s.fd, line.data(), line.size());
		(void)r;
	}
	if (level != 1 || s.seen)
		return;
	std::lock_guard g(s.mu);
	if (s.syslogged == max_syslog_errors)
		return;
	// No openlog(): the application's identity and options stay its own.
	line.pop_back();
	syslog(LOG_USER | LOG_ERR, "%s", line.c_str());
	if (++s.syslogged == max_syslog_errors)
		syslog(LOG_USER | LOG_ERR,
		       "<librpmem>: further errors are not sent to syslog: set RPMEM_LOG_FILE (and "
		       "RPMEM_LOG_LEVEL) to keep them all");
}

} // namespace rpmem::client
