// SPDX-License-Identifier: BSD-3-Clause
// A replica node for integration tests: the private sshd, a poolset directory (on ext4 or
// /dev/shm) with pool set files, and the client options that start the real rpmemd from the
// build tree over that sshd. Nothing touches ~/.ssh or a system sshd.
#pragma once

#include "client/remote_pool.hpp"
#include "support/sshd.hpp"

#include <rdma/fabric.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace rpmem::test
{

namespace fs = std::filesystem;

inline fs::path make_temp_dir(const fs::path &parent, const std::string &prefix)
{
	std::string templ = (parent / (prefix + "XXXXXX")).string();
	if (!mkdtemp(templ.data()))
		throw std::runtime_error("mkdtemp " + templ + ": " + std::strerror(errno));
	return templ;
}

inline std::string slurp(const fs::path &p)
{
	std::ifstream in(p, std::ios::binary);
	std::stringstream ss;
	ss << in.rdbuf();
	return ss.str();
}

struct replica_options {
	// Where the pool set dir lives: /dev/shm (tmpfs) unless a test asks for /tmp (ext4). Both
	// take the same path in rpmemd (is_pmem = 0 there: pmem_msync), but on ext4 each msync is
	// real writeback, milliseconds that become seconds when the suite's parallel tests share
	// the disk: only the tests of that path (data_path_test) pay for it.
	fs::path parent = "/dev/shm";
	bool apm = false; // rpmemd --persist-apm with PMEM_IS_PMEM_FORCE=1
	// rpmemd under scripts/fake-eadr.sh: libpmem reports a platform that flushes its caches on
	// power loss, where APM over tcp and sockets is durable. No machine here has one: an APM
	// test says so by asking for it (without it, rpmemd refuses APM: GPSPM).
	bool fake_eadr = false;
	bool force_pmem = false; // PMEM_IS_PMEM_FORCE=1 without APM
	bool commit = false;     // rpmemd --persist-commit with PMEM_IS_PMEM_FORCE=1
	std::string provider = "tcp";
	std::string daemon_args{};  // more rpmemd options
	std::string shell_prefix{}; // shell words before rpmemd's command ("ulimit -n 128; ")
	fabric::wait_mode wait = fabric::wait_mode::adaptive; // the client's waits
	// Both sides' memory registration mode (RPMEM_MR_MODE, rpmemd --mr-mode).
	fabric::mr_mode mr = fabric::mr_mode::automatic;
	bool force_local_mr = false;  // the client passes local descriptors as under FI_MR_LOCAL
	std::int64_t inline_max = -1; // RPMEM_INLINE_MAX (-1: what the client measures at connect)
	std::optional<std::uint64_t> pipeline_chunk{}; // RPMEM_PIPELINE_CHUNK (unset: by provider)
	// Under ASan, whether rpmemd's exit runs the leak check. Off only where a provider is
	// proven to leak by itself (each use says which report and why it is not ours).
	bool daemon_leak_check = true;
};

/**
 * The suite runs some tests again with RPMEM_TEST_VARIANT set (tests/CMakeLists.txt): "commit"
 * (pools on /dev/shm, forced pmem, rpmemd --persist-commit: the commit method), "apm" (the
 * same with --persist-apm and a fake eADR platform: RDMA write + read), "basic" (FI_MR_BASIC on
 * both sides) or "sockets-basic" (the same on the sockets provider).
 */
inline replica_options with_variant(replica_options o)
{
	const char *v = std::getenv("RPMEM_TEST_VARIANT");
	std::string variant = v ? v : "";
	if (variant == "commit") {
		o.parent = "/dev/shm";
		o.commit = true;
	} else if (variant == "apm") {
		o.parent = "/dev/shm";
		o.apm = true;
		o.fake_eadr = true;
	} else if (variant == "basic") {
		o.mr = fabric::mr_mode::basic;
	} else if (variant == "sockets-basic") {
		o.provider = "sockets";
		o.mr = fabric::mr_mode::basic;
	} else if (!variant.empty()) {
		throw std::runtime_error("RPMEM_TEST_VARIANT=" + variant +
		                         ": not commit, apm, basic or sockets-basic");
	}
	return o;
}

/** Checks that a pool opened under RPMEM_TEST_VARIANT took the variant's method, provider and
 * MR mode (mr_mode as rpmemd reported it): a variant that silently fell back tests nothing. */
inline void check_variant(const std::string &method, const std::string &provider,
                          std::uint64_t mr_mode)
{
	const char *v = std::getenv("RPMEM_TEST_VARIANT");
	std::string variant = v ? v : "";
	INFO("RPMEM_TEST_VARIANT=" << variant << ": method " << method << ", provider " << provider
	                           << ", mr_mode " << mr_mode);
	if (variant == "commit" || variant == "apm")
		CHECK(method == variant);
	if (variant == "basic" || variant == "sockets-basic")
		CHECK(mr_mode == (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY));
	if (variant == "sockets-basic")
		CHECK(provider == "sockets");
}

inline void check_variant(const client::remote_pool &pool)
{
	check_variant(control::to_string(pool.method()), pool.fabric().provider,
	              pool.fabric().mr_mode);
}

class replica
{
public:
	explicit replica(sshd &server, replica_options o = {})
	    : server_(server), opts_(with_variant(std::move(o))),
	      dir_(make_temp_dir(opts_.parent, "rpmem-replica-"))
	{
	}
	~replica()
	{
		std::error_code ec;
		fs::remove_all(dir_, ec);
	}

	const fs::path &dir() const { return dir_; }
	fs::path log_file() const { return dir_ / "rpmemd.log"; }
	std::string log_text() const { return slurp(log_file()); }

	/** Writes a pool set file `name` with parts of the given sizes under dir()/parts. */
	fs::path write_poolset(const std::string &name, std::vector<std::string> sizes,
	                       const std::string &option = {})
	{
		fs::create_directories(dir_ / "parts");
		std::string text = "PMEMPOOLSET\n";
		if (!option.empty())
			text += "OPTION " + option + "\n";
		for (std::size_t i = 0; i < sizes.size(); ++i)
			text += fmt::format(
			    "{} {}\n", sizes[i],
			    (dir_ / "parts" / fmt::format("{}.part{}", name, i)).string());
		std::ofstream(dir_ / name) << text;
		return dir_ / name;
	}
	fs::path part(const std::string &name, int i = 0) const
	{
		return dir_ / "parts" / fmt::format("{}.part{}", name, i);
	}

	std::string command() const
	{
		std::string env;
		if (opts_.apm || opts_.force_pmem || opts_.commit)
			env = "PMEM_IS_PMEM_FORCE=1 ";
		if (const char *extra = std::getenv("RPMEM_TEST_DAEMON_ENV")) {
			std::istringstream words(extra);
			for (std::string w; words >> w;) {
				if (!opts_.daemon_leak_check && w.starts_with("ASAN_OPTIONS="))
					w += ":detect_leaks=0";
				env += w + " ";
			}
		}
		// Session status records in the replica's own directory: tests stay out of this
		// user's real one (and of each other's).
		std::string args =
		    fmt::format("--poolset-dir={} --log-file={} --log-level=info --status-dir={}",
		                dir_.string(), log_file().string(), (dir_ / "sessions").string());
		if (opts_.apm)
			args += " --persist-apm";
		if (opts_.commit)
			args += " --persist-commit";
		if (opts_.mr != fabric::mr_mode::automatic)
			args += fmt::format(" --mr-mode={}", fabric::to_string(opts_.mr));
		if (!opts_.daemon_args.empty())
			args += " " + opts_.daemon_args;
		// No redirection: rpmemd's stderr is what the client reports (sanitizer reports go
		// to their log_path files), and the remote shell execs rpmemd, so a signal that
		// kills it reaches the client as a signal.
		const std::string wrapper =
		    opts_.fake_eadr ? std::string(RPMEM_SOURCE_DIR "/scripts/fake-eadr.sh ") : "";
		return fmt::format("{}{}{}{} {}", opts_.shell_prefix, env, wrapper,
		                   RPMEM_TEST_RPMEMD, args);
	}

	client::pool_options options() const
	{
		client::pool_options o;
		o.command = command();
		o.ssh = server_.client_options();
		client::settings s =
		    client::read_settings([](const char *) -> const char * { return nullptr; });
		s.providers = opts_.provider;
		s.op_timeout = std::chrono::milliseconds(5000);
		s.wait = opts_.wait;
		s.mr_mode = opts_.mr;
		s.force_local_mr = opts_.force_local_mr;
		s.inline_max = opts_.inline_max;
		s.pipeline_chunk = opts_.pipeline_chunk;
		o.tuning = s;
		return o;
	}

	const replica_options &opts() const { return opts_; }
	std::string target() const { return server_.target().str(); }
	sshd &server() { return server_; }

private:
	sshd &server_;
	replica_options opts_;
	fs::path dir_;
};

/** Page-aligned anonymous memory standing in for the local pool. */
class local_pool
{
public:
	explicit local_pool(std::size_t size) : size_(size)
	{
		void *p =
		    mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			throw std::runtime_error("mmap failed");
		addr_ = static_cast<std::uint8_t *>(p);
	}
	~local_pool() { munmap(addr_, size_); }
	local_pool(const local_pool &) = delete;
	local_pool &operator=(const local_pool &) = delete;
	std::uint8_t *data() const { return addr_; }
	std::size_t size() const { return size_; }
	void fill_random(std::uint64_t seed, std::size_t from = 0)
	{
		std::mt19937_64 rng(seed);
		for (std::size_t i = from; i + 8 <= size_; i += 8) {
			auto v = rng();
			std::memcpy(addr_ + i, &v, 8);
		}
	}

private:
	std::uint8_t *addr_;
	std::size_t size_;
};

/** Attributes like libpmemobj's (signature "PMEMOBJ", major 6) with recognisable UUIDs. */
inline control::pool_attr sample_attr(std::uint8_t salt = 1)
{
	control::pool_attr a;
	std::memcpy(a.signature.data(), "PMEMOBJ", 7);
	a.major = 6;
	a.compat_features = 0x4;
	a.incompat_features = 0x6;
	for (int i = 0; i < 16; ++i) {
		a.poolset_uuid[i] = static_cast<std::uint8_t>(0x10 + i + salt);
		a.uuid[i] = static_cast<std::uint8_t>(0x20 + i + salt);
		a.next_uuid[i] = static_cast<std::uint8_t>(0x30 + i + salt);
		a.prev_uuid[i] = static_cast<std::uint8_t>(0x40 + i + salt);
	}
	return a;
}

/**
 * The setup most integration tests start from: a private sshd, one replica node whose pool
 * set "pool.set" has the given parts, local memory for the pool and libpmemobj-like
 * attributes. create() makes the remote pool.
 */
struct remote_setup {
	sshd server;
	replica node;
	local_pool local;
	control::pool_attr attr = sample_attr();

	explicit remote_setup(std::size_t local_size, std::vector<std::string> parts = {"8M"},
	                      replica_options o = {})
	    : node(server, std::move(o)), local(local_size)
	{
		node.write_poolset("pool.set", std::move(parts));
	}
	/** Creates pool.set over `local` asking for `nlanes` (updated to the lanes granted). */
	std::unique_ptr<client::remote_pool> create(unsigned &nlanes)
	{
		return create(nlanes, node.options());
	}
	std::unique_ptr<client::remote_pool> create(unsigned &nlanes,
	                                            const client::pool_options &opts)
	{
		return client::remote_pool::create(node.target(), "pool.set", local.data(),
		                                   local.size(), &nlanes, &attr, opts);
	}
	/** Opens pool.set over `local`; its attributes go to *attr_out when given. */
	std::unique_ptr<client::remote_pool> open(unsigned &nlanes,
	                                          control::pool_attr *attr_out = nullptr)
	{
		return client::remote_pool::open(node.target(), "pool.set", local.data(),
		                                 local.size(), &nlanes, attr_out, node.options());
	}
};

} // namespace rpmem::test

namespace rpmem::test
{

/** Whether /proc/<pid> is an rpmemd that has not yet closed its files: alive, or exiting
 *  but not yet a zombie (state Z or X; the kernel closes a process's files, releasing the
 *  pool's lock, before it becomes one). */
inline bool rpmemd_holds_files(const std::filesystem::path &proc_pid)
{
	const std::string stat = slurp(proc_pid / "stat"); // "pid (comm) S ..."
	const auto open = stat.find('('), close = stat.rfind(')');
	if (open == std::string::npos || close == std::string::npos || close + 2 >= stat.size())
		return false;
	const char state = stat[close + 2];
	return stat.compare(open + 1, close - open - 1, "rpmemd") == 0 && state != 'Z' &&
	       state != 'X';
}

/**
 * The PIDs of the rpmemds of the replica whose directory is `unique`, oldest PID first. An
 * exiting process shows neither its command line nor its executable, yet holds its pool's
 * lock until it has closed its files: one seen here before is still reported until then (a
 * test that ran `rpmem promote` on the pool right after found it locked, under load).
 */
inline std::vector<pid_t> find_rpmemds(const std::string &unique)
{
	static std::mutex mu;
	static std::map<pid_t, std::string> seen; // pid -> unique, of rpmemds found here
	std::lock_guard lock(mu);
	std::vector<pid_t> found;
	for (const auto &e : std::filesystem::directory_iterator("/proc")) {
		auto name = e.path().filename().string();
		if (name.find_first_not_of("0123456789") != std::string::npos)
			continue;
		const auto pid = static_cast<pid_t>(std::stol(name));
		std::string cmdline = slurp(e.path() / "cmdline");
		std::string exe;
		std::error_code ec;
		exe = std::filesystem::read_symlink(e.path() / "exe", ec).string();
		if (exe.find("rpmemd") != std::string::npos &&
		    cmdline.find(unique) != std::string::npos) {
			seen[pid] = unique;
			found.push_back(pid);
			continue;
		}
		if (auto s = seen.find(pid); s != seen.end() && s->second == unique) {
			if (cmdline.empty() && rpmemd_holds_files(e.path())) {
				found.push_back(pid);
				continue;
			}
			seen.erase(s);
		}
	}
	std::sort(found.begin(), found.end());
	return found;
}

/** The PID of an rpmemd of the replica whose directory is `unique` (find_rpmemds), or -1. */
inline pid_t find_rpmemd(const std::string &unique)
{
	const auto all = find_rpmemds(unique);
	return all.empty() ? -1 : all.front();
}

/** SIGKILLs every rpmemd of that replica: the one serving it and any still ending (a test
 *  that killed only the first found, under load, killed a session already ending and left
 *  the serving one alive). False when none was found. */
inline bool run_kill_rpmemd(const std::string &unique)
{
	bool killed = false;
	for (const pid_t pid : find_rpmemds(unique))
		killed = ::kill(pid, SIGKILL) == 0 || killed;
	return killed;
}

/** Waits (bounded: 10 s) until the rpmemd serving `node` has exited. */
inline void require_rpmemd_gone(replica &node)
{
	const auto dir = node.dir().string();
	for (int i = 0; i < 1000 && find_rpmemd(dir) > 0; ++i)
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	REQUIRE(find_rpmemd(dir) < 0);
}

} // namespace rpmem::test
