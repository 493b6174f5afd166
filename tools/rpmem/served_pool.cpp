// SPDX-License-Identifier: BSD-3-Clause
#include "served_pool.hpp"

#include "pmdk/part_file.hpp"
#include "pmdk/pool_header.hpp"
#include "poolset/poolset.hpp"

namespace rpmem::tool
{

std::optional<std::int64_t> lock_holder_pid(const std::string &poolset_file)
{
	try {
		auto ps = poolset::parse_file(poolset_file);
		if (ps.replicas.empty() || ps.replicas[0].parts.empty())
			return std::nullopt;
		if (auto pid = pmdk::lock_holder_pid(ps.replicas[0].parts[0].path))
			return std::int64_t{*pid};
		return std::nullopt;
	} catch (const std::exception &) {
		return std::nullopt;
	}
}

bool marked_behind(const std::string &poolset_file)
{
	try {
		auto ps = poolset::parse_file(poolset_file);
		if (ps.replicas.empty() || ps.replicas[0].parts.empty() || ps.header_count(0) == 0)
			return false;
		const auto h = pmdk::peek_header(ps.replicas[0].parts[0].path);
		return h && !pmdk::check_header_alone(*h) && pmdk::marked_behind(*h);
	} catch (const std::exception &) {
		return false;
	}
}

} // namespace rpmem::tool
