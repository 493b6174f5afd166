// SPDX-License-Identifier: BSD-3-Clause
#include "pmdk/device_dax.hpp"

#include <rpmem/error.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <string_view>
#include <sys/sysmacros.h>

namespace rpmem::pmdk
{
namespace
{

/** A sysfs attribute holding one unsigned number (decimal, or 0x-prefixed hex). */
std::optional<std::uint64_t> read_number(const std::string &file)
{
	std::ifstream in(file);
	std::string text;
	if (!(in >> text))
		return std::nullopt;
	errno = 0;
	char *end = nullptr;
	unsigned long long v = std::strtoull(text.c_str(), &end, 0);
	if (errno || *end != '\0' || text.front() == '-')
		return std::nullopt;
	return v;
}

} // namespace

std::optional<dax_device> sysfs::device_dax(const struct stat &st, const std::string &path) const
{
	if (!S_ISCHR(st.st_mode))
		return std::nullopt;
	auto dev = fmt::format("{}/dev/char/{}:{}", root_, major(st.st_rdev), minor(st.st_rdev));
	char subsystem[PATH_MAX];
	std::string_view name;
	if (realpath((dev + "/subsystem").c_str(), subsystem)) {
		name = subsystem;
		name = name.substr(name.rfind('/') + 1);
	}
	if (name != "dax")
		throw rpmem::error(EINVAL, fmt::format("{} is a character device but not a Device "
		                                       "DAX ({}/subsystem is not dax): a part must "
		                                       "be a file or a Device DAX",
		                                       path, dev));
	auto size = read_number(dev + "/size");
	auto align = read_number(dev + "/device/align");
	if (!align)
		align = read_number(dev + "/align");
	if (!size || *size == 0 || !align || *align == 0 || (*align & (*align - 1)) != 0)
		throw rpmem::error(EINVAL, fmt::format("cannot read the size and alignment of "
		                                       "Device DAX {} from {}/size and "
		                                       "{}/device/align: check the namespace "
		                                       "with ndctl list",
		                                       path, dev, dev));
	return dax_device{.size = *size, .alignment = *align};
}

} // namespace rpmem::pmdk
