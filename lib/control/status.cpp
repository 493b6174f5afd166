// SPDX-License-Identifier: BSD-3-Clause
// PMDK's status table (librpmem 1.12 rpmem_util.c:20-81): the errno and text the client reports
// for each remote status. Applications written for PMDK test these errno values.
#include "control/messages.hpp"

#include <algorithm>
#include <cerrno>

namespace rpmem::control
{

namespace
{

struct status_info {
	int errnum;
	const char *text;
};

// Indexed by status value; the order is PMDK's enum order.
constexpr status_info status_table[status_count] = {
    {0, "Success"},
    {EPROTONOSUPPORT, "Protocol version number mismatch"},
    {EINVAL, "Invalid pool descriptor"},
    {EFBIG, "Invalid pool size"},
    {EINVAL, "Invalid number of lanes"},
    {EINVAL, "Invalid provider"},
    {EREMOTEIO, "Fatal error"},
    {ECONNABORTED, "Fatal in-band connection error"},
    {EBUSY, "Pool already in use"},
    {EEXIST, "Pool already exists"},
    {EMEDIUMTYPE, "Provider not supported"},
    {ENOENT, "Pool set or its part doesn't exist or it is unavailable"},
    {EACCES, "Pool set permission denied"},
    {EINVAL, "Invalid pool set configuration"},
    {ENOTSUP, "Operation not supported by rpmemd"},
    {EINVAL, "Pool set damaged"},
};

} // namespace

// A value outside the table can only come from a cast of unchecked input (the codec refuses
// it): report it as the protocol violation it is rather than indexing out of bounds.
int status_errno(status s) noexcept
{
	auto v = static_cast<std::uint32_t>(s);
	return v < status_count ? status_table[v].errnum : EPROTO;
}

const char *status_text(status s) noexcept
{
	auto v = static_cast<std::uint32_t>(s);
	return v < status_count ? status_table[v].text : "Unknown status";
}

bool known_method(std::uint32_t v) noexcept
{
	return v >= static_cast<std::uint32_t>(persist_method::gpspm) &&
	       v <= static_cast<std::uint32_t>(persist_method::commit);
}

const char *to_string(persist_method m) noexcept
{
	switch (m) {
	case persist_method::gpspm:
		return "gpspm";
	case persist_method::apm:
		return "apm";
	case persist_method::commit:
		return "commit";
	}
	return "unknown";
}

const char *describe(persist_method m) noexcept
{
	switch (m) {
	case persist_method::gpspm:
		return "GPSPM (rpmemd persists each range and answers)";
	case persist_method::apm:
		return "APM (an RDMA read proves the writes reached the persistence domain)";
	case persist_method::commit:
		return "commit (a write is durable when it completes, FI_COMMIT_COMPLETE)";
	}
	return "an unknown persistence method";
}

} // namespace rpmem::control
