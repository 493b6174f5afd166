// SPDX-License-Identifier: BSD-3-Clause
#include "log.hpp"

#include "config.hpp"

#include <rpmem/error.hpp>

#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

namespace rpmemd
{

namespace
{

constexpr std::array<std::string_view, 5> level_names = {"err", "warn", "notice", "info", "debug"};

int syslog_priority(log_level level)
{
	switch (level) {
	case log_level::err:
		return LOG_ERR;
	case log_level::warn:
		return LOG_WARNING;
	case log_level::notice:
		return LOG_NOTICE;
	case log_level::info:
		return LOG_INFO;
	case log_level::debug:
		return LOG_DEBUG;
	}
	return LOG_ERR;
}

/** ISO-8601 UTC with milliseconds: 2024-05-01T12:34:56.789Z */
void append_timestamp(std::string &out)
{
	timespec now{};
	clock_gettime(CLOCK_REALTIME, &now);
	tm utc{};
	gmtime_r(&now.tv_sec, &utc);
	fmt::format_to(std::back_inserter(out), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
	               utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
	               utc.tm_sec, now.tv_nsec / 1000000);
}

/** Copies `message`, escaping control bytes as \xNN so a message can never forge a second
 * log line (messages quote client-supplied names). */
void append_escaped(std::string &out, std::string_view message)
{
	for (char c : message) {
		auto byte = static_cast<unsigned char>(c);
		if (byte < 0x20 && c != '\t')
			fmt::format_to(std::back_inserter(out), "\\x{:02x}", byte);
		else if (byte == 0x7f)
			out += "\\x7f";
		else
			out += c;
	}
}

/** Writes all of `line`; one write(2) unless the kernel returns short. Errors are dropped:
 * there is nowhere left to report a failure to log. */
void write_all(int fd, std::string_view line)
{
	while (!line.empty()) {
		ssize_t n = ::write(fd, line.data(), line.size());
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		line.remove_prefix(static_cast<std::size_t>(n));
	}
}

/** Whether a syslog daemon listens on /dev/log, as glibc's syslog(3) sends there (datagram,
 *  then stream). syslog(3) drops messages silently when nobody does; we want to know. Returns
 *  0, or the errno of the last failed connect. */
int syslog_reachable()
{
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	std::strncpy(addr.sun_path, _PATH_LOG, sizeof addr.sun_path - 1);
	int err = 0;
	for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
		int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return errno;
		int r = ::connect(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr);
		err = r == 0 ? 0 : errno;
		::close(fd);
		if (r == 0)
			return 0;
	}
	return err;
}

} // namespace

std::optional<log_level> parse_log_level(std::string_view name)
{
	for (std::size_t i = 0; i < level_names.size(); ++i)
		if (level_names[i] == name)
			return static_cast<log_level>(i);
	return std::nullopt;
}

std::string_view to_string(log_level level)
{
	auto i = static_cast<std::size_t>(level);
	return i < level_names.size() ? level_names[i] : "unknown";
}

logger &logger::instance()
{
	// Deliberately leaked: worker threads may still log while static objects are destroyed.
	static logger *const the_logger = new logger();
	return *the_logger;
}

void logger::init_stderr(log_level level)
{
	replace_sink(sink::fd, 2, level, false);
}

void logger::init(const config &cfg)
{
	if (cfg.use_syslog) {
		if (int err = syslog_reachable(); err != 0) {
			// Loudly, at any level, on stderr (which the client shows when a session
			// fails), rather than into syslog(3)'s silence.
			replace_sink(sink::fd, 2, cfg.level, false);
			write_all(2,
			          fmt::format("rpmemd[{}]: warning: syslog is not reachable "
			                      "(connecting to {}: {}); logging to standard error "
			                      "instead. Start a syslog daemon, or set log-file in "
			                      "rpmemd's configuration (/etc/rpmemd/rpmemd.conf)\n",
			                      ::getpid(), _PATH_LOG, std::strerror(err)));
			return;
		}
		replace_sink(sink::syslog, -1, cfg.level, false);
		return;
	}
	int fd = ::open(cfg.log_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
	                0600);
	if (fd < 0) {
		int err = errno;
		throw rpmem::error(err, fmt::format("cannot open log file '{}': {}; fix "
		                                    "log-file or its directory's permissions, or "
		                                    "set use-syslog = yes",
		                                    cfg.log_file, std::strerror(err)));
	}
	replace_sink(sink::fd, fd, cfg.level, true);
}

void logger::replace_sink(sink new_sink, int new_fd, log_level level, bool own_fd)
{
	std::lock_guard lock(mutex_);
	if (own_fd_)
		::close(fd_);
	if (sink_ == sink::syslog && new_sink != sink::syslog)
		closelog();
	if (new_sink == sink::syslog && sink_ != sink::syslog)
		openlog("rpmemd", LOG_NDELAY | LOG_PID, LOG_USER);
	sink_ = new_sink;
	fd_ = new_fd;
	own_fd_ = own_fd;
	threshold_.store(static_cast<int>(level), std::memory_order_relaxed);
}

int logger::file_fd()
{
	std::lock_guard lock(mutex_);
	return sink_ == sink::fd ? fd_ : -1;
}

void logger::write(log_level level, std::string_view message)
{
	if (!enabled(level))
		return;
	std::string body;
	body.reserve(message.size());
	append_escaped(body, message);
	std::lock_guard lock(mutex_);
	if (sink_ == sink::syslog) {
		syslog(syslog_priority(level), "%s", body.c_str());
		return;
	}
	std::string line;
	line.reserve(body.size() + 64);
	append_timestamp(line);
	fmt::format_to(std::back_inserter(line), " rpmemd[{}]: {}: ", ::getpid(), to_string(level));
	line += body;
	line += '\n';
	write_all(fd_, line);
}

} // namespace rpmemd
