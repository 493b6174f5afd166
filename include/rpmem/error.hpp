// SPDX-License-Identifier: BSD-3-Clause
// rpmem::error — the one exception type of the C++ API: an errno value and a message that says
// what failed, where (host, file, line) and what to do.
#pragma once

#include "rpmem/export.hpp"

#include <string>
#include <system_error>

namespace rpmem
{

class RPMEM_API error : public std::system_error
{
public:
	error(int errnum, const std::string &message)
	    : std::system_error(errnum, std::generic_category(), message), message_(message)
	{
	}

	/** errno value describing the failure (EINVAL, ECONNRESET, ...). */
	int errnum() const noexcept { return code().value(); }

	/** The message without the ": <strerror>" suffix std::system_error appends. */
	const std::string &message() const noexcept { return message_; }

private:
	std::string message_;
};

/** The message, followed by ": <strerror>" unless the message already quotes that text (storage
 * errors quote it mid-sentence, before what to do): what a program prints for the user. */
inline std::string describe(const error &e)
{
	std::string reason = std::generic_category().message(e.errnum());
	if (e.message().find(reason) != std::string::npos)
		return e.message();
	return e.message() + ": " + reason;
}

} // namespace rpmem
