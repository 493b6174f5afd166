// SPDX-License-Identifier: BSD-3-Clause
#include "replication/options.hpp"

#include "client/env.hpp"

namespace rpmem::replication
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

control::pool_attr to_control(const pool_attr &a)
{
	control::pool_attr c;
	c.signature = a.signature;
	c.major = a.major;
	c.compat_features = a.compat_features;
	c.incompat_features = a.incompat_features;
	c.ro_compat_features = a.ro_compat_features;
	c.poolset_uuid = a.poolset_uuid;
	c.uuid = a.uuid;
	c.next_uuid = a.next_uuid;
	c.prev_uuid = a.prev_uuid;
	c.user_flags = a.user_flags;
	return c;
}

pool_attr from_control(const control::pool_attr &c)
{
	pool_attr a;
	a.signature = c.signature;
	a.major = c.major;
	a.compat_features = c.compat_features;
	a.incompat_features = c.incompat_features;
	a.ro_compat_features = c.ro_compat_features;
	a.poolset_uuid = c.poolset_uuid;
	a.uuid = c.uuid;
	a.next_uuid = c.next_uuid;
	a.prev_uuid = c.prev_uuid;
	a.user_flags = c.user_flags;
	return a;
}

} // namespace rpmem::replication
