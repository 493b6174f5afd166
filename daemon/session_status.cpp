// SPDX-License-Identifier: BSD-3-Clause
#include "session_status.hpp"

#include "log.hpp"

#include <ctime>
#include <pwd.h>
#include <unistd.h>

namespace rpmemd
{

namespace ctl = rpmem::control;

void session_status::publish(const std::string &descriptor, bool create, const pool &p,
                             const ctl::fabric_params &fabric)
{
	if (cfg_.status_dir == "none")
		return;
	ctl::session_record r;
	r.pid = getpid();
	r.process_start = ctl::process_start_time(r.pid).value_or(0);
	r.since = static_cast<std::uint64_t>(std::time(nullptr));
	if (const passwd *pw = getpwuid(getuid()))
		r.user = pw->pw_name;
	r.peer = peer_;
	r.descriptor = descriptor;
	r.poolset = cfg_.poolset_dir + "/" + descriptor;
	r.pool_size = p.size();
	r.created = create;
	r.is_pmem = p.is_pmem();
	r.provider = fabric.provider;
	r.method = ctl::to_string(fabric.method);
	r.lanes = fabric.nlanes;
	r.version = RPMEMD_VERSION;
	const auto dir = cfg_.status_dir.empty() ? ctl::default_session_dir() : cfg_.status_dir;
	// Records of sessions killed before they could remove theirs go first: the list stays
	// true without `rpmem status --prune`.
	if (auto n = ctl::prune_gone(dir))
		log_info("{}: removed {} status record(s) of rpmemd sessions that are gone", peer_,
		         n);
	if (auto why = file_.publish(dir, r))
		log_warn("{}: no status record for `rpmem status`: {} (set status-dir)", peer_,
		         *why);
}

} // namespace rpmemd
