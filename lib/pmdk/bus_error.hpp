// SPDX-License-Identifier: BSD-3-Clause
// A SIGBUS in rpmemd means a mapped part lost its backing: an administrator truncated or
// replaced a part file under a live session, or its storage failed. The process cannot go on,
// but it must not die silently: the handler names the part in the log and on stderr (the
// client shows stderr), then lets the signal end the process as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rpmem::pmdk
{

/**
 * Installs the SIGBUS handler. It writes one line to `log_fd` (the log file, or -1 when
 * logging goes to syslog, which a signal handler cannot use) and to stderr, with only
 * async-signal-safe calls.
 */
void report_bus_errors(int log_fd);

/** While alive, says that [begin, begin+length) maps `path` from `file_offset` on. */
class mapped_range
{
public:
	mapped_range(const void *begin, std::size_t length, std::string_view path,
	             std::uint64_t file_offset) noexcept;
	~mapped_range();
	mapped_range(const mapped_range &) = delete;
	mapped_range &operator=(const mapped_range &) = delete;

private:
	int slot_; // -1: the table was full; the handler then names no part
};

} // namespace rpmem::pmdk
