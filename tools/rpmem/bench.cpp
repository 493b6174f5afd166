// SPDX-License-Identifier: BSD-3-Clause
// rpmem bench ARGS...: runs rpmem-bench, installed beside rpmem (bin/), with the same arguments.
#include "tool.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace rpmem::tool
{

int cmd_bench(const std::vector<std::string> &args)
{
	std::error_code ec;
	auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
	if (ec)
		throw failure(fmt::format("cannot find where rpmem is installed (/proc/self/exe: "
		                          "{}): run rpmem-bench directly",
		                          ec.message()));
	std::string bench = (self.parent_path() / "rpmem-bench").string();
	std::vector<char *> argv;
	std::string name = "rpmem-bench";
	argv.push_back(name.data());
	std::vector<std::string> copy = args;
	for (auto &a : copy)
		argv.push_back(a.data());
	argv.push_back(nullptr);
	execv(bench.c_str(), argv.data());
	int e = errno;
	throw failure(fmt::format("cannot run {}: {}{}", bench, std::strerror(e),
	                          e == ENOENT ? " — install the rpmem-tools package (it ships "
	                                        "rpmem-bench) or build the rpmem-bench target"
	                                      : ""));
}

} // namespace rpmem::tool
