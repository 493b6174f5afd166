// SPDX-License-Identifier: BSD-3-Clause
#include "client/log.hpp"

#include "client/env.hpp"

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <mutex>
#include <string>
#include <unistd.h>

namespace rpmem::client
{

namespace
{

struct log_sink {
	int level = 0;
	int fd = 2;

	log_sink()
	{
		level =
		    static_cast<int>(std::max(0LL, parse_env_int(std::getenv("RPMEM_LOG_LEVEL"))));
		const char *file = std::getenv("RPMEM_LOG_FILE");
		if (level == 0 || !file || !*file)
			return;
		std::string path = file;
		if (path.back() == '-')
			path += std::to_string(getpid());
		int f = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (f >= 0)
			fd = f;
	}
};

log_sink &sink()
{
	static log_sink s;
	return s;
}

} // namespace

int log_level() noexcept
{
	return sink().level;
}

void log_write(int level, std::string_view message) noexcept
{
	static const char *names[] = {"", "error", "warning", "notice", "debug"};
	std::string line = "<librpmem>: <" + std::to_string(level) + "> [" +
	                   names[std::min(level, 4)] + "] " + std::string(message) + "\n";
	ssize_t r = ::write(sink().fd, line.data(), line.size());
	(void)r;
}

} // namespace rpmem::client
