// SPDX-License-Identifier: BSD-3-Clause
// Debian's own libpmemobj, libpmempool and pmempool replicate through REPLICA lines, unmodified:
// they dlopen our librpmem.so.1, which starts our rpmemd over the private sshd.
#include "process.hpp"
#include "replica_fixture.hpp"

#include <sys/stat.h>

using namespace rpmem::test;

namespace
{

/** A local pool set with one remote replica, and the environment stock programs need. */
class replicated_setup
{
public:
	explicit replicated_setup(sshd &server) : server_(server), node_(server)
	{
		local_ = make_temp_dir("/tmp", "rpmem-local-");
		node_.write_poolset("remote.set", {"80M"});
		poolset_ = local_ / "pool.set";
		std::ofstream(poolset_)
		    << fmt::format("PMEMPOOLSET\n64M {}\nREPLICA {} remote.set\n",
		                   (local_ / "local.part").string(), server_.target().str());
	}
	~replicated_setup()
	{
		std::error_code ec;
		fs::remove_all(local_, ec);
	}

	/** Environment for stock tools: our librpmem, our rpmemd, the fixture's keys. libpmempool
	 * runs ssh itself (`rpmemd --remove`), so RPMEM_SSH is the fixture's ssh wrapper. */
	std::string env(bool with_ssh_wrapper = false, const char *log_level = "1") const
	{
		auto o = server_.client_options();
		std::string e =
		    fmt::format("LD_LIBRARY_PATH={}/lib RPMEM_CMD='{}' RPMEM_SSH_CONFIG={} "
		                "RPMEM_SSH_KNOWN_HOSTS={} RPMEM_SSH_IDENTITY={}",
		                RPMEM_BINARY_DIR, node_.command(), o.config_file,
		                o.known_hosts_file, o.identity_files.at(0));
		if (log_level)
			e += fmt::format(" RPMEM_LOG_LEVEL={}", log_level);
		if (with_ssh_wrapper)
			e += " RPMEM_SSH=" + server_.ssh_wrapper();
		return e;
	}

	std::string example(const std::string &args) const
	{
		return fmt::format("{}/bin/06-pmemobj-replica {} {}", RPMEM_BINARY_DIR, args,
		                   poolset_.string());
	}

	const fs::path &poolset() const { return poolset_; }
	fs::path local_part() const { return local_ / "local.part"; }
	fs::path remote_part() const { return node_.part("remote.set"); }
	replica &node() { return node_; }

private:
	sshd &server_;
	replica node_;
	fs::path local_;
	fs::path poolset_;
};

void require_ok(const process_result &r, const std::string &what)
{
	INFO(what << " printed:\n" << r.output);
	REQUIRE(r.status == 0);
}

} // namespace

TEST_CASE("stock libpmemobj replicates transactions from several threads", "[stock][pmemobj]")
{
	sshd server;
	replicated_setup s(server);
	require_ok(run(s.example("create"), s.env()), "06-pmemobj-replica create");
	auto verify = run(s.example("verify"), s.env());
	require_ok(verify, "06-pmemobj-replica verify");
	CHECK(verify.output.find("800 records: 0 bad") != std::string::npos);

	// The replica holds the data: lose the master, rebuild it from the replica, verify.
	fs::remove(s.local_part());
	require_ok(run("pmempool sync " + s.poolset().string(), s.env(true)), "pmempool sync");
	auto again = run(s.example("verify"), s.env());
	require_ok(again, "verify after rebuilding the master from the replica");
	CHECK(again.output.find("800 records: 0 bad") != std::string::npos);
}

TEST_CASE("pmempool create, info on the replica host, sync and rm", "[stock][pmempool]")
{
	sshd server;
	replicated_setup s(server);
	require_ok(run("pmempool create --layout=rpmem obj " + s.poolset().string(), s.env()),
	           "pmempool create obj");
	auto info = run("pmempool info " + s.remote_part().string());
	require_ok(info, "pmempool info on the replica part");
	CHECK(info.output.find("PMEMOBJ") != std::string::npos);
	CHECK(info.output.find("Checksum") != std::string::npos);
	CHECK(info.output.find("[OK]") != std::string::npos);

	SECTION("sync re-creates a damaged remote replica from the master")
	{
		{
			std::fstream f(s.remote_part(),
			               std::ios::in | std::ios::out | std::ios::binary);
			f.seekp(100);
			f.write("garbage", 7);
		}
		CHECK(run("pmempool info " + s.remote_part().string()).status != 0);
		require_ok(run("pmempool sync " + s.poolset().string(), s.env(true)),
		           "pmempool sync (remote replica damaged)");
		require_ok(run("pmempool info " + s.remote_part().string()),
		           "pmempool info after sync");
	}
	SECTION("sync re-creates a lost remote replica")
	{
		fs::remove(s.remote_part());
		require_ok(run("pmempool sync " + s.poolset().string(), s.env(true)),
		           "pmempool sync (remote replica lost)");
		CHECK(fs::exists(s.remote_part()));
	}
	SECTION("sync rebuilds a lost master from the remote replica")
	{
		fs::remove(s.local_part());
		require_ok(run("pmempool sync " + s.poolset().string(), s.env(true)),
		           "pmempool sync (master lost)");
		CHECK(fs::exists(s.local_part()));
		require_ok(run("pmempool info " + s.local_part().string()), "pmempool info master");
	}
	require_ok(run("pmempool rm " + s.poolset().string(), s.env(true)), "pmempool rm");
	CHECK(!fs::exists(s.remote_part()));
	CHECK(!fs::exists(s.local_part()));
}

TEST_CASE("a failed remote create shows librpmem's reason on a terminal and in the journal, "
          "not in a pipe",
          "[stock][pmempool][log]")
{
	sshd server;
	replicated_setup s(server);
	const std::string create = "pmempool create --layout=rpmem obj " + s.poolset().string();
	require_ok(run(create, s.env()), "pmempool create obj");
	// The master is lost, the replica is still there: creating the set again fails remotely.
	fs::remove(s.local_part());
	const std::string reason = "<librpmem>: <1> [error]";
	const std::string stock = "creating remote replica #1 failed";

	SECTION("stderr is a pipe: only libpmempool's own line, as with PMDK")
	{
		auto r = run(create, s.env(false, nullptr));
		INFO("pmempool create printed:\n" << r.output);
		CHECK(r.status != 0);
		CHECK(r.output.find(stock) != std::string::npos);
		CHECK(r.output.find(reason) == std::string::npos);
	}
	SECTION("stderr is a terminal: our reason, before libpmempool's line")
	{
		auto r = run("script -qec '" + create + "' /dev/null", s.env(false, nullptr));
		INFO("pmempool create on a terminal printed:\n" << r.output);
		CHECK(r.status != 0);
		const auto ours = r.output.find(reason);
		REQUIRE(ours != std::string::npos);
		CHECK(r.output.find(stock) > ours);
		CHECK(r.output.find("exists", ours) != std::string::npos);
	}
	SECTION("a terminal with RPMEM_LOG_LEVEL=0: silent, as asked")
	{
		auto r = run("script -qec '" + create + "' /dev/null", s.env(false, "0"));
		INFO("pmempool create on a terminal printed:\n" << r.output);
		CHECK(r.status != 0);
		CHECK(r.output.find(stock) != std::string::npos);
		CHECK(r.output.find(reason) == std::string::npos);
	}
	SECTION("stderr is the journal (JOURNAL_STREAM names it): our reason")
	{
		const auto log = fs::path(s.poolset()).parent_path() / "journal";
		std::ofstream(log).close();
		struct stat st {
		};
		REQUIRE(::stat(log.c_str(), &st) == 0);
		auto journal = fmt::format(" JOURNAL_STREAM={}:{}", st.st_dev, st.st_ino);
		auto r = run("sh -c '" + create + " 2>>" + log.string() + "'",
		             s.env(false, nullptr) + journal);
		auto text = slurp(log);
		INFO("pmempool create wrote to the journal:\n" << text);
		CHECK(r.status != 0);
		CHECK(text.find(reason) != std::string::npos);
		CHECK(text.find(stock) != std::string::npos);
		// The same file, but not announced as the journal: silent.
		std::ofstream(log, std::ios::trunc).close();
		run("sh -c '" + create + " 2>>" + log.string() + "'", s.env(false, nullptr));
		CHECK(slurp(log).find(reason) == std::string::npos);
	}
}

TEST_CASE("RPMEM_STATS_FILE: a stock libpmemobj program leaves metrics a parser from Debian reads",
          "[stock][pmemobj][metrics]")
{
	sshd server;
	replicated_setup s(server);
	const std::string ext = GENERATE(std::string(".prom"), std::string(".json"));
	const auto file = fs::path(s.poolset()).parent_path() / ("metrics" + ext);
	require_ok(run(s.example("create"), s.env() + " RPMEM_STATS_FILE=" + file.string() +
	                                        " RPMEM_STATS_INTERVAL=100"),
	           "06-pmemobj-replica create");
	REQUIRE(fs::exists(file));
	auto samples = metrics_samples(file.string());
	INFO("the metrics file:\n" << slurp(file) << "\nparsed:\n" << samples.output);
	REQUIRE(samples.status == 0);
	const auto &out = samples.output;
	const std::string pool = "descriptor=\"remote.set\"";
	if (ext == ".prom") {
		CHECK(sample_value(out, "rpmem_pool_info", "mode=\"sync\"") == 1);
		CHECK(sample_value(out, "rpmem_pool_info", "state=\"closed\"") == 1);
		CHECK(sample_value(out, "rpmem_pool_up", pool) == 0);
		CHECK(sample_value(out, "rpmem_operations_total", "op=\"persist\"") > 0);
		CHECK(sample_value(out, "rpmem_bytes_total", "op=\"persist\"") > 0);
		CHECK(sample_value(out, "rpmem_round_trips_total", pool) > 0);
		CHECK(sample_value(out, "rpmem_round_trip_seconds", "quantile=\"0.5\"") > 0);
		CHECK(sample_value(out, "rpmem_errors_total", pool) == 0);
		CHECK(sample_value(out, "rpmem_last_persist_timestamp_seconds", pool) > 1.7e9);
		CHECK(sample_value(out, "rpmem_pool_lanes", pool) > 0);
		CHECK(sample_value(out, "rpmem_async_lag_bytes") == -1); // sync mode: none
	} else {
		CHECK(out.find("rpmem_json_state{" + pool) != std::string::npos);
		CHECK(out.find("} closed\n") != std::string::npos);
		CHECK(sample_value(out, "rpmem_json_operations_persist", pool) > 0);
		CHECK(sample_value(out, "rpmem_json_bytes_persist", pool) > 0);
		CHECK(sample_value(out, "rpmem_json_errors", pool) == 0);
		CHECK(sample_value(out, "rpmem_json_last_persist_unix_ns", pool) > 1.7e18);
	}
	// No temporary file is left beside it.
	std::size_t files = 0;
	for ([[maybe_unused]] const auto &f : fs::directory_iterator(file.parent_path()))
		++files;
	CHECK(files == 3); // pool.set, local.part and the metrics file: no temporary left
}
