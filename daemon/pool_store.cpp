// SPDX-License-Identifier: BSD-3-Clause
// rpmemd's pool store (PMDK 1.12.1 rpmemd_db.c, rewritten): pool sets under the poolset
// directory, created, opened and removed with PMDK's rules.
#include "pool_store.hpp"

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

namespace rpmemd
{

using namespace store_detail;

store_error::store_error(rpmem::control::status st, int errnum, std::string msg)
    : rpmem::error(errnum, msg), status_(st)
{
}

const char *store_error::what() const noexcept
{
	return message().c_str();
}

// ---------------------------------------------------------------------------- pool_store

pool_store::pool_store(std::string poolset_dir, std::string sysfs_root)
    : dir_(std::move(poolset_dir)), sysfs_(std::move(sysfs_root))
{
	if (dir_.empty() || dir_.front() != '/')
		fail(status::fatal, EINVAL,
		     fmt::format("poolset directory '{}' is not an absolute path: set poolset-dir "
		                 "to one",
		                 dir_));
	char real[PATH_MAX];
	if (!realpath(dir_.c_str(), real))
		fail_errno(errno, fmt::format("cannot use poolset directory {}", dir_),
		           "create it or set poolset-dir to an existing directory");
	struct stat st = {};
	if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode))
		fail(status::fatal, ENOTDIR,
		     fmt::format("poolset directory {} is not a directory", dir_));
	real_dir_ = real;
}

std::string pool_store::resolve(std::string_view descriptor) const
{
	auto bad = [&](std::string_view why) {
		fail(status::badname, EINVAL,
		     fmt::format("invalid pool descriptor '{}': {}", descriptor, why));
	};
	if (descriptor.empty())
		bad("it is empty");
	if (descriptor.find('\0') != std::string_view::npos)
		bad("it contains a NUL byte");
	if (descriptor.front() == '/')
		bad("it must be relative to the poolset directory");
	for (std::size_t pos = 0; pos <= descriptor.size();) {
		std::size_t end = std::min(descriptor.find('/', pos), descriptor.size());
		if (descriptor.substr(pos, end - pos) == "..")
			bad("'..' components are not allowed");
		pos = end + 1;
	}
	std::string path = fmt::format("{}/{}", dir_, descriptor);
	char real[PATH_MAX];
	if (!realpath(path.c_str(), real)) {
		if (errno == ELOOP)
			bad("too many symbolic links");
		fail_errno(
		    errno,
		    fmt::format("cannot find pool set file {} (descriptor '{}')", path, descriptor),
		    fmt::format("write the pool set file in the poolset directory {} or fix "
		                "the descriptor",
		                dir_));
	}
	std::string_view r(real);
	if (!r.starts_with(real_dir_) || r.size() <= real_dir_.size() ||
	    (real_dir_ != "/" && r[real_dir_.size()] != '/'))
		bad(fmt::format("it leads outside the poolset directory {} (to {})", dir_, r));
	struct stat st = {};
	if (stat(real, &st) != 0)
		fail_errno(errno, fmt::format("cannot stat pool set file {}", real));
	if (!S_ISREG(st.st_mode))
		bad(fmt::format("{} is not a regular file", real));
	return std::string(r);
}

std::unique_ptr<pool> pool_store::create(std::string_view descriptor,
                                         const std::optional<pool_attr> &attr,
                                         std::uint64_t min_size)
{
	layout l = load_layout(resolve(descriptor));
	check_layout(l, min_size);
	check_create_attr(l, attr);
	std::unique_ptr<pool> p(new pool(
	    std::string(descriptor), acquire_parts(l, descriptor, true, sysfs_), l.single_header));
	try {
		p->map_parts();
		if (l.nhdrs() > 0)
			p->write_headers(*attr);
	} catch (...) {
		p->discard();
		throw;
	}
	return p;
}

std::unique_ptr<pool> pool_store::open(std::string_view descriptor, std::uint64_t min_size)
{
	layout l = load_layout(resolve(descriptor));
	check_layout(l, min_size);
	std::unique_ptr<pool> p(new pool(
	    std::string(descriptor), acquire_parts(l, descriptor, false, sysfs_), l.single_header));
	p->map_parts();
	p->load_headers();
	return p;
}

void pool_store::remove(std::string_view descriptor, bool force, bool remove_poolset_file)
{
	std::optional<layout> l;
	try {
		l = load_layout(resolve(descriptor));
		if (l->replicas != 1)
			fail(status::pool_cfg, EINVAL,
			     fmt::format("{}: cannot remove a pool set with REPLICA lines",
			                 l->file));
	} catch (const store_error &e) {
		if (!force || e.status() == status::badname)
			throw;
		l.reset();
	}
	// As PMDK's rpmemd, a part that cannot be removed does not keep the others (a half-removed
	// pool set is worse to clean up); a busy pool still keeps all of them (lock_part throws).
	std::vector<std::string> failures;
	int first_errno = 0;
	auto failed = [&](int e, const std::string &path) {
		if (force)
			return;
		first_errno = first_errno ? first_errno : e;
		failures.push_back(system_failure(
		    e, fmt::format("cannot remove part {} of pool {}", path, descriptor)));
	};
	const std::vector<rpmem::poolset::part> none;
	auto rules = rules_for(descriptor, sysfs_);
	rules.read_only = true;
	rules.sizes = part_rules::size_rule::any;
	std::vector<part_file> locked;
	for (const auto &p : l ? l->parts : none) {
		try {
			locked.push_back(open_part(p.path, p.size, p.line, rules));
		} catch (const rpmem::error &e) {
			// Busy is reported even with force: a pool in use is never pulled from
			// under its rpmemd (PMDK's --force silently skipped such parts); so is a
			// part that is neither a file nor a Device DAX. A part that cannot be
			// opened is one failure among the others.
			if (e.errnum() == EBUSY || e.errnum() == EINVAL)
				fail_parts(e);
			failed(e.errnum(), p.path);
		}
	}
	for (const auto &f : locked)
		if (int e = remove_part(f))
			failed(e, f.path);
	if (!failures.empty())
		throw store_error(
		    status_of_errno(first_errno), first_errno,
		    fmt::format("{}. The other parts were removed; the pool set file is "
		                "kept: fix that and remove again, or use --force",
		                fmt::join(failures, ". ")));
	if (remove_poolset_file && (!l || l->is_poolset)) {
		std::string path = fmt::format("{}/{}", dir_, descriptor);
		if (::unlink(path.c_str()) != 0 && !force)
			fail_errno(errno, fmt::format("cannot remove pool set file {}", path));
	}
}

} // namespace rpmemd
