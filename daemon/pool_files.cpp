// SPDX-License-Identifier: BSD-3-Clause
// The pool store's work on files (pool_files.hpp): PMDK 1.12.1 rpmemd_db.c and the remote paths
// of set.c, rewritten.
#include "pool_files.hpp"

#include "unsafe_shutdown.hpp"

#include "poolset/poolset.hpp"

#include <fmt/format.h>
#include <libpmem.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace rpmemd::store_detail
{

namespace
{

constexpr std::string_view poolset_signature = "PMEMPOOLSET";
constexpr std::size_t max_poolset_file = 1u << 20;

} // namespace

/** rpmemd.c rpmemd_db_get_status: how PMDK reports a failed system call to the client. */
status status_of_errno(int e) noexcept
{
	switch (e) {
	case EEXIST:
		return status::exists;
	case EACCES:
	case EPERM:
	case EROFS:
		return status::noaccess;
	case ENOENT:
	case ENOTDIR:
		return status::noexist;
	case EWOULDBLOCK:
		return status::busy;
	case EINVAL:
		return status::pool_cfg;
	default:
		return status::fatal;
	}
}

[[noreturn]] void fail(status st, int e, std::string msg)
{
	throw store_error(st, e, std::move(msg));
}

/** A failed system call: the message says what failed, the system's reason and what to do. */
[[noreturn]] void fail_errno(int e, std::string_view what, std::string_view todo)
{
	throw store_error(status_of_errno(e), e, system_failure(e, what, todo));
}

bool is_zero(const pool_attr &a) noexcept
{
	return a == pool_attr{};
}

std::uint64_t page_down(std::uint64_t v) noexcept
{
	return v & ~(page_size() - 1);
}

std::string read_poolset_text(int fd, const std::string &path)
{
	std::string text;
	std::array<char, 8192> buf;
	for (;;) {
		ssize_t n = ::read(fd, buf.data(), buf.size());
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail_errno(errno, fmt::format("cannot read pool set file {}", path));
		if (n == 0)
			return text;
		text.append(buf.data(), static_cast<std::size_t>(n));
		if (text.size() > max_poolset_file)
			fail(status::pool_cfg, EINVAL,
			     fmt::format("{} is larger than {} bytes: not a pool set file", path,
			                 max_poolset_file));
	}
}

/** Reads a pool set file; any other regular file is a single-part pool (PMDK set.c). */
layout load_layout(const std::string &path)
{
	unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
	if (fd.get() < 0)
		fail_errno(errno, fmt::format("cannot open pool set file {}", path));
	layout l;
	l.file = path;
	std::array<char, poolset_signature.size()> sig{};
	ssize_t n = pread(fd.get(), sig.data(), sig.size(), 0);
	if (n != static_cast<ssize_t>(sig.size()) ||
	    std::string_view(sig.data(), sig.size()) != poolset_signature) {
		struct stat st = {};
		if (fstat(fd.get(), &st) != 0)
			fail_errno(errno, fmt::format("cannot stat pool file {}", path));
		l.is_poolset = false;
		l.parts.push_back({.size = static_cast<std::uint64_t>(st.st_size), .path = path});
		return l;
	}
	try {
		auto set = rpmem::poolset::parse(read_poolset_text(fd.get(), path), path);
		l.replicas = set.replicas.size();
		l.single_header = set.opts.single_header;
		l.no_headers = set.opts.no_headers;
		if (!set.replicas.empty())
			l.parts = set.replicas[0].parts;
	} catch (const rpmem::poolset::parse_error &e) {
		fail(status::pool_cfg, EINVAL, fmt::format("invalid pool set file: {}", e.what()));
	}
	return l;
}

/** The rules every remote pool set obeys (util_pool_create_uuids / util_pool_open_remote). */
void check_layout(const layout &l, std::uint64_t min_size)
{
	if (page_size() != pool_hdr_size)
		fail(status::fatal, ENOTSUP,
		     fmt::format("pools need a {} byte page size, this host has {}", pool_hdr_size,
		                 page_size()));
	if (!l.is_poolset && l.parts[0].size < min_part_size)
		fail(status::pool_cfg, EINVAL,
		     fmt::format(
		         "{} is not a pool set file (its first line is not PMEMPOOLSET) and, "
		         "at {} bytes, too small to be a pool file (at least {}): if it "
		         "lists parts, make PMEMPOOLSET its first line",
		         l.file, l.parts[0].size, min_part_size));
	if (l.replicas != 1 || l.parts.empty())
		fail(status::pool_cfg, EINVAL,
		     fmt::format("{}: a pool set served by rpmemd must have exactly one replica "
		                 "with at least one part: remove its REPLICA lines",
		                 l.file));
	for (const auto &p : l.parts)
		if (p.size < min_part_size)
			fail(status::pool_cfg, EINVAL,
			     fmt::format("{}:{}: part {} is {} bytes; parts of remote pools must "
			                 "be at least {} bytes (2 MiB)",
			                 l.file, p.line, p.path, p.size, min_part_size));
	if (l.map_size() < min_pool_size)
		fail(status::pool_cfg, EINVAL,
		     fmt::format("{}: the pool is {} bytes, smaller than the minimum {}", l.file,
		                 l.map_size(), min_pool_size));
	if (l.map_size() < min_size)
		fail(status::badsize, EFBIG,
		     fmt::format("{}: the pool is {} bytes but the client needs {}: enlarge the "
		                 "parts of the pool set",
		                 l.file, l.map_size(), min_size));
}

/** PMDK: attributes go with headers, and SINGLEHDR must match the incompat flag. */
void check_create_attr(const layout &l, const std::optional<pool_attr> &attr)
{
	bool no_attr = !attr || is_zero(*attr);
	if (no_attr && !l.no_headers)
		fail(status::pool_cfg, EINVAL,
		     fmt::format("{}: the pool set has pool headers but the client sent no pool "
		                 "attributes: add 'OPTION NOHDRS' to the pool set, or create the "
		                 "pool with attributes",
		                 l.file));
	if (!no_attr && l.no_headers)
		fail(status::pool_cfg, EINVAL,
		     fmt::format("{}: pool attributes cannot be stored in a pool set with "
		                 "'OPTION NOHDRS': remove the option",
		                 l.file));
	if (!no_attr && l.single_header != bool(attr->incompat_features & feat_incompat_singlehdr))
		fail(status::pool_cfg, EINVAL,
		     fmt::format("{}: 'OPTION SINGLEHDR' is {} in the pool set but the SINGLEHDR "
		                 "feature is {} in the pool attributes: both sides must agree",
		                 l.file, l.single_header ? "set" : "not set",
		                 l.single_header ? "not set" : "set"));
}

void lock_part(int fd, const std::string &path, std::string_view descriptor)
{
	const int e = try_lock(fd);
	if (e == 0)
		return;
	if (e == EWOULDBLOCK)
		fail(status::busy, EBUSY,
		     fmt::format("pool {} is in use by another rpmemd{}: part {} is locked; close "
		                 "the pool there first",
		                 descriptor, lock_holder(fd), path));
	fail_errno(e, fmt::format("cannot lock pool part {}", path));
}

/** A Device DAX part as sysfs describes it; refuses other character devices. */
std::optional<dax_device> dax_of(const sysfs &sys, const struct stat &st,
                                 const rpmem::poolset::part &p, std::string_view descriptor)
{
	try {
		return sys.device_dax(st, p.path);
	} catch (const rpmem::error &e) {
		fail(status::pool_cfg, EINVAL, fmt::format("pool {}: {}", descriptor, e.message()));
	}
}

part_file open_part(const rpmem::poolset::part &p, std::string_view descriptor, const sysfs &sys)
{
	part_file f{.fd = unique_fd(::open(p.path.c_str(), O_RDWR | O_CLOEXEC)),
	            .path = p.path,
	            .size = p.size};
	if (f.fd.get() < 0)
		fail_errno(errno,
		           fmt::format("cannot open part {} of pool {}", p.path, descriptor));
	struct stat st = {};
	if (fstat(f.fd.get(), &st) != 0)
		fail_errno(errno, fmt::format("cannot stat part {}", p.path));
	auto dax = dax_of(sys, st, p, descriptor);
	if (!S_ISREG(st.st_mode) && !dax)
		fail(status::pool_cfg, EINVAL,
		     fmt::format("part {} of pool {} is neither a regular file nor a Device DAX",
		                 p.path, descriptor));
	lock_part(f.fd.get(), p.path, descriptor);
	// A Device DAX is as large as sysfs says; PMDK too wanted the declared size to match.
	auto size = dax ? dax->size : static_cast<std::uint64_t>(st.st_size);
	if (size != p.size)
		fail(status::pool_cfg, EINVAL,
		     fmt::format("part {} of pool {} is {}{} bytes but the pool set declares {}: "
		                 "declare its size",
		                 p.path, descriptor, dax ? "a Device DAX of " : "", size, p.size));
	f.dax_alignment = dax ? dax->alignment : 0;
	return f;
}

/** PMDK accepts an existing part of the declared size whose header area is all zeros. */
/** A Device DAX has no read(2): its head is read through a mapping of its alignment. */
std::array<std::uint8_t, pool_hdr_size> read_head(const part_file &f)
{
	std::array<std::uint8_t, pool_hdr_size> head{};
	if (f.dax_alignment) {
		try {
			header_window w(f.fd.get(), false, true, f.path, f.dax_alignment);
			std::memcpy(head.data(), &w.hdr(), head.size());
		} catch (const rpmem::error &e) {
			throw store_error(status_of_errno(e.errnum()), e.errnum(), e.message());
		}
	} else if (pread(f.fd.get(), head.data(), head.size(), 0) < 0) {
		fail_errno(errno, fmt::format("cannot read part {}", f.path));
	}
	return head;
}

void check_unused(const part_file &f, std::string_view descriptor)
{
	for (auto b : read_head(f))
		if (b != 0)
			fail(
			    status::exists, EEXIST,
			    fmt::format("cannot create pool {}: part {} already exists and is in "
			                "use (its first 4 KiB are not zero); remove the pool first "
			                "(rpmemd --remove)",
			                descriptor, f.path));
}

part_file create_part(const rpmem::poolset::part &p, std::string_view descriptor, const sysfs &sys)
{
	// 0600: the umask can only narrow it; PMDK's rpmemd widened parts to 0666.
	int fd = ::open(p.path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) { // an earlier pool's file, or a Device DAX
		part_file f = open_part(p, descriptor, sys);
		check_unused(f, descriptor);
		return f;
	}
	if (fd < 0)
		fail_errno(errno,
		           fmt::format("cannot create part {} of pool {}", p.path, descriptor));
	part_file f{.fd = unique_fd(fd), .path = p.path, .size = p.size, .created = true};
	return f;
}

/** Allocates the blocks now, so a full file system fails here instead of as SIGBUS later. */
void allocate_part(const part_file &f)
{
	int rc = posix_fallocate(f.fd.get(), 0, static_cast<off_t>(f.size));
	if (rc != 0)
		fail_errno(rc, fmt::format("cannot allocate {} bytes for part {}", f.size, f.path));
}

/** Zeroes the first `len` bytes of a part (a Device DAX through a mapping: it has no
 *  write(2)); false if that failed. */
bool zero_head(int fd, const std::string &path, std::uint64_t len,
               std::uint64_t dax_alignment) noexcept
{
	try {
		if (!dax_alignment) {
			std::vector<std::uint8_t> zeros(len, 0);
			return pwrite(fd, zeros.data(), zeros.size(), 0) ==
			       static_cast<ssize_t>(len);
		}
		header_window w(fd, false, true, path, std::max(len, dax_alignment));
		pmem_memset_persist(&w.hdr(), 0, len);
		return true;
	} catch (...) {
		return false;
	}
}

/** Removes a part as PMDK's util_unlink did: unlinks a file, zeroes the head of a Device DAX
 *  (which outlives any pool on it). Returns 0 or the errno. */
int remove_part(const part_file &f) noexcept
{
	if (!f.dax_alignment)
		return ::unlink(f.path.c_str()) == 0 ? 0 : errno;
	unique_fd rw(::open(f.path.c_str(), O_RDWR | O_CLOEXEC));
	if (rw.get() < 0)
		return errno;
	return zero_head(rw.get(), f.path, std::min(dax_zero_length, f.size), f.dax_alignment)
	           ? 0
	           : EIO;
}

void unlink_created(std::vector<part_file> &parts) noexcept
{
	for (auto &f : parts)
		if (f.created)
			::unlink(f.path.c_str());
}

/** Opens (create: creates) and locks every part; on failure removes what it created. */
/** PMDK's util_poolset_check_devdax: Device DAX parts are all or none, and several of them
 *  with a header each need a 4 KiB alignment (a header page must start the next mapping). */
void check_dax_rules(const std::vector<part_file> &parts, const layout &l,
                     std::string_view descriptor)
{
	for (const auto &f : parts)
		if ((f.dax_alignment != 0) != (parts[0].dax_alignment != 0))
			fail(status::pool_cfg, EINVAL,
			     fmt::format(
			         "pool {}: either all the parts must be Device DAX or none ({} "
			         "is{} one, {} is{})",
			         descriptor, parts[0].path, parts[0].dax_alignment ? "" : " not",
			         f.path, f.dax_alignment ? "" : " not"));
	for (const auto &f : parts)
		if (f.dax_alignment && parts.size() > 1 && l.nhdrs() == parts.size() &&
		    f.dax_alignment != page_size())
			fail(status::pool_cfg, EINVAL,
			     fmt::format(
			         "pool {}: Device DAX {} has a {}-byte alignment; several Device "
			         "DAX parts with a header each need 4 KiB: add 'OPTION SINGLEHDR' "
			         "to the pool set (on both sides), or reconfigure the namespaces",
			         descriptor, f.path, f.dax_alignment));
}

std::vector<part_file> acquire_parts(const layout &l, std::string_view descriptor, bool create,
                                     const sysfs &sys)
{
	std::vector<part_file> parts;
	try {
		for (const auto &p : l.parts) {
			parts.push_back(create ? create_part(p, descriptor, sys)
			                       : open_part(p, descriptor, sys));
			// Locked only once in the vector, so a failed lock still removes the file.
			if (parts.back().created)
				lock_part(parts.back().fd.get(), p.path, descriptor);
			if (create && !parts.back().dax_alignment) // a device is allocated already
				allocate_part(parts.back());
		}
		check_dax_rules(parts, l, descriptor);
	} catch (...) {
		unlink_created(parts);
		throw;
	}
	return parts;
}

} // namespace rpmemd::store_detail
