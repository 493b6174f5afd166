// SPDX-License-Identifier: BSD-3-Clause
// The states of a replica that outlives its sessions, shared by librpmem's synchronous pool
// (resilient_pool) and its asynchronous writer (async::remote_writer): the words the log, the
// metrics file and `rpmem top` show.
#pragma once

namespace rpmem::client
{

enum class replica_state {
	in_sync,      // every persist acknowledged is on it (asynchronous: it holds a prefix)
	reconnecting, // its session died; a new one is being made
	lost,         // away longer than RPMEM_RECONNECT_TIMEOUT under continue: fenced, tracked
	catching_up,  // back: the blocks it missed are being pushed while the calls go on
	failed,       // away longer than RPMEM_RECONNECT_TIMEOUT under fail: every call fails
	closed
};

constexpr const char *name(replica_state s) noexcept
{
	switch (s) {
	case replica_state::in_sync:
		return "in_sync";
	case replica_state::reconnecting:
		return "reconnecting";
	case replica_state::lost:
		return "lost";
	case replica_state::catching_up:
		return "catching_up";
	case replica_state::failed:
		return "failed";
	case replica_state::closed:
		return "closed";
	}
	return "?";
}

} // namespace rpmem::client
