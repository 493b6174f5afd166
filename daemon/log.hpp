// SPDX-License-Identifier: BSD-3-Clause
// rpmemd's logger: stderr until the configuration is read, then a log file or syslog.
//
// stdout is the control-protocol channel (docs/design.md, decision 4): nothing in this file ever
// writes to fd 1, and a unit test holds it to that.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace rpmemd
{

struct config;

/** Severity, most severe first; names and order are PMDK rpmemd's `--log-level` values. */
enum class log_level { err, warn, notice, info, debug };

/** "err", "warn", "notice", "info" or "debug"; nullopt for anything else. */
std::optional<log_level> parse_log_level(std::string_view name);
std::string_view to_string(log_level level);

/**
 * One process-wide logger (rpmemd is one process per SSH session). Thread-safe: each message
 * becomes exactly one write(2) of one line, so concurrent lines never interleave.
 *
 * File and stderr lines: "2024-05-01T12:34:56.789Z rpmemd[4242]: err: <message>\n".
 * Syslog: facility LOG_USER, LOG_NDELAY|LOG_PID; the level becomes the priority.
 * Messages below the configured level are dropped in every mode (PMDK passed everything to
 * syslog; we honour --log-level there too).
 */
class logger
{
public:
	/** The process's logger; it logs to stderr at level err until init() is called. It is
	 * never destroyed, so threads may log during static destruction. */
	static logger &instance();

	/** Logs to stderr (fd 2) from now on, at `level` and more severe. */
	void init_stderr(log_level level = log_level::err);

	/** Logs as `cfg` says: syslog when cfg.use_syslog, else cfg.log_file (opened for append,
	 * created 0600). Throws rpmem::error when the file cannot be opened; the previous
	 * destination stays in place then. */
	void init(const config &cfg);

	/** The log file's descriptor, or -1 when logging goes to syslog (for a signal handler's
	 *  last words; stderr counts as a file). */
	int file_fd();

	/** Whether a message at `level` would be written (cheap; check before costly formatting).
	 */
	bool enabled(log_level level) const noexcept
	{
		return static_cast<int>(level) <= threshold_.load(std::memory_order_relaxed);
	}

	template <class... A>
	void log(log_level level, fmt::format_string<A...> format, A &&...args)
	{
		if (!enabled(level))
			return;
		write(level, fmt::vformat(format, fmt::make_format_args(args...)));
	}

	/** Writes one already formatted message. Control characters in it (a newline in a
	 * client-supplied pool name, say) are escaped, so one message is always one line. */
	void write(log_level level, std::string_view message);

	logger(const logger &) = delete;
	logger &operator=(const logger &) = delete;

private:
	enum class sink { fd, syslog };

	logger() = default;
	~logger() = default;
	void replace_sink(sink new_sink, int new_fd, log_level level, bool own_fd);

	std::mutex mutex_; // guards sink_ and fd_ against a concurrent init()
	sink sink_ = sink::fd;
	int fd_ = 2;
	bool own_fd_ = false; // fd_ is a log file we opened (and must close on re-init)
	std::atomic<int> threshold_{static_cast<int>(log_level::err)};
};

template <class... A> void log_err(fmt::format_string<A...> format, A &&...args)
{
	logger::instance().log(log_level::err, format, std::forward<A>(args)...);
}
template <class... A> void log_warn(fmt::format_string<A...> format, A &&...args)
{
	logger::instance().log(log_level::warn, format, std::forward<A>(args)...);
}
template <class... A> void log_notice(fmt::format_string<A...> format, A &&...args)
{
	logger::instance().log(log_level::notice, format, std::forward<A>(args)...);
}
template <class... A> void log_info(fmt::format_string<A...> format, A &&...args)
{
	logger::instance().log(log_level::info, format, std::forward<A>(args)...);
}
template <class... A> void log_debug(fmt::format_string<A...> format, A &&...args)
{
	logger::instance().log(log_level::debug, format, std::forward<A>(args)...);
}

} // namespace rpmemd
