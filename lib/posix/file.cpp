// SPDX-License-Identifier: BSD-3-Clause
#include "posix/file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/random.h>
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

namespace
{

/** `path` + "." + 16 letters from getrandom + ".tmp"; empty if the kernel gave no entropy. */
std::string random_name(const std::string &path)
{
	static constexpr char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	unsigned char bytes[16];
	std::size_t got = 0;
	while (got < sizeof(bytes)) {
		auto n = ::getrandom(bytes + got, sizeof(bytes) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return {};
		got += static_cast<std::size_t>(n);
	}
	std::string name = path + ".";
	for (unsigned char b : bytes)
		name += letters[b % (sizeof(letters) - 1)];
	return name + ".tmp";
}

/** A new file beside `path`, created exclusively under an unpredictable name (*tmp). */
unique_fd create_beside(const std::string &path, mode_t mode, std::string &tmp)
{
	// A name taken (by chance, or planted) is tried again under another: 52^16 names make a
	// second collision as unlikely as guessing the first.
	for (int attempt = 0; attempt < 8; ++attempt) {
		tmp = random_name(path);
		if (tmp.empty())
			return unique_fd();
		unique_fd fd(::open(tmp.c_str(),
		                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
		if (fd.get() >= 0 || errno != EEXIST)
			return fd;
	}
	return unique_fd();
}

int write_all(int fd, std::string_view text)
{
	for (std::size_t done = 0; done < text.size();) {
		auto n = ::write(fd, text.data() + done, text.size() - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		done += static_cast<std::size_t>(n);
	}
	return 0;
}

int failed(int err, std::string *why, const char *what, const std::string &file,
           const std::string &path)
{
	if (why)
		*why = std::string(what) + " " + file + " (to replace " + path +
		       "): " + std::strerror(err);
	return err;
}

} // namespace

namespace
{

/** The directory that holds `path` (".", when it names none). */
std::string dir_of(const std::string &path)
{
	const auto slash = path.rfind('/');
	if (slash == std::string::npos)
		return ".";
	return slash == 0 ? "/" : path.substr(0, slash);
}

int replace(const std::string &path, std::string_view text, mode_t mode, bool durable,
            std::string *why)
{
	std::string tmp;
	int err = 0;
	{
		unique_fd fd = create_beside(path, mode, tmp);
		if (fd.get() < 0) {
			const int e = errno;
			return failed(e, why, "cannot create the new file",
			              tmp.empty() ? path + ".*.tmp" : tmp, path);
		}
		if ((err = write_all(fd.get(), text)) != 0) {
			::unlink(tmp.c_str());
			return failed(err, why, "cannot write", tmp, path);
		}
		if (durable && ::fsync(fd.get()) != 0) {
			err = errno;
			::unlink(tmp.c_str());
			return failed(err, why, "cannot fsync", tmp, path);
		}
	}
	if (std::rename(tmp.c_str(), path.c_str()) != 0) {
		err = errno;
		::unlink(tmp.c_str());
		return failed(err, why, "cannot rename", tmp, path);
	}
	if (durable && (err = sync_directory(dir_of(path))) != 0)
		return failed(err, why, "cannot fsync the directory of", path, path);
	return 0;
}

} // namespace

int sync_directory(const std::string &dir)
{
	unique_fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (fd.get() < 0 || ::fsync(fd.get()) != 0)
		return errno;
	return 0;
}

int replace_file(const std::string &path, std::string_view text, mode_t mode, std::string *why)
{
	return replace(path, text, mode, false, why);
}

int replace_file_durably(const std::string &path, std::string_view text, mode_t mode,
                         std::string *why)
{
	return replace(path, text, mode, true, why);
}

} // namespace rpmem::posix
