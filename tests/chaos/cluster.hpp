// SPDX-License-Identifier: BSD-3-Clause
// The chaos run's machines: replica hosts around one client namespace, a star of veth pairs.
// Each host is a network namespace with its own sshd (tests/support/sshd.hpp), its own tmpfs
// (pool files, rpmemd's log and session records: the file system a fault fills up) and the
// real rpmemd, started per session over that sshd through "$HOME/rpmemd", a script in the
// host's sshd home that points rpmemd at the host's tmpfs (one RPMEM_CMD reaches every host).
// The writers and the operator's tools run in the client namespace; nothing is addressed from
// the root namespace, and each host's subnet has a blackhole route there while it exists
// (docs/chaos.md; the DANGER note of the environment).
//
// The faults a host takes: its link down, its link throttled (tc tbf on both ends), its sshd
// stopped, its file system full, its rpmemds killed or stopped (rpmemds()).
#pragma once

#include "support/sshd.hpp"

#include <atomic>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace rpmem::chaos
{

namespace fs = std::filesystem;

struct host {
	int index = 0;
	std::string ns;
	std::string veth_client, veth_host;
	std::string subnet, client_addr, addr;
	fs::path fs; // the tmpfs: pool sets, parts, rpmemd.log, sessions/
	bool mounted = false;
	std::unique_ptr<test::sshd> sshd;
	// The faults it is under now (read by the driver's tasks too).
	std::atomic<bool> link_down{false}, slow{false}, sshd_stopped{false}, full{false};
	std::atomic<bool> rpmemd_stopped{false};
	std::vector<pid_t> stopped; // rpmemds SIGSTOPped by a fault, to SIGCONT

	/** root@addr:port, as a REPLICA line names it. */
	std::string target() const;
	bool under_fault() const
	{
		return link_down || slow || sshd_stopped || full || rpmemd_stopped;
	}
};

class cluster
{
public:
	/** Sets up `hosts` hosts (tmpfs of fs_mb MiB each) and the client namespace; files under
	 *  run_dir. Throws std::runtime_error naming the step that failed (what was made is
	 *  removed again). */
	cluster(const fs::path &run_dir, int hosts, std::size_t fs_mb);
	/** teardown() */
	~cluster();
	cluster(const cluster &) = delete;
	cluster &operator=(const cluster &) = delete;

	int size() const { return static_cast<int>(hosts_.size()); }
	host &at(int i) { return hosts_.at(static_cast<std::size_t>(i)); }
	const host &at(int i) const { return hosts_.at(static_cast<std::size_t>(i)); }
	const std::string &client_ns() const { return client_ns_; }
	/** argv run inside the client namespace. */
	std::vector<std::string> in_client(std::vector<std::string> argv) const;
	/** The environment that reaches every host from the client namespace: RPMEM_CMD,
	 *  RPMEM_SSH_CONFIG, RPMEM_SSH_KNOWN_HOSTS, RPMEM_SSH_IDENTITY, RPMEM_SSH_TIMEOUT. */
	std::vector<std::string> client_env() const;
	/** The rpmemd command line the script in each host's home runs (for the report). */
	std::string rpmemd_command(int h) const;

	// Faults, each undone by its twin. Throw std::runtime_error when a command fails.
	void set_link(int h, bool up);
	void set_slow(int h, std::uint64_t kbit); // 0: the throttle removed
	void stop_sshd(int h);
	void start_sshd(int h);
	/** Fills the host's tmpfs (a file of all its free blocks); returns the bytes taken. */
	std::uint64_t fill(int h);
	void unfill(int h);
	/** Every fault of host h undone. */
	void heal(int h);

	/** The rpmemd processes serving host h now (their command line names its tmpfs), oldest
	 *  first. */
	std::vector<pid_t> rpmemds(int h) const;
	/** Processes in any of the run's namespaces now: "ns: pid comm" lines (empty: none). */
	std::string processes_in_namespaces() const;

	/** Stops every sshd, deletes the namespaces, routes and mounts; "" or what could not be
	 *  removed. Idempotent. */
	std::string teardown() noexcept;

private:
	void add_host(int i, const fs::path &run_dir, std::size_t fs_mb);
	void write_client_files(const fs::path &run_dir);

	std::string client_ns_;
	std::deque<host> hosts_;          // hosts never move: tasks hold references
	std::vector<std::string> routes_; // blackhole routes added in the root namespace
	fs::path ssh_config_, known_hosts_, identity_;
	bool torn_down_ = false;
};

/** Pids of processes whose /proc/PID/exe names rpmemd and whose command line contains
 *  `needle`, oldest first. */
std::vector<pid_t> find_rpmemds(const std::string &needle);

} // namespace rpmem::chaos
