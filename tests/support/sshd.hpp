// SPDX-License-Identifier: BSD-3-Clause
// A private sshd for integration tests: its own host key, client key, authorized_keys,
// known_hosts and client config in a fresh temp dir, listening on a free port of a loopback
// address. Needs root (sshd runs as root here) and /usr/sbin/sshd; never touches ~/.ssh.
// Sessions run with HOME set to an empty directory of the fixture's (sshd.cpp says why).
//
//   rpmem::test::sshd server;                       // started and accepting
//   auto s = rpmem::ssh::session::start(server.target(), "cat", server.client_options());
#pragma once

#include "ssh/options.hpp"
#include "ssh/target.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <sys/types.h>

namespace rpmem::test
{

/** A port nobody listens on right now on `address` (the kernel's pick for an ephemeral bind):
 *  for a server a test starts on loopback. Throws std::runtime_error. */
std::uint16_t free_port(const std::string &address);

class sshd
{
public:
	/** Starts sshd on address (e.g. "127.0.0.2" or "::1"); returns once it accepts
	 *  connections. Throws std::runtime_error with sshd's log when it cannot start.
	 *  sshd gets SIGTERM when the creating thread ends (so a killed test leaves no daemon):
	 *  create the fixture on a thread that outlives it, e.g. the main thread. */
	explicit sshd(std::string address = "127.0.0.1");
	/** The same, with `extra_config` appended to sshd_config (lines, each ending in \n). */
	sshd(std::string address, std::string extra_config);
	/** Stops sshd by its PID and removes the directory. */
	~sshd();
	sshd(const sshd &) = delete;
	sshd &operator=(const sshd &) = delete;

	std::uint16_t port() const { return port_; }
	const std::string &address() const { return address_; }
	const std::filesystem::path &dir() const { return dir_; }
	/** Private key whose public half is in authorized_keys. */
	std::string client_key() const { return path("client_key"); }
	/** known_hosts with this server's host key for "[address]:port". */
	std::string known_hosts() const { return path("known_hosts"); }
	/** Client config: "Host <alias>" (HostName, Port, User root, IdentityFile) and a
	 *  "Host *" section pinning UserKnownHostsFile, IdentityFile, BatchMode. */
	std::string config_file() const { return path("ssh_config"); }
	std::string alias() const { return "rpmem-test-sshd"; }
	/** An executable "ssh -F <config_file> ARGS..." script: a RPMEM_SSH program for tests. */
	std::string ssh_wrapper() const { return path("ssh"); }
	/** root@address:port */
	ssh::destination target() const;
	/** config_file, known_hosts and client_key set explicitly; a 10 s connect timeout. */
	ssh::options client_options() const;
	/** What sshd logged so far (-E file): auth failures and the like. */
	std::string log_text() const;

	/** Stops the listening sshd by its PID, as `systemctl stop ssh` does: the sessions it
	 *  started go on, new connections are refused. */
	void stop_listening() { stop(); }
	/** Starts sshd again on the same address, port and keys; returns once it accepts
	 *  connections. Call it on a thread in the network namespace the fixture was created in
	 *  (and one that outlives it, as for the constructor). Throws std::runtime_error with
	 *  sshd's log when it does not start (the port taken meanwhile, say). */
	void start_again();
	bool listening() const { return pid_ > 0; }

	/** A new key pair in dir (not authorized); returns the private key's path. */
	std::string make_key(const std::string &name, const std::string &type = "ed25519") const;
	/** A known_hosts file holding a freshly generated, WRONG host key of the given type for
	 *  this server: "changed host key" with the same type, "other" with another. */
	std::string make_wrong_known_hosts(const std::string &name,
	                                   const std::string &type = "ed25519") const;
	/** An empty known_hosts file: the host key is unknown. */
	std::string make_empty_known_hosts(const std::string &name) const;

private:
	std::string path(const std::string &name) const { return (dir_ / name).string(); }
	void write_files();
	bool try_start(); // false: the port was taken meanwhile
	void stop();

	std::string address_;
	std::string extra_config_;
	std::filesystem::path dir_;
	std::uint16_t port_ = 0;
	pid_t pid_ = -1;
};

} // namespace rpmem::test
