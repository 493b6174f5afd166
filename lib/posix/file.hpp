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
 * Replaces `path` with `text`, whole: writes it to `tmp` (created with `mode`, opened with
 * O_CREAT | O_TRUNC | O_CLOEXEC plus `open_flags`), then renames `tmp` over `path`. Returns 0,
 * or the errno of the step that failed (then `tmp` is removed and `path` is as it was).
 */
int replace_file(const std::string &path, const std::string &tmp, std::string_view text,
                 mode_t mode, int open_flags = 0);

} // namespace rpmem::posix
