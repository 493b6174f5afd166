// SPDX-License-Identifier: BSD-3-Clause
#include "pmdk/part_file.hpp"

#include "pmdk/pool_map.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>
#include <libpmem.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <vector>

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

void lock_or_throw(int fd, const std::string &what, std::string_view remedy)
{
	int e = try_lock(fd);
	if (e == 0)
		return;
	if (e == EWOULDBLOCK)
		throw rpmem::error(
		    EBUSY, fmt::format("{} is in use{}: {}", what, lock_holder(fd), remedy));
	throw rpmem::error(e, system_failure(e, fmt::format("cannot lock {}", what)));
}

std::array<std::uint8_t, pool_hdr_size> read_head(const part_file &f)
{
	std::array<std::uint8_t, pool_hdr_size> head{};
	if (f.dax_alignment) {
		header_window w(f.fd.get(), false, true, f.path, f.dax_alignment);
		std::memcpy(head.data(), &w.hdr(), head.size());
	} else if (pread(f.fd.get(), head.data(), head.size(), 0) < 0) {
		const int e = errno;
		throw rpmem::error(e,
		                   system_failure(e, fmt::format("cannot read part {}", f.path)));
	}
	return head;
}

pool_hdr read_header(const part_file &f)
{
	if (!f.dax_alignment && f.file_size < pool_hdr_size)
		throw rpmem::error(EINVAL, fmt::format("cannot read the pool header of {}: the "
		                                       "file is shorter than {} bytes",
		                                       f.path, pool_hdr_size));
	const auto head = read_head(f);
	pool_hdr h;
	static_assert(sizeof(h) == head.size());
	std::memcpy(&h, head.data(), sizeof(h));
	return h;
}

void write_header(const part_file &f, const pool_hdr &h, bool is_pmem)
{
	header_window w(f.fd.get(), false, is_pmem, f.path,
	                std::max<std::uint64_t>(pool_hdr_size, f.dax_alignment));
	w.hdr() = h;
	w.persist();
}

std::optional<pool_hdr> peek_header(const std::string &path)
{
	part_file f{.fd = unique_fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)),
	            .path = path};
	struct stat st = {};
	if (f.fd.get() < 0 || fstat(f.fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
		return std::nullopt;
	pool_hdr h;
	if (pread(f.fd.get(), &h, sizeof(h), 0) != static_cast<ssize_t>(sizeof(h)))
		return std::nullopt;
	return h;
}

std::optional<long> lock_holder_pid(const std::string &path)
{
	// Non-blocking and regular files only: the path may come from a record file.
	unique_fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
	struct stat st = {};
	if (fd.get() < 0 || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
		return std::nullopt;
	const std::string holder = lock_holder(fd.get()); // " (pid N)" or ""
	long pid = 0;
	if (std::sscanf(holder.c_str(), " (pid %ld)", &pid) != 1)
		return std::nullopt;
	return pid;
}

std::string part_rules::name(const std::string &path) const
{
	return owner.empty() ? path : fmt::format("part {} of {}", path, owner);
}

namespace
{

[[noreturn]] void fail_errno(int e, const std::string &what, std::string_view todo = {})
{
	throw rpmem::error(e, system_failure(e, what, todo));
}

/** What part `f` is: a regular file (nullopt) or a Device DAX; refuses anything else. */
std::optional<dax_device> kind_of(const part_file &f, const struct stat &st, const part_rules &r)
{
	std::optional<dax_device> dax;
	try {
		dax = r.dax.device_dax(st, f.path);
	} catch (const rpmem::error &e) {
		if (r.owner.empty())
			throw;
		throw rpmem::error(e.errnum(), fmt::format("{}: {}", r.owner, e.message()));
	}
	if (!S_ISREG(st.st_mode) && !dax)
		throw rpmem::error(EINVAL, fmt::format("{} is neither a regular file nor a Device "
		                                       "DAX",
		                                       r.name(f.path)));
	return dax;
}

/** The part's size against the declared one, by the caller's rule. A part of a pool that
 *  exists (`in_pool`) shorter than rpmemd's exact rule wants lost bytes: part_truncated. */
void check_size(const part_file &f, std::uint64_t actual, bool dax, unsigned line,
                const part_rules &r, bool in_pool)
{
	using enum part_rules::size_rule;
	if (r.sizes == exact && in_pool && actual < f.size && !dax)
		throw part_truncated(
		    EINVAL, fmt::format("{} is {} bytes, shorter than the {} the pool set declares "
		                        "(line {}): the file was truncated, or the pool set "
		                        "declares more than it holds",
		                        r.name(f.path), actual, f.size, line));
	if (r.sizes == exact && actual != f.size)
		throw rpmem::error(
		    EINVAL,
		    fmt::format("{} is {}{} bytes but the pool set declares {}: declare "
		                "its size",
		                r.name(f.path), dax ? "a Device DAX of " : "", actual, f.size));
	if (r.sizes == at_least && actual < f.size)
		throw rpmem::error(EINVAL, fmt::format("{} has {} bytes but the pool set says {}: "
		                                       "fix the size on line {}",
		                                       r.name(f.path), actual, f.size, line));
}

/** Opens, identifies and sizes an existing part; locks it unless `lock` is false. */
part_file open_existing(const std::string &path, std::uint64_t size, unsigned line,
                        const part_rules &r, bool check_declared_size)
{
	part_file f{
	    .fd = unique_fd(::open(path.c_str(), (r.read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC)),
	    .path = path,
	    .size = size};
	if (f.fd.get() < 0)
		fail_errno(errno, fmt::format("cannot open {}", r.name(path)));
	struct stat st = {};
	if (fstat(f.fd.get(), &st) != 0)
		fail_errno(errno, fmt::format("cannot stat {}", r.name(path)));
	auto dax = kind_of(f, st, r);
	lock_or_throw(f.fd.get(), r.name(path), r.in_use_remedy);
	f.file_size = dax ? dax->size : static_cast<std::uint64_t>(st.st_size);
	if (check_declared_size)
		check_size(f, f.file_size, dax.has_value(), line, r, true);
	f.dax_alignment = dax ? dax->alignment : 0;
	return f;
}

/** create's existing part may be a symbolic link only to a character device (a Device DAX,
 *  /dev/daxX.Y, as udev names them); a link to a file is refused (EEXIST). */
void refuse_link_to_file(const std::string &path, const part_rules &r)
{
	struct stat link = {}, target = {};
	if (lstat(path.c_str(), &link) != 0 || !S_ISLNK(link.st_mode))
		return;
	if (stat(path.c_str(), &target) == 0 && S_ISCHR(target.st_mode))
		return;
	throw rpmem::error(EEXIST, fmt::format("cannot create {}: part {} already exists as a "
	                                       "symbolic link to a file; a new part is never "
	                                       "written through a link: remove it, or name the "
	                                       "file itself in the pool set",
	                                       r.owner.empty() ? "the pool" : r.owner, path));
}

/** An existing part create may take over: empty, or as large as declared with a zeroed head
 *  (what a removed pool leaves on a Device DAX). Else EEXIST: it belongs to a pool. */
void adopt_or_throw(const part_file &f, unsigned line, const part_rules &r)
{
	const auto actual = f.file_size;
	if (!f.dax_alignment && actual == 0)
		return;
	if (r.sizes == part_rules::size_rule::exact) // rpmemd: another size is declared wrongly
		check_size(f, actual, f.dax_alignment != 0, line, r, false);
	const auto head = read_head(f);
	const bool zero = std::all_of(head.begin(), head.end(), [](auto b) { return b == 0; });
	if (actual >= f.size && zero)
		return;
	throw rpmem::error(
	    EEXIST, fmt::format("cannot create {}: part {} already exists and is in use "
	                        "({} bytes{}); {}",
	                        r.owner.empty() ? "the pool" : r.owner, f.path, actual,
	                        zero ? "" : ", its first 4 KiB are not zero", r.exists_remedy));
}

} // namespace

part_file open_part(const std::string &path, std::uint64_t size, unsigned line,
                    const part_rules &rules)
{
	return open_existing(path, size, line, rules, true);
}

part_file create_part(const std::string &path, std::uint64_t size, unsigned line,
                      const part_rules &rules)
{
	// 0600: the umask can only narrow it; PMDK's rpmemd widened parts to 0666.
	int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	part_file f;
	if (fd < 0 && errno == EEXIST) {
		// An earlier pool's part left unused, or a Device DAX: adopted when empty or
		// of the declared size with a zeroed head (PMDK's rule). A link is taken only
		// to a Device DAX: one planted at a part's name must not make the pool write
		// into whatever file it points at.
		refuse_link_to_file(path, rules);
		f = open_existing(path, size, line, rules, false);
		adopt_or_throw(f, line, rules);
	} else if (fd < 0) {
		fail_errno(errno, fmt::format("cannot create {}", rules.name(path)),
		           "check that its directory exists and is writable");
	} else {
		f = part_file{.fd = unique_fd(fd), .path = path, .size = size, .created = true};
		try {
			lock_or_throw(fd, rules.name(path), rules.in_use_remedy);
		} catch (...) {
			::unlink(path.c_str());
			throw;
		}
	}
	if (f.dax_alignment)
		return f; // a device has its blocks
	if (int e = posix_fallocate(f.fd.get(), 0, static_cast<off_t>(size))) {
		if (f.created)
			::unlink(path.c_str());
		fail_errno(e,
		           fmt::format("cannot allocate {} bytes for {}", size, rules.name(path)));
	}
	f.file_size = std::max(f.file_size, size);
	return f;
}

bool zero_head(const part_file &f, std::uint64_t len) noexcept
{
	try {
		if (!f.dax_alignment) {
			std::vector<std::uint8_t> zeros(len, 0);
			return pwrite(f.fd.get(), zeros.data(), zeros.size(), 0) ==
			       static_cast<ssize_t>(len);
		}
		header_window w(f.fd.get(), false, true, f.path, std::max(len, f.dax_alignment));
		pmem_memset_persist(&w.hdr(), 0, len);
		return true;
	} catch (...) {
		return false;
	}
}

int remove_part(const part_file &f) noexcept
{
	if (!f.dax_alignment)
		return ::unlink(f.path.c_str()) == 0 ? 0 : errno;
	part_file rw{.fd = unique_fd(::open(f.path.c_str(), O_RDWR | O_CLOEXEC)),
	             .path = f.path,
	             .size = f.size,
	             .dax_alignment = f.dax_alignment};
	if (rw.fd.get() < 0)
		return errno;
	return zero_head(rw, std::min(dax_zero_length, f.size)) ? 0 : EIO;
}

} // namespace rpmem::pmdk
