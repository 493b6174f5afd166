// SPDX-License-Identifier: BSD-3-Clause
#include "pmdk/behind_record.hpp"

#include "posix/file.hpp"
#include "rpmem/error.hpp"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <unistd.h>

namespace rpmem::pmdk
{

namespace
{

constexpr const char *header =
    "# rpmem: remote replicas of this pool that may lack acknowledged writes while their own\n"
    "# headers do not say so (unreachable when a writer opened the pool under\n"
    "# failure_policy::degrade). Opens take them as marked \"possibly behind\"; `rpmem sync` of\n"
    "# the pool set brings them in line and removes this file. One per line: REPLICA target "
    "set\n";

} // namespace

namespace
{

/** Beside the master's first part; beside the pool set file when that part is a device
 *  (Device DAX: nothing may be created in /dev). */
std::string record_path(const poolset::poolset &ps)
{
	const auto &part = ps.replicas.at(0).parts.at(0).path;
	if (part.rfind("/dev/", 0) == 0 && part.rfind("/dev/shm/", 0) != 0)
		return ps.file + ".rpmem-behind";
	return part + ".rpmem-behind";
}

} // namespace

behind_record::behind_record(const poolset::poolset &ps)
    : path_(record_path(ps)), poolset_file_(ps.file)
{
}

std::set<std::string> behind_record::read() const
{
	std::set<std::string> out;
	if (::access(path_.c_str(), F_OK) != 0 && errno == ENOENT)
		return out;
	auto unreadable = [&](const std::string &why, const std::string &remedy) {
		return rpmem::error(EIO,
		                    fmt::format("{}: the record of remote replicas behind of {} "
		                                "exists but cannot be read ({}): {}",
		                                path_, poolset_file_, why, remedy));
	};
	std::ifstream in(path_);
	if (!in)
		throw unreadable(
		    std::strerror(errno),
		    fmt::format("fix its permissions, or run `rpmem sync {}`", poolset_file_));
	errno = 0;
	for (std::string line; std::getline(in, line);) {
		if (line.rfind("REPLICA ", 0) == 0)
			out.insert(line.substr(8));
	}
	if (in.bad()) // opened, but a read failed (a directory: EISDIR; a bad disk: EIO)
		throw unreadable(errno ? std::strerror(errno) : "a read failed",
		                 fmt::format("remove it and run `rpmem sync {}`, which brings "
		                             "every replica in line",
		                             poolset_file_));
	return out;
}

void behind_record::write(const std::set<std::string> &keys) const
{
	if (keys.empty()) {
		if (::unlink(path_.c_str()) != 0) {
			if (errno == ENOENT)
				return;
			throw rpmem::error(errno,
			                   fmt::format("{}: cannot remove the record of "
			                               "replicas behind of {}: {}",
			                               path_, poolset_file_, std::strerror(errno)));
		}
		const auto slash = path_.rfind('/');
		const int err = posix::sync_directory(
		    slash == std::string::npos ? "." : path_.substr(0, slash));
		if (err != 0)
			throw rpmem::error(err,
			                   fmt::format("{}: removed, but its directory cannot be "
			                               "synced: {}",
			                               path_, std::strerror(err)));
		return;
	}
	std::string text = header;
	for (const auto &k : keys)
		text += "REPLICA " + k + "\n";
	std::string why;
	if (const int err = posix::replace_file_durably(path_, text, 0644, &why); err != 0)
		throw rpmem::error(err, fmt::format("the record of replicas behind of {}: {} (the "
		                                    "directory of the master's first part must be "
		                                    "writable)",
		                                    poolset_file_, why));
}

void behind_record::remove(const std::set<std::string> &keys) const
{
	auto listed = read();
	for (const auto &k : keys)
		listed.erase(k);
	write(listed);
}

} // namespace rpmem::pmdk
