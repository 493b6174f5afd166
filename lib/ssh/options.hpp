// SPDX-License-Identifier: BSD-3-Clause
// How to reach a target over SSH: which config, known_hosts and keys to use, how long to wait,
// or which external ssh-compatible program to run instead of libssh (PMDK's RPMEM_SSH).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace rpmem::ssh
{

struct options {
	/** OpenSSH client config. Empty: ~/.ssh/config, then /etc/ssh/ssh_config (as ssh does);
	 *  set: only this file (as ssh -F). Env RPMEM_SSH_CONFIG. Host, HostName, Port, User,
	 *  IdentityFile, UserKnownHostsFile, ProxyCommand ... are honoured as libssh supports them.
	 */
	std::string config_file;
	/** Empty: what the config says, else ~/.ssh/known_hosts (and the global file).
	 *  Env RPMEM_SSH_KNOWN_HOSTS. Host keys are checked strictly: unknown or changed keys fail.
	 */
	std::string known_hosts_file;
	/** Private keys to authenticate with, in order; only these are tried. Empty: ssh-agent,
	 *  then the config's IdentityFile and libssh's default identities (~/.ssh/id_*).
	 *  Env RPMEM_SSH_IDENTITY, ':'-separated. */
	std::vector<std::string> identity_files;
	/** Bounds the TCP connect and every step of the SSH setup (handshake, auth, exec).
	 *  Env RPMEM_SSH_TIMEOUT, milliseconds. */
	std::chrono::milliseconds connect_timeout{10000};
	/** How long write_all() may wait for the remote side to accept data (its flow-control
	 *  window stays closed) before it gives up with ETIMEDOUT. */
	std::chrono::milliseconds write_timeout{30000};
	/** Non-empty: run this program instead of libssh, PMDK-style: argv = [program, -p port
	 *  (if the target has one), -T, -oBatchMode=yes, [user@]host, command]; found through
	 *  PATH, used verbatim (no word splitting). The fields above do not apply to it.
	 *  Env RPMEM_SSH (PMDK's variable). */
	std::string external_program;

	/** Defaults overridden by the RPMEM_SSH* variables; throws rpmem::error(EINVAL) naming the
	 *  variable when RPMEM_SSH_TIMEOUT is not a decimal number of milliseconds of at least
	 *  1000 (a smaller value cannot work, and is most likely seconds). */
	static options from_environment();
};

} // namespace rpmem::ssh
