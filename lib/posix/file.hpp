// SPDX-License-Identifier: BSD-3-Clause
// Files, the POSIX way, for every part of rpmem: an owned file descriptor, and a file replaced
// whole (readers never see half of it). No dependencies beyond libc.
#pragma once

#include <string>
#include <string_view>
#include <sys/types.h>

namespace rpmem::posix
{

/** Owns a file descriptor; closing it also drops the flock held on it. */
class unique_fd
{
public:
	unique_fd() = default;
	explicit unique_fd(int fd) noexcept : fd_(fd) {}
	unique_fd(unique_fd &&o) noexcept : fd_(o.release()) {}
	unique_fd &operator=(unique_fd &&o) noexcept;
	unique_fd(const unique_fd &) = delete;
	unique_fd &operator=(const unique_fd &) = delete;
	~unique_fd();

	int get() const noexcept { return fd_; }
	int release() noexcept;

private:
	int fd_ = -1;
};

/**
 * Replaces `path` with `text`, whole: writes it to a new file beside `path`, then renames that
 * over `path` (which, if it is a symbolic link, is replaced, not followed). The new file is
 * created exclusively (O_CREAT | O_EXCL | O_NOFOLLOW: never a file or a link someone else put
 * there) under a name nobody can predict (`<path>.<16 random letters>.tmp`, like mkstemp's),
 * with `mode` less the umask. Returns 0, or the errno of the step that failed (then the new file
 * is removed and `path` is as it was); `why`, when given, then receives what failed, naming the
 * file and the system's reason.
 */
int replace_file(const std::string &path, std::string_view text, mode_t mode,
                 std::string *why = nullptr);

/** replace_file, durably: the new file is fsynced before the rename, and its directory after,
 *  so once it returns 0 a crash leaves `path` with `text`. */
int replace_file_durably(const std::string &path, std::string_view text, mode_t mode,
                         std::string *why = nullptr);

/** fsync(2) of directory `dir` (a rename or unlink in it made durable): 0 or the errno. */
int sync_directory(const std::string &dir);

} // namespace rpmem::posix
