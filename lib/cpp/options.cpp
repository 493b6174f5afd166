// SPDX-License-Identifier: BSD-3-Clause
#include "cpp/options.hpp"

#include "client/env.hpp"

namespace rpmem::cpp
{

client::pool_options to_client(const connect_options &o)
{
	client::pool_options out;
	out.command = o.command;
	if (!o.ssh_config.empty() || !o.known_hosts.empty() || !o.identity_files.empty() ||
	    !o.ssh_program.empty()) {
		auto s = ssh::options::from_environment();
		if (!o.ssh_config.empty())
			s.config_file = o.ssh_config;
		if (!o.known_hosts.empty())
			s.known_hosts_file = o.known_hosts;
		if (!o.identity_files.empty())
			s.identity_files = o.identity_files;
		if (!o.ssh_program.empty())
			s.external_program = o.ssh_program;
		out.ssh = s;
	}
	if (!o.provider.empty() || o.timeout.count() > 0) {
		client::settings s = client::process_settings();
		if (!o.provider.empty())
			s.providers = o.provider;
		if (o.timeout.count() > 0)
			s.op_timeout = o.timeout;
		out.tuning = s;
	}
	return out;
}

} // namespace rpmem::cpp
