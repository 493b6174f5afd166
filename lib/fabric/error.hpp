// SPDX-License-Identifier: BSD-3-Clause
// Turning libfabric return codes into rpmem::error: a positive errno and a message naming the
// call, the provider and fi_strerror, so a failure deep in the data path still says what broke.
#pragma once

#include <rpmem/error.hpp>

#include <string_view>

namespace rpmem::fabric
{

/**
 * Positive errno for a libfabric code (either sign). Codes below FI_ERRNO_OFFSET already are
 * errno values; libfabric's own codes (FI_ETRUNC, FI_EAVAIL, ...) map to the nearest errno.
 */
int to_errno(int fi_code) noexcept;

/** "<call> failed (provider <provider>): <fi_strerror>[; <advice>]" with errno to_errno(code). */
rpmem::error call_error(int fi_code, std::string_view call, std::string_view provider,
                        std::string_view advice = {});

/** Throws call_error(ret, ...). Kept out of line so the checks stay small on hot paths. */
[[noreturn]] void throw_call_error(int ret, std::string_view call, std::string_view provider,
                                   std::string_view advice = {});

/** Returns ret when the call succeeded (ret >= 0), throws call_error otherwise. */
inline long check(long ret, std::string_view call, std::string_view provider)
{
	if (ret < 0)
		throw_call_error(static_cast<int>(ret), call, provider);
	return ret;
}

} // namespace rpmem::fabric
