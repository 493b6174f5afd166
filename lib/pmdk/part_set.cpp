// SPDX-License-Identifier: BSD-3-Clause
#include "pmdk/part_set.hpp"

#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace rpmem::pmdk
{

part_set::part_set(std::vector<part_file> parts, std::size_t nhdrs)
    : parts_(std::move(parts)), nhdrs_(nhdrs)
{
}

part_set part_set::open(std::span<const poolset::part> parts, std::size_t nhdrs,
                        const part_rules &rules)
{
	std::vector<part_file> files;
	for (const auto &p : parts)
		files.push_back(open_part(p.path, p.size, p.line, rules));
	part_set s(std::move(files), nhdrs);
	s.check_dax(rules);
	return s;
}

part_set part_set::create(std::span<const poolset::part> parts, std::size_t nhdrs,
                          const part_rules &rules)
{
	part_set s({}, nhdrs);
	try {
		for (const auto &p : parts)
			s.parts_.push_back(create_part(p.path, p.size, p.line, rules));
		s.check_dax(rules);
	} catch (...) {
		s.discard();
		throw;
	}
	return s;
}

void part_set::check_dax(const part_rules &rules) const
{
	if (parts_.empty())
		return;
	const auto &first = parts_[0];
	const std::string owner = rules.owner.empty() ? "the pool" : rules.owner;
	for (const auto &f : parts_)
		if ((f.dax_alignment != 0) != (first.dax_alignment != 0))
			throw rpmem::error(
			    EINVAL,
			    fmt::format("{}: either all the parts must be Device DAX or none "
			                "({} is{} one, {} is{})",
			                owner, first.path, first.dax_alignment ? "" : " not",
			                f.path, f.dax_alignment ? "" : " not"));
	for (const auto &f : parts_)
		if (f.dax_alignment && parts_.size() > 1 && nhdrs_ == parts_.size() &&
		    f.dax_alignment != page_size())
			throw rpmem::error(
			    EINVAL,
			    fmt::format(
			        "{}: Device DAX {} has a {}-byte alignment; several Device "
			        "DAX parts with a header each need 4 KiB: add 'OPTION "
			        "SINGLEHDR' to the pool set (on both sides), or reconfigure "
			        "the namespaces",
			        owner, f.path, f.dax_alignment));
}

extent part_set::extent_of(std::size_t i) const
{
	const auto &f = parts_.at(i);
	auto e = part_extent(i, f.size, parts_.size(), nhdrs_);
	if (f.dax_alignment)
		e.length &= ~(f.dax_alignment - 1);
	return e;
}

std::uint64_t part_set::pool_size() const
{
	std::uint64_t sum = 0;
	for (std::size_t i = 0; i < parts_.size(); ++i)
		sum += extent_of(i).length;
	return sum;
}

std::unique_ptr<pool_map> part_set::map(std::uint64_t limit) const
{
	std::vector<map_source> sources;
	std::uint64_t at = 0;
	for (std::size_t i = 0; i < parts_.size() && at < limit; ++i) {
		const auto [off, len] = extent_of(i);
		const auto n = std::min(len, limit - at);
		sources.push_back({.fd = parts_[i].fd.get(),
		                   .offset = off,
		                   .length = n,
		                   .path = parts_[i].path,
		                   .dax_alignment = parts_[i].dax_alignment});
		at += n;
	}
	return std::make_unique<pool_map>(sources);
}

header_window part_set::header(std::size_t i, const pool_map &m) const
{
	const auto &f = parts_.at(i);
	return header_window(f.fd.get(), m.map_sync(), m.is_pmem(), f.path,
	                     std::max<std::uint64_t>(pool_hdr_size, f.dax_alignment));
}

pool_hdr part_set::read_header(std::size_t i) const
{
	return pmdk::read_header(parts_.at(i));
}

void part_set::discard() noexcept
{
	for (const auto &f : parts_) {
		if (f.created)
			::unlink(f.path.c_str());
		else
			zero_head(f, pool_hdr_size);
	}
}

} // namespace rpmem::pmdk
