// SPDX-License-Identifier: BSD-3-Clause
#include "pmdk/part_file.hpp"

#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace rpmem::pmdk
{

std::string lock_holder(int fd)
{
	struct stat st = {};
	std::FILE *f = std::fopen("/proc/locks", "re");
	if (fstat(fd, &st) != 0 || f == nullptr) {
		if (f)
			std::fclose(f);
		return {};
	}
	std::string who;
	char line[256];
	while (who.empty() && std::fgets(line, sizeof(line), f)) {
		unsigned long pid = 0, ino = 0;
		unsigned maj = 0, min = 0;
		if (std::sscanf(line, "%*d: FLOCK %*s %*s %lu %x:%x:%lu", &pid, &maj, &min, &ino) ==
		        4 &&
		    ino == st.st_ino && maj == major(st.st_dev) && min == minor(st.st_dev))
			who = fmt::format(" (pid {})", pid);
	}
	std::fclose(f);
	return who;
}

int try_lock(int fd) noexcept
{
	return flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno;
}

void lock_or_throw(int fd, const std::string &path, std::string_view remedy)
{
	int e = try_lock(fd);
	if (e == 0)
		return;
	if (e == EWOULDBLOCK)
		throw rpmem::error(
		    EBUSY, fmt::format("{} is in use{}: {}", path, lock_holder(fd), remedy));
	throw rpmem::error(e, system_failure(e, fmt::format("cannot lock {}", path)));
}

unique_fd create_part(const std::string &path, std::uint64_t size)
{
	unique_fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
	if (fd.get() < 0) {
		int e = errno;
		throw rpmem::error(
		    e, system_failure(e, fmt::format("cannot create pool part {}", path),
		                      "check that its directory exists and is "
		                      "writable"));
	}
	lock_or_throw(fd.get(), path, "another process is creating or using the pool");
	struct stat st {
	};
	if (fstat(fd.get(), &st) == 0 && st.st_size != 0)
		throw rpmem::error(EEXIST,
		                   fmt::format("pool part {} already exists ({} bytes): remove "
		                               "it, or open the pool set instead of creating "
		                               "it",
		                               path, st.st_size));
	if (int e = posix_fallocate(fd.get(), 0, static_cast<off_t>(size)))
		throw rpmem::error(e, system_failure(e, fmt::format("cannot allocate {} bytes for "
		                                                    "pool part {}",
		                                                    size, path)));
	return fd;
}

unique_fd open_part(const std::string &path)
{
	unique_fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
	if (fd.get() < 0) {
		int e = errno;
		throw rpmem::error(
		    e, system_failure(e, fmt::format("cannot open pool part {}", path)));
	}
	lock_or_throw(fd.get(), path, "another process has the pool open; close it there first");
	return fd;
}

} // namespace rpmem::pmdk
