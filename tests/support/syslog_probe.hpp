// SPDX-License-Identifier: BSD-3-Clause
// Whether something accepts syslog(3)'s datagrams on /dev/log (none does on these machines):
// the tests of rpmemd's syslog fallback check the branch this machine takes. Deliberately not
// rpmemd's own probe (daemon/log.cpp), so the test does not assume what it checks.
#pragma once

#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace rpmem::test
{

inline bool syslog_listens()
{
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	std::strcpy(addr.sun_path, "/dev/log");
	int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok =
	    fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr) == 0;
	if (fd >= 0)
		::close(fd);
	return ok;
}

} // namespace rpmem::test
