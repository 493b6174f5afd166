// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/provider.hpp"

#include "fabric/info.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <vector>

namespace rpmem::fabric
{
namespace
{

struct candidate {
	std::string name;
	std::string excluded_by; // the setting that removed it; empty when it is tried
};

/** Why a PMDK flag variable disables a candidate ("" when it does not). */
std::string disabled_by(const env &environment, const std::string &var, bool unparsable_disables,
                        std::vector<std::string> &notes)
{
	const std::optional<std::string> value = environment(var);
	if (!value)
		return {};
	const std::optional<int> flag = parse_int_flag(*value);
	if (flag && *flag == 0)
		return fmt::format("{}=0", var);
	if (!flag && unparsable_disables)
		return fmt::format("{}={} (not an integer)", var, *value);
	if (!flag)
		notes.push_back(fmt::format("ignored {}={} (not an integer)", var, *value));
	return {};
}

std::vector<candidate> candidates(const env &environment, std::vector<std::string> &notes)
{
	if (const std::optional<std::string> forced = environment("RPMEM_PROVIDER")) {
		notes.push_back(fmt::format("forced by RPMEM_PROVIDER={}", *forced));
		return {{*forced, {}}};
	}
	return {{"verbs", disabled_by(environment, "RPMEM_ENABLE_VERBS", true, notes)},
	        {"tcp", {}},
	        {"sockets", disabled_by(environment, "RPMEM_ENABLE_SOCKETS", false, notes)}};
}

std::string join(const std::vector<std::string> &parts, const char *separator)
{
	std::string out;
	for (const std::string &p : parts)
		out += (out.empty() ? "" : separator) + p;
	return out;
}

} // namespace

provider_choice select_provider(const std::string &node, const env &environment)
{
	std::vector<std::string> notes;
	const std::vector<candidate> list = candidates(environment, notes);
	std::vector<std::string> tried;
	for (const candidate &c : list) {
		tried.push_back(c.name);
		if (!c.excluded_by.empty()) {
			notes.push_back(fmt::format("{}: disabled by {}", c.name, c.excluded_by));
			continue;
		}
		try {
			info probe = info::query(node, {}, 0, request{.provider = c.name});
			return {c.name, probe.granted(), join(notes, "; ")};
		} catch (const rpmem::error &e) {
			notes.push_back(fmt::format("{}: {}", c.name, e.message()));
		}
	}
	throw rpmem::error(ENOMEDIUM,
	                   fmt::format("no libfabric provider can reach {}: tried {}; {}; set "
	                               "RPMEM_PROVIDER to a provider `fi_info -t FI_EP_MSG` lists "
	                               "that routes to {}",
	                               node, join(tried, ", "), join(notes, "; "), node));
}

} // namespace rpmem::fabric
