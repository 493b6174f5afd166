// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/pinning.hpp"

#include <fmt/format.h>

#include <sys/resource.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace rpmem::fabric
{

bool provider_pins(std::string_view provider)
{
	return provider.starts_with("verbs") || provider == "efa";
}

std::optional<std::string> pinning_refusal(const pin_limits &l, std::uint64_t bytes,
                                           std::string_view what)
{
	if (!l.provider_pins || l.on_demand || l.unlimited || bytes <= l.memlock)
		return std::nullopt;
	return fmt::format("registering {} ({} bytes) pins it in memory, but this process may pin "
	                   "only {} bytes (RLIMIT_MEMLOCK): raise the limit for the user "
	                   "(memlock in /etc/security/limits.conf, LimitMEMLOCK= for a systemd "
	                   "service, `ulimit -l unlimited` in a shell), or set FI_VERBS_USE_ODP=1 "
	                   "where the card supports on-demand paging (docs/hardware.md)",
	                   what, bytes, l.memlock);
}

namespace
{

/** CAP_IPC_LOCK (bit 14) in the effective set of /proc/self/status's CapEff. */
bool has_ipc_lock()
{
	std::ifstream in("/proc/self/status");
	std::string line;
	while (std::getline(in, line)) {
		if (line.rfind("CapEff:", 0) != 0)
			continue;
		std::uint64_t caps = std::strtoull(line.c_str() + 7, nullptr, 16);
		return (caps >> 14) & 1;
	}
	return false;
}

} // namespace

pin_limits current_pin_limits(std::string_view provider)
{
	pin_limits l;
	l.provider_pins = provider_pins(provider);
	if (!l.provider_pins)
		return l;
	const char *odp = std::getenv("FI_VERBS_USE_ODP");
	l.on_demand = odp && std::strtol(odp, nullptr, 10) != 0;
	l.unlimited = has_ipc_lock();
	rlimit r{};
	if (getrlimit(RLIMIT_MEMLOCK, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
		l.memlock = r.rlim_cur;
	return l;
}

} // namespace rpmem::fabric
