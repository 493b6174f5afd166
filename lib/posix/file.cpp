// SPDX-License-Identifier: BSD-3-Clause
#include "posix/file.hpp"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

namespace rpmem::posix
{

unique_fd &unique_fd::operator=(unique_fd &&o) noexcept
{
	if (this != &o) {
		if (fd_ >= 0)
			::close(fd_);
		fd_ = o.release();
	}
	return *this;
}

unique_fd::~unique_fd()
{
	if (fd_ >= 0)
		::close(fd_);
}

int unique_fd::release() noexcept
{
	int fd = fd_;
	fd_ = -1;
	return fd;
}

int replace_file(const std::string &path, const std::string &tmp, std::string_view text,
                 mode_t mode, int open_flags)
{
	int err = 0;
	{
		unique_fd fd(::open(tmp.c_str(),
		                    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | open_flags, mode));
		if (fd.get() < 0)
			return errno;
		for (std::size_t done = 0; done < text.size();) {
			auto n = ::write(fd.get(), text.data() + done, text.size() - done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				err = n < 0 ? errno : EIO;
				break;
			}
			done += static_cast<std::size_t>(n);
		}
	}
	if (!err && std::rename(tmp.c_str(), path.c_str()) != 0)
		err = errno;
	if (err)
		::unlink(tmp.c_str());
	return err;
}

} // namespace rpmem::posix
