// SPDX-License-Identifier: BSD-3-Clause
// A session's status record: what `rpmem status` on this host lists while the session has a
// pool open (lib/control/session_record.hpp holds the format and the file).
#pragma once

#include "config.hpp"
#include "pool_store.hpp"

#include "control/messages.hpp"
#include "control/session_record.hpp"

#include <string>

namespace rpmemd
{

/** The status record of one session: published when its pool opens, withdrawn when it closes
 *  (or the object goes). Informational: a record that cannot be written is logged, the session
 *  goes on. */
class session_status
{
public:
	/** `peer` names the client in the record and in logs. */
	session_status(const config &cfg, const std::string &peer) : cfg_(cfg), peer_(peer) {}

	/** Records the pool `p` just created (`create`) or opened as `descriptor`, served as
	 *  `fabric` says; nothing when cfg.status_dir is "none". */
	void publish(const std::string &descriptor, bool create, const pool &p,
	             const rpmem::control::fabric_params &fabric);
	/** Removes the record, if any. */
	void withdraw() noexcept { file_.withdraw(); }

private:
	const config &cfg_;
	const std::string &peer_;
	rpmem::control::session_file file_;
};

} // namespace rpmemd
