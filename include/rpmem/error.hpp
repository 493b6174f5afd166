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
	    : std::system_error(errnum, std::generic_category(), message), message_(message),
	      what_(says_reason(errnum, message)
	                ? message
	                : message + ": " + std::generic_category().message(errnum))
	{
		// what_ is built without calling a member function on the object under
		// construction: UBSan's vptr check of such a call needs a pipe, and fails when the
		// process is out of file descriptors (an EMFILE error is built exactly then).
	}

	/** The message, followed by ": <strerror>" unless it already carries that text (messages
	 * that quote the system's reason mid-sentence do not get it twice). */
	const char *what() const noexcept override { return what_.c_str(); }

	/** errno value describing the failure (EINVAL, ECONNRESET, ...). */
	int errnum() const noexcept { return code().value(); }

	/** The message without the ": <strerror>" suffix std::system_error appends. */
	const std::string &message() const noexcept { return message_; }

private:
	static bool says_reason(int errnum, const std::string &message)
	{
		return message.find(std::generic_category().message(errnum)) != std::string::npos;
	}

	std::string message_;
	std::string what_;
};

} // namespace rpmem
