// SPDX-License-Identifier: BSD-3-Clause
#include "master.hpp"

#include "tool.hpp"

#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <cerrno>

namespace rpmem::tool
{

master::master(const poolset::poolset &ps)
{
	if (ps.replicas.empty() || ps.replicas[0].is_remote())
		throw failure(
		    fmt::format("{}: the master replica (the first one) must be local", ps.file));
	pmdk::part_rules rules;
	rules.owner = "the master";
	rules.in_use_remedy = "an application or another rpmem command has it open: close it "
	                      "first";
	try {
		parts_ = std::make_unique<pmdk::part_set>(
		    pmdk::part_set::open(ps.replicas[0].parts, ps.header_count(0), rules));
		map_ = parts_->map();
	} catch (const rpmem::error &e) {
		throw failure(fmt::format(
		    "{}: {}{}", ps.file, e.message(),
		    e.errnum() == ENOENT ? " — the master is lost: rebuild it from a replica "
		                           "(pmempool sync) or make a replica the master (rpmem "
		                           "promote on the replica host)"
		                         : ""));
	}
	size_ = map_->size();
	if (parts_->headers() > 0) {
		const auto h = parts_->read_header(0);
		if (auto wrong = pmdk::check_header_alone(h))
			throw failure(fmt::format("{}: master part 0 ({}): {}: check it with "
			                          "`pmempool check` or rebuild it from a replica",
			                          ps.file, (*parts_)[0].path, *wrong));
		header_ = h;
	}
}

bool master::rebuilding() const
{
	return header_ && pmdk::marked_rebuilding(*header_);
}

void master::mark_rebuilding(bool on)
{
	if (!header_)
		return;
	auto w = parts_->header(0, *map_);
	pmdk::set_rebuilding_mark(w.hdr(), on);
	pmdk::seal(w.hdr());
	w.persist();
	header_ = w.hdr();
}

pool_attr replica_attr(const pmdk::pool_hdr &h)
{
	pool_attr a = pmdk::header_attr(h);
	return a;
}

} // namespace rpmem::tool
