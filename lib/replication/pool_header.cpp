// SPDX-License-Identifier: BSD-3-Clause
#include "replication/pool_header.hpp"

#include <cstring>

namespace rpmem::replication
{

void write_header(void *dst, const header_fields &h)
{
	pmdk::pool_hdr hdr{};
	hdr.signature = h.signature;
	pmdk::store_le(hdr.major, h.major);
	pmdk::store_le(hdr.feat.compat, h.compat);
	pmdk::store_le(hdr.feat.incompat, h.incompat);
	pmdk::store_le(hdr.feat.ro_compat, h.ro_compat);
	hdr.poolset_uuid = h.poolset;
	hdr.part_uuid = h.self;
	hdr.prev_part_uuid = h.prev_part;
	hdr.next_part_uuid = h.next_part;
	hdr.prev_repl_uuid = h.prev_repl;
	hdr.next_repl_uuid = h.next_repl;
	pmdk::store_le(hdr.crtime, h.crtime);
	std::memcpy(&hdr.arch, h.arch.data(), sizeof(hdr.arch)); // stored form, verbatim
	pmdk::seal(hdr);
	std::memcpy(dst, &hdr, sizeof(hdr));
}

std::optional<header_fields> read_header(const void *src, std::string *why)
{
	pmdk::pool_hdr hdr;
	std::memcpy(&hdr, src, sizeof(hdr));
	if (auto wrong = pmdk::check_header_alone(hdr)) {
		*why = *wrong;
		return std::nullopt;
	}
	header_fields h;
	h.signature = hdr.signature;
	h.major = pmdk::load_le(hdr.major);
	h.compat = pmdk::load_le(hdr.feat.compat);
	h.incompat = pmdk::load_le(hdr.feat.incompat);
	h.ro_compat = pmdk::load_le(hdr.feat.ro_compat);
	h.poolset = hdr.poolset_uuid;
	h.self = hdr.part_uuid;
	h.prev_part = hdr.prev_part_uuid;
	h.next_part = hdr.next_part_uuid;
	h.prev_repl = hdr.prev_repl_uuid;
	h.next_repl = hdr.next_repl_uuid;
	h.crtime = pmdk::load_le(hdr.crtime);
	std::memcpy(h.arch.data(), &hdr.arch, sizeof(hdr.arch));
	return h;
}

control::pool_attr to_attr(const header_fields &h)
{
	control::pool_attr a;
	a.signature = h.signature;
	a.major = h.major;
	a.compat_features = h.compat;
	a.incompat_features = h.incompat;
	a.ro_compat_features = h.ro_compat;
	a.poolset_uuid = h.poolset;
	a.uuid = h.self;
	a.prev_uuid = h.prev_repl;
	a.next_uuid = h.next_repl;
	a.user_flags = h.arch;
	return a;
}

header_fields from_attr(const control::pool_attr &a)
{
	header_fields h;
	h.signature = a.signature;
	h.major = a.major;
	h.compat = a.compat_features;
	h.incompat = a.incompat_features;
	h.ro_compat = a.ro_compat_features;
	h.poolset = a.poolset_uuid;
	h.self = a.uuid;
	h.prev_repl = a.prev_uuid;
	h.next_repl = a.next_uuid;
	h.arch = a.user_flags;
	return h;
}

std::array<std::uint8_t, 16> host_arch_flags()
{
	auto flags = pmdk::host_arch_flags();
	std::array<std::uint8_t, 16> a;
	std::memcpy(a.data(), &flags, sizeof(flags));
	return a;
}

} // namespace rpmem::replication
