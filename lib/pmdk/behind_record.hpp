// SPDX-License-Identifier: BSD-3-Clause
// The master's record of remote replicas that may lack acknowledged writes while nothing on their
// own hosts says so: a replica unreachable when a writer opened the pool under
// failure_policy::degrade cannot have its header marked "possibly behind" until the healer
// reaches it, so the master keeps the fact, beside its first part, durably before open returns.
// The next open takes a replica listed here as marked (refused under failure_policy::fail,
// caught up by comparison under degrade); a catch-up that completes, `rpmem sync`,
// `rpmem check --repair` and a new create remove the entry, and `rpmem check` reports it.
#pragma once

#include "poolset/poolset.hpp"

#include <set>
#include <string>

namespace rpmem::pmdk
{

class behind_record
{
public:
	/** The record of the pool set whose master is `ps` (beside its first part). */
	explicit behind_record(const poolset::poolset &ps);

	/** Where it lives: "<master part 0>.rpmem-behind" ("<pool set file>.rpmem-behind" when
	 *  that part is a device under /dev). */
	const std::string &path() const { return path_; }
	/** The key of a remote replica in it: "target descriptor", as the REPLICA line says. */
	static std::string key(const poolset::replica &r) { return r.target + " " + r.descriptor; }
	/** The replicas listed (none when there is no record). Throws rpmem::error when it exists
	 *  and cannot be read. */
	std::set<std::string> read() const;
	/** Makes the record list exactly `keys`, durably (none: the file is removed). Throws
	 *  rpmem::error naming the file and the system's reason. */
	void write(const std::set<std::string> &keys) const;
	/** Takes the replicas `keys` off the record (the others stay), durably. Throws as read
	 *  and write do. */
	void remove(const std::set<std::string> &keys) const;

private:
	std::string path_;
	std::string poolset_file_;
};

} // namespace rpmem::pmdk
