// SPDX-License-Identifier: BSD-3-Clause
// The pool store's work on files (pool_files.hpp): PMDK 1.12.1 rpmemd_db.c and the remote paths
// of set.c, rewritten.
#include "pool_files.hpp"

#include "poolset/poolset.hpp"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <fcntl.h>
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

part_rules rules_for(std::string_view descriptor, const sysfs &sys)
{
	part_rules r;
	r.owner = fmt::format("pool {}", descriptor);
	r.in_use_remedy = "another rpmemd has the pool open; close the pool there first";
	r.exists_remedy = "remove the pool first (rpmemd --remove)";
	r.sizes = part_rules::size_rule::exact;
	r.dax = sys;
	return r;
}

[[noreturn]] void fail_parts(const rpmem::error &e)
{
	fail(e.errnum() == EBUSY ? status::busy : status_of_errno(e.errnum()), e.errnum(),
	     e.message());
}

part_set acquire_parts(const layout &l, std::string_view descriptor, bool create, const sysfs &sys)
{
	const auto rules = rules_for(descriptor, sys);
	try {
		return create ? part_set::create(l.parts, l.nhdrs(), rules)
		              : part_set::open(l.parts, l.nhdrs(), rules);
	} catch (const store_error &) {
		throw;
	} catch (const rpmem::pmdk::part_truncated &e) {
		fail(status::damaged, e.errnum(),
		     fmt::format("{}; {}", e.message(), damaged_remedy));
	} catch (const rpmem::error &e) {
		fail_parts(e);
	}
}

} // namespace rpmemd::store_detail
