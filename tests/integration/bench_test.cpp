// SPDX-License-Identifier: BSD-3-Clause
// Smoke run of rpmem-bench and rpmem-floor against the real rpmemd over the private sshd: every
// scenario once with tiny counts, so the tool never rots. No timing is asserted: only that the
// expected rows come out and every ratio to a floor is a positive number.
#include "replica_fixture.hpp"

#include <array>
#include <cstdio>
#include <map>
#include <sys/wait.h>

using namespace rpmem::test;

namespace
{

struct bench_run {
	int status = -1;
	std::string out; // stdout (the CSV)
	std::string err; // stderr
};

struct csv_row {
	std::map<std::string, std::string> f;
	const std::string &operator[](const std::string &k) const { return f.at(k); }
};

std::vector<std::string> split_csv(const std::string &line)
{
	std::vector<std::string> out;
	std::string cur;
	bool quoted = false;
	for (char c : line) {
		if (c == '"')
			quoted = !quoted;
		else if (c == ',' && !quoted) {
			out.push_back(cur);
			cur.clear();
		} else
			cur += c;
	}
	out.push_back(cur);
	return out;
}

std::vector<csv_row> parse_csv(const std::string &text)
{
	std::vector<csv_row> rows;
	std::istringstream in(text);
	std::string line;
	std::vector<std::string> header;
	while (std::getline(in, line)) {
		if (line.empty())
			continue;
		auto cells = split_csv(line);
		if (header.empty()) {
			header = cells;
			continue;
		}
		REQUIRE(cells.size() == header.size());
		csv_row r;
		for (std::size_t i = 0; i < cells.size(); ++i)
			r.f[header[i]] = cells[i];
		rows.push_back(r);
	}
	return rows;
}

class bench_setup
{
public:
	bench_setup()
	    // A fake eADR platform: the scenarios' APM rows need one (rpmemd(1), persist-apm).
	    : node_(server_, replica_options{.parent = "/dev/shm",
	                                     .fake_eadr = true,
	                                     .force_pmem = true,
	                                     .provider = "tcp"})
	{
		node_.write_poolset("bench.set", {"24M"});
		node_.write_poolset("obj.set", {"16M"});
		node_.write_poolset("fan1.set", {"24M"});
		node_.write_poolset("fan2.set", {"24M"});
	}

	bench_run run(const std::string &args)
	{
		auto o = server_.client_options();
		fs::path err = node_.dir() / "bench.stderr";
		std::string cmd = fmt::format(
		    "env RPMEM_CMD='{}' RPMEM_SSH_CONFIG={} RPMEM_SSH_KNOWN_HOSTS={} "
		    "RPMEM_SSH_IDENTITY={} {}/bin/rpmem-bench {} bench.set --pool-size 16M {} 2>{}",
		    node_.command(), o.config_file, o.known_hosts_file, o.identity_files.at(0),
		    RPMEM_BINARY_DIR, server_.target().str(), args, err.string());
		bench_run r;
		FILE *p = popen(cmd.c_str(), "r");
		REQUIRE(p);
		std::array<char, 4096> buf{};
		std::size_t n;
		while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
			r.out.append(buf.data(), n);
		int st = pclose(p);
		r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		r.err = slurp(err);
		return r;
	}

	replica &node() { return node_; }

private:
	sshd server_;
	replica node_;
};

void require_ratios_positive(const std::vector<csv_row> &rows)
{
	for (const auto &r : rows) {
		if (r["floor"].empty() || r["floor"].rfind("limit:", 0) == 0)
			continue;
		INFO(r["scenario"] << " " << r["param"] << " ratio '" << r["ratio"] << "'");
		double ratio = std::stod(r["ratio"]);
		CHECK(ratio > 0);
		CHECK(std::stod(r["floor_value"]) > 0);
	}
}

std::size_t count(const std::vector<csv_row> &rows, const std::string &scenario,
                  const std::string &param = {})
{
	std::size_t n = 0;
	for (const auto &r : rows)
		n += r["scenario"] == scenario && (param.empty() || r["param"] == param);
	return n;
}

bool have_gnuplot()
{
	return std::system("command -v gnuplot >/dev/null 2>&1") == 0;
}

} // namespace

TEST_CASE("rpmem-bench runs every scenario once beside its floor (tcp)", "[bench]")
{
	bench_setup s;
	fs::path png = s.node().dir() / "bench.png";
	std::string plot = have_gnuplot() ? " --plot " + png.string() : "";
	auto r = s.run(fmt::format("--csv -s all --provider tcp --method gpspm,apm --sizes 64,64K "
	                           "--flush-counts 4 --threads 2 --tp-sizes 64K -n 6 --rounds 2 "
	                           "-t 0.05 --window 4 --open-reps 1 --pmemobj-remote-set obj.set "
	                           "--pmemobj-size 16M --pmemobj-ops 20 --pmemobj-dir {} "
	                           "--lanes-check 64 --fanout-sets fan1.set,fan2.set{}",
	                           s.node().dir().string(), plot));
	INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
	REQUIRE(r.status == 0);
	auto rows = parse_csv(r.out);
	CHECK(count(rows, "floor:write+msg+reply", "64B") == 1);
	CHECK(count(rows, "floor:write+read", "64B") == 1);
	CHECK(count(rows, "floor:send+reply", "64B") == 1);
	CHECK(count(rows, "persist", "64B") == 2); // gpspm and apm
	CHECK(count(rows, "persist-bw", "64KiB") == 2);
	CHECK(count(rows, "flush256B+drain", "N=4") == 1);
	CHECK(count(rows, "throughput-2T", "64KiB") == 1);
	CHECK(count(rows, "floor:stream") >= 2);
	CHECK(count(rows, "pmemobj-tx", "local") == 1);
	CHECK(count(rows, "pmemobj-tx", "replica") == 1);
	CHECK(count(rows, "create") == 1);
	CHECK(count(rows, "open.fabric-connect") == 1);
	CHECK(count(rows, "lanes") == 1);
	CHECK(count(rows, "fanout", "1 replicas") == 1);
	CHECK(count(rows, "fanout", "2 replicas") == 1);
	CHECK(count(rows, "floor:send+reply x2", "2 peers") == 1);
	CHECK(count(rows, "fanout-vs-1", "2 replicas") == 1);
	for (const auto &row : rows)
		if (row["scenario"] == "persist")
			CHECK((row["method"] == "gpspm" || row["method"] == "apm"));
	require_ratios_positive(rows);
	if (!plot.empty()) {
		auto head = slurp(png).substr(0, 8);
		CHECK(head == std::string("\x89PNG\r\n\x1a\n", 8));
	}
}

TEST_CASE("rpmem-bench measures the sockets provider and prints a table", "[bench]")
{
	bench_setup s;
	auto r = s.run("-s latency,flush --provider sockets --sizes 256 --flush-counts 2 -n 6 "
	               "--rounds 2");
	INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
	REQUIRE(r.status == 0);
	CHECK(r.out.find("provider") != std::string::npos);
	CHECK(r.out.find("floor:write+msg+reply") != std::string::npos);
	CHECK(r.out.find("sockets  gpspm  persist") != std::string::npos);
	CHECK(r.out.find("flush256B+drain") != std::string::npos);
}

TEST_CASE("rpmem-bench says what failed when rpmem-floor cannot be started", "[bench]")
{
	bench_setup s;
	auto r = s.run("-s latency --sizes 64 -n 2 --floor-cmd /nonexistent/rpmem-floor");
	CHECK(r.status == 1);
	CHECK(r.err.find("rpmem-floor") != std::string::npos);
	CHECK(r.err.find("--floor-cmd") != std::string::npos);
}
