// SPDX-License-Identifier: BSD-3-Clause
// For tests of the C ABI in their own process: one sshd and replica directory, announced through
// the environment librpmem reads (once per process), and the attributes of a PMEMOBJ pool.
#pragma once

#include "replica_fixture.hpp"

#include "librpmem.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace rpmem::test
{

struct capi_environment {
	sshd server;
	replica node{server};

	/** extra: more variables for this process, e.g. {"RPMEM_REPLICATION", "async"}. */
	explicit capi_environment(
	    const std::vector<std::pair<std::string, std::string>> &extra = {})
	{
		auto o = server.client_options();
		setenv("RPMEM_CMD", node.command().c_str(), 1);
		setenv("RPMEM_SSH_CONFIG", o.config_file.c_str(), 1);
		setenv("RPMEM_SSH_KNOWN_HOSTS", o.known_hosts_file.c_str(), 1);
		setenv("RPMEM_SSH_IDENTITY", o.identity_files.at(0).c_str(), 1);
		setenv("RPMEM_PROVIDER", "tcp", 1);
		setenv("RPMEM_TIMEOUT", "2000", 1);
		for (const auto &[name, value] : extra)
			setenv(name.c_str(), value.c_str(), 1);
	}
	std::string target() const { return server.target().str(); }
};

inline rpmem_pool_attr c_attr()
{
	rpmem_pool_attr a{};
	std::memcpy(a.signature, "PMEMOBJ", 7);
	a.major = 6;
	a.uuid[0] = 1;
	a.poolset_uuid[0] = 2;
	return a;
}

} // namespace rpmem::test
