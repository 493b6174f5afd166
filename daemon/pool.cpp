// SPDX-License-Identifier: BSD-3-Clause
// One open pool of rpmemd's store: its parts mapped back to back, its headers, its shutdown
// state, its attributes.
#include "pool_files.hpp"
#include "pool_store.hpp"

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

#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer's runtime (dynamic annotations).
extern "C" void AnnotateBenignRaceSized(const char *file, int line, const volatile void *mem,
                                        unsigned long size, const char *description);
#endif

namespace rpmemd
{

using namespace store_detail;

// ---------------------------------------------------------------------------------- pool

pool::pool(std::string descriptor, part_set parts, bool single_header)
    : descriptor_(std::move(descriptor)), parts_(std::move(parts)),
      nhdrs_(static_cast<unsigned>(parts_.headers())), single_header_(single_header)
{
}

pool::~pool()
{
	try {
		mark_open(false);
	} catch (...) {
		// The pool's data is durable already; only the clean-shutdown mark is lost and
		// the next open re-initialises it, as PMDK does.
	}
}

void pool::map_parts()
{
	try {
		map_ = parts_.map();
	} catch (const rpmem::error &e) {
		throw store_error(status_of_errno(e.errnum()), e.errnum(),
		                  fmt::format("pool {}: {}", descriptor_, e.message()));
	}
#if defined(__SANITIZE_THREAD__)
	// The pool's bytes belong to the client: RMA writes and reads on different connections
	// (served by different workers' progress) and the lane executor's copies touch them on
	// different threads, in the order the client's completions impose. That order crosses the
	// network, where ThreadSanitizer cannot follow it (seen: a write landing by recv on one
	// worker "racing" with an earlier APM read's sendmsg on another). Races on these bytes
	// are ruled out by the protocol, and tried by the prefix, soak and fault tests instead.
	AnnotateBenignRaceSized(__FILE__, __LINE__, map_->base(), map_->size(),
	                        "pool bytes, ordered by the client");
#endif
}

void pool::write_headers(const pool_attr &attr)
{
	std::vector<uuid> ids(nhdrs_);
	for (auto &id : ids)
		id = generate_uuid();
	if (attr.uuid != uuid{})
		ids[0] = attr.uuid;
	auto or_own = [&](const uuid &u) { return u != uuid{} ? u : ids[0]; };
	const uuid poolset = attr.poolset_uuid != uuid{} ? attr.poolset_uuid : generate_uuid();
	for (unsigned p = 0; p < nhdrs_; ++p) {
		struct stat st = {};
		if (fstat(parts_[p].fd.get(), &st) != 0)
			fail_errno(errno, fmt::format("cannot stat part {}", parts_[p].path));
		auto links =
		    ring_links(ids, p, poolset, or_own(attr.prev_uuid), or_own(attr.next_uuid));
		auto w = window(p);
		w.hdr() = make_header(attr, links, static_cast<std::uint64_t>(st.st_ctime), p == 0);
		if (p == 0 && (attr.incompat_features & feat_incompat_sds)) {
			// PMDK records the devices' state, then marks the pool open.
			reset_shutdown_state(w.hdr(), devices());
			set_shutdown_dirty(w.hdr(), true);
		}
		w.persist();
		if (p == 0)
			attr_ = header_attr(w.hdr());
	}
	marked_open_ = true;
}

void pool::check_single_header(std::uint32_t incompat, const char *where) const
{
	if (single_header_ != bool(incompat & feat_incompat_singlehdr))
		fail(status::pool_cfg, EINVAL,
		     fmt::format("pool {}: 'OPTION SINGLEHDR' is {} in the pool set but the "
		                 "SINGLEHDR feature is {} in {}: both must agree",
		                 descriptor_, single_header_ ? "set" : "not set",
		                 single_header_ ? "not set" : "set", where));
}

void pool::load_headers()
{
	if (nhdrs_ == 0)
		return;
	std::vector<pool_hdr> hdrs;
	for (unsigned p = 0; p < nhdrs_; ++p)
		hdrs.push_back(window(p).hdr());
	// The pool set is right, the pool on disk is not: damaged, for the client to re-create.
	auto refuse = [&](unsigned p, const std::string &wrong) {
		fail(status::damaged, EINVAL,
		     fmt::format("pool {}: invalid header in part {}: {}; {}", descriptor_,
		                 parts_[p].path, wrong, damaged_remedy));
	};
	// Each header on its own first, so a wiped part is named as such, not as a bad link.
	for (unsigned p = 0; p < nhdrs_; ++p)
		if (auto wrong = check_header_alone(hdrs[p]))
			refuse(p, *wrong);
	for (unsigned p = 0; p < nhdrs_; ++p)
		if (auto wrong =
		        check_header(hdrs[p], hdrs[0], hdrs[(p + nhdrs_ - 1) % nhdrs_].part_uuid,
		                     hdrs[(p + 1) % nhdrs_].part_uuid))
			refuse(p, *wrong);
	check_single_header(load_le(hdrs[0].feat.incompat), "its pool header");
	attr_ = header_attr(hdrs[0]);
	check_unsafe_shutdown(hdrs[0]);
	mark_open(true);
}

void pool::check_unsafe_shutdown(const pool_hdr &first)
{
	if (!(load_le(first.feat.incompat) & feat_incompat_sds))
		return;
	auto now = devices();
	switch (check_shutdown_state(first.sds, now)) {
	case shutdown_verdict::consistent:
		return;
	case shutdown_verdict::adr_failure:
		fail(status::damaged, EINVAL,
		     fmt::format(
		         "pool {}: an ADR failure was detected, the pool might be corrupted: "
		         "it was open (its shutdown state in {} is dirty) when the devices "
		         "under it lost power unsafely (their unsafe shutdown count is {}, "
		         "the pool recorded {}); PMDK's rpmemd refused it too: {}",
		         descriptor_, parts_[0].path, now.usc, load_le(first.sds.usc),
		         damaged_remedy));
	case shutdown_verdict::reinit: {
		auto w = window(0);
		reset_shutdown_state(w.hdr(), now);
		w.persist();
	}
	}
}

device_state pool::devices() const
{
	try {
		return devices_of(parts_.parts());
	} catch (const rpmem::error &e) {
		throw store_error(status_of_errno(e.errnum()), e.errnum(),
		                  fmt::format("pool {}: {}", descriptor_, e.message()));
	}
}

void pool::mark_open(bool open)
{
	if (nhdrs_ == 0 || !map_ || marked_open_ == open)
		return;
	auto w = window(0);
	if (!(load_le(w.hdr().feat.incompat) & feat_incompat_sds))
		return;
	if (!open)
		map_->deep_persist(0, map_->size()); // PMDK drains the pool before clearing dirty
	set_shutdown_dirty(w.hdr(), open);
	w.persist();
	marked_open_ = open;
}

void pool::set_attr(const std::optional<pool_attr> &attr)
{
	bool no_attr = !attr || is_zero(*attr);
	if (nhdrs_ == 0) {
		if (!no_attr)
			fail(status::pool_cfg, EINVAL,
			     fmt::format("pool {} has no headers (OPTION NOHDRS): it cannot store "
			                 "pool attributes",
			                 descriptor_));
		return;
	}
	if (no_attr)
		fail(status::pool_cfg, EINVAL,
		     fmt::format("pool {} has headers: its attributes cannot be cleared",
		                 descriptor_));
	check_single_header(attr->incompat_features, "the new attributes");
	for (unsigned p = 0; p < nhdrs_; ++p) {
		auto w = window(p);
		pool_hdr &h = w.hdr();
		apply_attr(h, *attr);
		// Part 0's UUID is the client's; its neighbours' links follow
		// (util_replica_set_attr).
		if (p == 0)
			h.part_uuid = attr->uuid;
		if (p == nhdrs_ - 1)
			h.next_part_uuid = attr->uuid;
		if (p == 1 % nhdrs_)
			h.prev_part_uuid = attr->uuid;
		seal(h);
		w.persist();
	}
	attr_ = *attr;
}

void pool::discard() noexcept
{
	marked_open_ = false;
	map_.reset();
	parts_.discard();
}

} // namespace rpmemd
