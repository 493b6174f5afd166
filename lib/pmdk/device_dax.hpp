// SPDX-License-Identifier: BSD-3-Clause
// Device DAX parts (/dev/daxX.Y): persistent memory mapped without a file system, as PMDK's
// rpmemd served them. Detected as PMDK 1.12.1 does (a character device whose sysfs subsystem
// is "dax"); size and alignment read from sysfs. The sysfs root is a parameter so tests can
// use a fake tree: these machines have no Device DAX, so real devices never ran here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/stat.h>

namespace rpmem::pmdk
{

/** What a Device DAX offers: its size, and the alignment every mapping of it must keep. */
struct dax_device {
	std::uint64_t size = 0;
	std::uint64_t alignment = 0;
};

/** PMDK zeroes this much of a Device DAX to remove a pool from it (DEVICE_DAX_ZERO_LEN). */
inline constexpr std::uint64_t dax_zero_length = 2u << 20;

class sysfs
{
public:
	explicit sysfs(std::string root = "/sys") : root_(std::move(root)) {}

	/**
	 * nullopt for anything but a character device; for a Device DAX its size
	 * (<root>/dev/char/MAJ:MIN/size) and alignment (.../device/align, else .../align). Throws
	 * rpmem::error(EINVAL) for another character device or a Device DAX sysfs cannot
	 * describe, naming `path`.
	 */
	std::optional<dax_device> device_dax(const struct stat &st, const std::string &path) const;

private:
	std::string root_;
};

} // namespace rpmem::pmdk
