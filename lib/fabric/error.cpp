// SPDX-License-Identifier: BSD-3-Clause
#include "fabric/error.hpp"
#include "fabric/library.hpp"

#include <fmt/format.h>
#include <rdma/fi_errno.h>

#include <cerrno>
#include <cstdlib>

namespace rpmem::fabric
{

int to_errno(int fi_code) noexcept
{
	const int code = std::abs(fi_code);
	if (code == 0)
		return EIO; // a "failure" without a code still must not read as success
	if (code < FI_ERRNO_OFFSET)
		return code;
	switch (code) {
	case FI_ETOOSMALL:
		return ENOBUFS;
	case FI_EOPBADSTATE:
		return EBADFD;
	case FI_EBADFLAGS:
	case FI_ENOEQ:
	case FI_EDOMAIN:
	case FI_ENOCQ:
	case FI_ENOAV:
		return EINVAL;
	case FI_ECRC:
		return EBADMSG;
	case FI_ETRUNC:
		return EMSGSIZE;
	case FI_ENOKEY:
		return ENOKEY;
	case FI_EOVERRUN:
		return EOVERFLOW;
	case FI_ENORX:
		return ENOBUFS;
	default:
		return EIO;
	}
}

rpmem::error call_error(int fi_code, std::string_view call, std::string_view provider,
                        std::string_view advice)
{
	std::string message =
	    fmt::format("{} failed (provider {}): {}", call, provider.empty() ? "any" : provider,
	                library::strerror(std::abs(fi_code)));
	if (!advice.empty())
		message += fmt::format("; {}", advice);
	else if (to_errno(fi_code) == EMFILE)
		message += "; each fabric connection takes several file descriptors: raise the "
		           "open file limit (ulimit -n)";
	return rpmem::error(to_errno(fi_code), message);
}

void throw_call_error(int ret, std::string_view call, std::string_view provider,
                      std::string_view advice)
{
	throw call_error(ret, call, provider, advice);
}

} // namespace rpmem::fabric
