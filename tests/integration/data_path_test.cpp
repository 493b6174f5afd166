// SPDX-License-Identifier: BSD-3-Clause
// The data path end to end: several threads on many lanes persist random ranges (persist,
// relaxed flush + drain, deep persist); after close the replica's pool file must equal the local
// pool byte for byte past the header. For tcp and sockets, GPSPM and APM, ext4 and /dev/shm.
#include "raw_connection.hpp"
#include "replica_fixture.hpp"

#include "client/persist_method.hpp"

#include "fabric/endpoint.hpp"
#include "fabric/eq.hpp"
#include "fabric/fabric.hpp"
#include "fabric/info.hpp"
#include "fabric/page_buffer.hpp"
#include "rpmem/error.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <deque>
#include <fcntl.h>
#include <netinet/in.h>
#include <regex>
#include <string_view>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using rpmem::client::remote_pool;
using namespace rpmem::test;
namespace ctl = rpmem::control;

namespace
{

constexpr std::size_t pool_size = 64 << 20;
constexpr std::size_t hdr = 4096;

std::size_t random_length(std::mt19937_64 &rng, std::size_t max)
{
	switch (rng() % 4) {
	case 0:
		return 1 + rng() % 64;
	case 1:
		return 1 + rng() % 8192;
	case 2:
		return 1 + rng() % 200000;
	default:
		return 1 + rng() % std::min<std::size_t>(max, 4 << 20);
	}
}

void scribble(std::uint8_t *p, std::size_t n, std::mt19937_64 &rng)
{
	for (std::size_t i = 0; i < n; ++i)
		p[i] = static_cast<std::uint8_t>(rng());
}

/** A pool set `size` large on `node` and a remote pool of it over `local` with `nlanes` lanes
 *  asked for (granted: *nlanes, when given). */
std::unique_ptr<remote_pool> create_pool(replica &node, local_pool &local, const std::string &size,
                                         unsigned lanes, unsigned *granted = nullptr)
{
	node.write_poolset("pool.set", {size});
	auto attr = sample_attr();
	auto pool = remote_pool::create(node.target(), "pool.set", local.data(), local.size(),
	                                &lanes, &attr, node.options());
	if (granted)
		*granted = lanes;
	return pool;
}

/** Each thread owns a slice of the pool and lanes t, t+T, ...; every op completes before the
 * next, so the final content is defined whatever lane carried it. */
void stress(remote_pool &pool, local_pool &local, unsigned threads, unsigned ops)
{
	unsigned nlanes = pool.nlanes();
	std::size_t slice = (local.size() - hdr) / threads;
	std::atomic<int> failures{0};
	std::vector<std::string> why(threads); // Catch's macros are not for worker threads
	std::vector<std::thread> workers;
	for (unsigned t = 0; t < threads; ++t) {
		workers.emplace_back([&, t] {
			std::mt19937_64 rng(1000 + t);
			std::size_t base = hdr + t * slice;
			try {
				for (unsigned i = 0; i < ops; ++i) {
					unsigned lane = (t + threads * (i % 4)) % nlanes;
					std::size_t len = random_length(rng, slice);
					std::size_t off = base + rng() % (slice - len + 1);
					scribble(local.data() + off, len, rng);
					switch (rng() % 5) {
					case 0:
						pool.persist(off, len, lane, 0);
						break;
					case 1:
						pool.persist(off, len, lane,
						             rpmem::client::persist_relaxed);
						break;
					case 2: {
						// Several relaxed flushes, one drain.
						std::size_t piece =
						    std::max<std::size_t>(1, len / 7);
						for (std::size_t o = 0; o < len; o += piece)
							pool.flush(off + o,
							           std::min(piece, len - o), lane,
							           rpmem::client::flush_relaxed);
						pool.drain(lane, 0);
						break;
					}
					case 3:
						pool.deep_persist(off, len, lane);
						break;
					default:
						pool.flush(off, len, lane, 0);
						break;
					}
				}
			} catch (const rpmem::error &e) {
				why[t] = e.what();
				++failures;
			}
		});
	}
	for (auto &w : workers)
		w.join();
	for (unsigned t = 0; t < threads; ++t)
		if (!why[t].empty())
			UNSCOPED_INFO("thread " << t << ": " << why[t]);
	REQUIRE(failures == 0);
}

void check_replica_equals_local(const replica &node, const local_pool &local)
{
	auto file = slurp(node.part("pool.set"));
	REQUIRE(file.size() >= local.size());
	std::size_t first_diff = SIZE_MAX;
	for (std::size_t i = hdr; i < local.size(); ++i) {
		if (static_cast<std::uint8_t>(file[i]) != local.data()[i]) {
			first_diff = i;
			break;
		}
	}
	INFO("first differing byte at offset " << first_diff);
	CHECK(first_diff == SIZE_MAX);
}

/** The stress and checks below: rpmemd must choose `method`; `logged`: a line its log must
 * hold at the end. */
void run_end_to_end(replica_options ro, ctl::persist_method method, const std::string &logged = {})
{
	sshd server;
	const auto provider = ro.provider;
	replica node(server, ro);
	node.write_poolset("pool.set", {"72M"});
	local_pool local(pool_size);
	local.fill_random(42, hdr);
	auto attr = sample_attr();
	unsigned nlanes = getenv("T_NLANES") ? unsigned(atoi(getenv("T_NLANES"))) : 16;
	std::unique_ptr<remote_pool> pool;
	try {
		pool = remote_pool::create(node.target(), "pool.set", local.data(), local.size(),
		                           &nlanes, &attr, node.options());
	} catch (const rpmem::error &e) {
		FAIL(e.what() << "\nrpmemd log:\n" << node.log_text());
	}
	CHECK(pool->fabric().provider == provider);
	REQUIRE(std::string(ctl::to_string(pool->method())) == ctl::to_string(method));
	if (ro.inline_max >= 0) {
		CHECK(pool->lanes().travels_inline(std::uint64_t(ro.inline_max)));
		CHECK_FALSE(pool->lanes().travels_inline(std::uint64_t(ro.inline_max) + 1));
	}
	if (ro.mr == rpmem::fabric::mr_mode::basic) {
		// The hardware mode: the replica's region is addressed by virtual address, with
		// the key the provider chose (tcp and sockets do not keep FI_LOCAL_MR).
		CHECK(pool->fabric().mr_mode ==
		      (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY));
		CHECK(pool->fabric().raddr != 0);
	}
	// The whole pool first, then the random stream on top of it.
	pool->persist(hdr, local.size() - hdr, 0, rpmem::client::persist_relaxed);
	stress(*pool, local, 4, 60);

	// read returns what was written, at odd offsets and lengths too.
	std::vector<std::uint8_t> back(3 << 20);
	for (auto [off, len] : {std::pair<std::size_t, std::size_t>{hdr, 1},
	                        {hdr + 12345, 77777},
	                        {local.size() - (3 << 20), 3 << 20}}) {
		pool->read(back.data(), off, len, 1 % nlanes);
		CHECK(std::memcmp(back.data(), local.data() + off, len) == 0);
	}
	pool->close();
	check_replica_equals_local(node, local);
	if (!logged.empty())
		CHECK_THAT(node.log_text(), Catch::Contains(logged));
}

} // namespace

constexpr auto gpspm = ctl::persist_method::gpspm;
constexpr auto apm = ctl::persist_method::apm;
constexpr auto commit = ctl::persist_method::commit;

TEST_CASE("tcp GPSPM on ext4: replica equals the local pool", "[data][tcp]")
{
	run_end_to_end({.parent = "/tmp", .provider = "tcp"}, gpspm);
}
TEST_CASE("tcp APM on /dev/shm: replica equals the local pool", "[data][tcp]")
{
	run_end_to_end({.parent = "/dev/shm", .apm = true, .fake_eadr = true, .provider = "tcp"},
	               apm);
}
TEST_CASE("tcp GPSPM on /dev/shm: replica equals the local pool", "[data][tcp]")
{
	run_end_to_end({.parent = "/dev/shm", .provider = "tcp"}, gpspm);
}
TEST_CASE("tcp commit on /dev/shm: replica equals the local pool", "[data][tcp][commit]")
{
	// rpmemd --persist-commit, a pool on pmem (forced), tcp grants FI_RMA_PMEM: every
	// range larger than the inline threshold is an FI_COMMIT_COMPLETE write.
	run_end_to_end({.parent = "/dev/shm", .commit = true, .provider = "tcp"}, commit,
	               "provider tcp, persist method commit, made durable by pmem_persist");
}
TEST_CASE("sockets GPSPM on ext4: replica equals the local pool", "[data][sockets]")
{
	run_end_to_end({.parent = "/tmp", .provider = "sockets"}, gpspm);
}
TEST_CASE("sockets APM on /dev/shm: replica equals the local pool", "[data][sockets]")
{
	run_end_to_end(
	    {.parent = "/dev/shm", .apm = true, .fake_eadr = true, .provider = "sockets"}, apm);
}
TEST_CASE("commit is offered only where the provider grants FI_RMA_PMEM and the pool is pmem",
          "[data][commit]")
{
	// sockets grants no FI_RMA_PMEM: rpmemd falls back to APM where allowed, else GPSPM.
	run_end_to_end({.parent = "/dev/shm", .commit = true, .provider = "sockets"}, gpspm,
	               "provider sockets, persist method gpspm, made durable by pmem_persist");
	run_end_to_end({.parent = "/dev/shm",
	                .apm = true,
	                .fake_eadr = true,
	                .commit = true,
	                .provider = "sockets"},
	               apm);
	// A pool that is not pmem (ext4, msync) never gets commit: a cache flush is not enough.
	run_end_to_end({.parent = "/tmp", .provider = "tcp", .daemon_args = "--persist-commit"},
	               gpspm, "provider tcp, persist method gpspm, made durable by pmem_msync");
}
namespace
{

/** The method rpmemd offers a small pool under `ro` (and persists one range under it), with
 *  rpmemd's log of the session. */
std::pair<ctl::persist_method, std::string> offered(replica_options ro)
{
	remote_setup fx(8 << 20, {"8M"}, ro);
	unsigned nlanes = 1;
	auto pool = fx.create(nlanes);
	const auto method = pool->method();
	std::memset(fx.local.data() + hdr, 0x5d, 4096);
	pool->persist(hdr, 4096, 0, 0);
	pool->close();
	CHECK(slurp(fx.node.part("pool.set")).substr(hdr, 4096) == std::string(4096, '\x5d'));
	return {method, fx.node.log_text()};
}

constexpr std::string_view not_offered = "persist-apm is set, but APM is not offered for this pool";

} // namespace

TEST_CASE("APM over tcp and sockets only on a platform that flushes its caches on power loss",
          "[data][apm]")
{
	const std::string provider = GENERATE("tcp", "sockets");
	INFO(provider);
	// This machine's caches are lost at power loss (no eADR): the CPU's copies into them are
	// not durable when the client's read sees them, so GPSPM, and the log says why.
	auto [method, log] = offered({.parent = "/dev/shm", .apm = true, .provider = provider});
	CHECK(method == gpspm);
	CHECK_THAT(log, Catch::Contains(fmt::format(
	                    "{}: over {} the replica's CPU copies each write into its caches, and "
	                    "libpmem's pmem_has_auto_flush() reports no platform that flushes them "
	                    "on power loss (eADR); gpspm instead",
	                    not_offered, provider)));
	// The operator's word about RDMA NICs changes nothing for a CPU's copies.
	std::tie(method, log) = offered({.parent = "/dev/shm",
	                                 .apm = true,
	                                 .provider = provider,
	                                 .daemon_args = "--nic-writes-durable"});
	CHECK(method == gpspm);
	CHECK_THAT(log, Catch::Contains("nic-writes-durable speaks for RDMA NICs only"));
	// Where libpmem reports eADR (faked: scripts/fake-eadr.sh), APM, and nothing to explain.
	std::tie(method, log) =
	    offered({.parent = "/dev/shm", .apm = true, .fake_eadr = true, .provider = provider});
	CHECK(method == apm);
	CHECK_THAT(log, !Catch::Contains(std::string(not_offered)));
}

TEST_CASE("APM asked for where it is not durable gives way to commit, or to GPSPM on a pool "
          "that is not pmem",
          "[data][apm]")
{
	// tcp grants FI_RMA_PMEM: commit, preferred anyway, with no APM line.
	auto [method, log] =
	    offered({.parent = "/dev/shm", .apm = true, .commit = true, .provider = "tcp"});
	CHECK(method == commit);
	CHECK_THAT(log, !Catch::Contains(std::string(not_offered)));
	// A pool on ext4 (not pmem: msync), even on a faked eADR platform.
	std::tie(method, log) = offered({.parent = "/tmp",
	                                 .fake_eadr = true,
	                                 .provider = "tcp",
	                                 .daemon_args = "--persist-apm"});
	CHECK(method == gpspm);
	CHECK_THAT(log, Catch::Contains(
	                    fmt::format("{}: the pool is not on persistent memory", not_offered)));
}

namespace
{

/** A TCP socket on 0.0.0.0:port, listening when `listen_too`; -1 when the port is taken. */
int bind_port(std::uint16_t port, bool listen_too)
{
	int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(fd >= 0);
	sockaddr_in sa{};
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	if (::bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 ||
	    (listen_too && ::listen(fd, 1) != 0)) {
		::close(fd);
		return -1;
	}
	return fd;
}

/** A port p below the ephemeral range whose p and p + 1 are both free right now, with p held
 *  by a listener of this process (closed by the caller). */
std::pair<std::uint16_t, int> held_port_with_free_neighbour()
{
	for (unsigned p = 20000 + static_cast<unsigned>(::getpid() % 5000) * 2; p < 32000; p += 2) {
		int next = bind_port(static_cast<std::uint16_t>(p + 1), false);
		if (next < 0)
			continue;
		::close(next);
		if (int held = bind_port(static_cast<std::uint16_t>(p), true); held >= 0)
			return {static_cast<std::uint16_t>(p), held};
	}
	FAIL("no two free neighbouring ports between 20000 and 32000");
	return {0, -1};
}

} // namespace

TEST_CASE("port-range: the fabric listener takes the first free port of the range, and with none "
          "free the create fails saying so",
          "[data][port-range]")
{
	auto [port, held] = held_port_with_free_neighbour();
	INFO("port " << port << " held by the test, " << port + 1 << " free");
	struct closer {
		int fd;
		~closer() { ::close(fd); }
	} hold{held};
	{
		// The first port is taken: the session listens on the second, and the data path
		// works.
		remote_setup fx(8 << 20, {"8M"},
		                {.provider = "tcp",
		                 .daemon_args = fmt::format("--port-range={}-{}", port, port + 1)});
		unsigned nlanes = 2;
		auto pool = fx.create(nlanes);
		std::memset(fx.local.data() + hdr, 0x6e, 8192);
		pool->persist(hdr, 8192, 0, 0);
		pool->close();
		CHECK(slurp(fx.node.part("pool.set")).substr(hdr, 8192) ==
		      std::string(8192, '\x6e'));
		CHECK_THAT(fx.node.log_text(), Catch::Contains(fmt::format(
		                                   "fabric target on 127.0.0.1:{}: ", port + 1)));
	}
	// Every port of the range is taken: the create fails with what to do, and leaves no pool.
	remote_setup fx(8 << 20, {"8M"},
	                {.provider = "tcp", .daemon_args = fmt::format("--port-range={}", port)});
	unsigned nlanes = 2;
	try {
		fx.create(nlanes);
		FAIL("create succeeded with every port of port-range taken");
	} catch (const rpmem::error &e) {
		INFO(e.what());
		CHECK(e.errnum() == ECONNABORTED);
		CHECK_THAT(
		    std::string(e.what()),
		    Catch::Contains(fmt::format("no port of port-range {0}-{0} on 127.0.0.1 is "
		                                "free for the fabric listener (provider tcp): 1 "
		                                "of the 1 in use; widen port-range",
		                                port)));
	}
	CHECK_FALSE(fs::exists(fx.node.part("pool.set")));
}

TEST_CASE("sockets GPSPM with FI_MR_BASIC: replica equals the local pool", "[data][sockets][mr]")
{
	// API 1.4 and FI_MR_BASIC on both sides, as PMDK asked and RDMA hardware grants:
	// virtual addresses and provider keys.
	run_end_to_end(
	    {.parent = "/tmp", .provider = "sockets", .mr = rpmem::fabric::mr_mode::basic}, gpspm,
	    "mr_mode [BASIC] = [VIRT_ADDR ALLOCATED PROV_KEY]");
}
TEST_CASE("sockets APM with FI_MR_BASIC: replica equals the local pool", "[data][sockets][mr]")
{
	run_end_to_end({.parent = "/dev/shm",
	                .apm = true,
	                .fake_eadr = true,
	                .provider = "sockets",
	                .mr = rpmem::fabric::mr_mode::basic},
	               apm);
}
TEST_CASE("tcp commit with FI_MR_BASIC: replica equals the local pool", "[data][tcp][mr]")
{
	run_end_to_end({.parent = "/dev/shm",
	                .commit = true,
	                .provider = "tcp",
	                .mr = rpmem::fabric::mr_mode::basic},
	               commit, "mr_mode [BASIC] = [VIRT_ADDR ALLOCATED PROV_KEY]");
}
TEST_CASE("tcp GPSPM with FI_MR_SCALABLE and local descriptors: replica equals the local pool",
          "[data][tcp][mr]")
{
	// FI_MR_SCALABLE (offsets, requested keys) on both sides, and the client passing and
	// honouring local descriptors as under FI_MR_LOCAL (reads into memory outside the pool
	// register it first), which tcp ignores but no code path skips.
	run_end_to_end({.parent = "/dev/shm",
	                .provider = "tcp",
	                .mr = rpmem::fabric::mr_mode::scalable,
	                .force_local_mr = true},
	               gpspm, "mr_mode [SCALABLE] = []");
}
TEST_CASE("every method with small ranges inline, and with none inline", "[data][inline]")
{
	// Connect-time calibration picks the inline threshold per method and provider; these run
	// both ways of every method whatever it would pick here (RPMEM_INLINE_MAX).
	auto [method, inline_max] = GENERATE(table<ctl::persist_method, std::int64_t>(
	    {{gpspm, 0}, {apm, 4096}, {apm, 0}, {commit, 4096}, {commit, 0}}));
	INFO(ctl::to_string(method) << ", RPMEM_INLINE_MAX=" << inline_max);
	run_end_to_end({.parent = "/dev/shm",
	                .apm = method == apm,
	                .fake_eadr = method == apm,
	                .commit = method == commit,
	                .provider = "tcp",
	                .inline_max = inline_max},
	               method);
}
TEST_CASE("APM: far more announced writes between two drains than rpmemd's CQ holds",
          "[data][tcp][apm]")
{
	// On tcp each APM write carries remote CQ data (persist_method.cpp: the worker keeps
	// polling until the read). Relaxed flushes between drains are not bounded, so rpmemd's
	// CQ (sized for 16 writes per lane) overflows into the provider's list: none may be lost,
	// and the one drain must still cover every write.
	sshd server;
	replica node(server, {.parent = "/dev/shm",
	                      .apm = true,
	                      .fake_eadr = true,
	                      .provider = "tcp",
	                      .inline_max = 0});
	local_pool local(pool_size);
	auto pool = create_pool(node, local, "72M", 1);
	REQUIRE(pool->method() == apm);
	REQUIRE_FALSE(pool->lanes().travels_inline(64));
	constexpr std::size_t writes = 3000;
	for (std::size_t i = 0; i < writes; ++i) {
		std::size_t off = hdr + i * 128;
		std::memset(local.data() + off, static_cast<int>(i % 251) + 1, 64);
		pool->flush(off, 64, 0, rpmem::client::flush_relaxed);
	}
	pool->drain(0, 0);
	std::vector<std::uint8_t> back(writes * 128);
	pool->read(back.data(), hdr, back.size(), 0);
	CHECK(std::memcmp(back.data(), local.data() + hdr, back.size()) == 0);
	pool->close();
	check_replica_equals_local(node, local);
}
namespace
{

/** Persists `persists` ranges of 4 MiB with GPSPM on one lane and returns how many requests
 * rpmemd's session-end line counts (the connect-time probes included); the replica must hold
 * every range. */
std::uint64_t requests_for_large_persists(const replica_options &ro, unsigned persists)
{
	sshd server;
	replica node(server, ro);
	local_pool local(pool_size);
	local.fill_random(9, hdr);
	auto pool = create_pool(node, local, "72M", 1);
	REQUIRE(pool->method() == gpspm);
	constexpr std::size_t big = 4 << 20;
	for (unsigned i = 0; i < persists; ++i)
		pool->persist(hdr + (i % 8) * big, big, 0, 0);
	pool->close();
	auto file = slurp(node.part("pool.set"));
	CHECK(std::memcmp(file.data() + hdr, local.data() + hdr, 8 * big) == 0);
	const auto log = node.log_text();
	std::smatch m;
	INFO("rpmemd's log:\n" << log);
	REQUIRE(std::regex_search(log, m,
	                          std::regex(R"(session end: pool pool\.set, (\d+) requests)")));
	return std::stoull(m[1]);
}

} // namespace

TEST_CASE("large GPSPM persists go in chunks on tcp, whole on sockets, as RPMEM_PIPELINE_CHUNK "
          "says on either",
          "[data][pipeline]")
{
	// A pipelined 4 MiB persist is 8 requests of 512 KiB on one lane (the daemon grants 8 per
	// lane); a whole one is 1. The connect-time probes add a few dozen either way (24 here).
	constexpr unsigned persists = 64;
	auto [provider, chunk, pipelined] =
	    GENERATE(table<std::string, std::optional<std::uint64_t>, bool>({
	        {"tcp", std::nullopt, true},
	        {"sockets", std::nullopt, false},
	        {"sockets", std::uint64_t(512 << 10), true},
	        {"tcp", std::uint64_t(0), false},
	    }));
	INFO(provider << ", RPMEM_PIPELINE_CHUNK " << (chunk ? std::to_string(*chunk) : "unset"));
	const auto requests = requests_for_large_persists({.parent = "/dev/shm",
	                                                   .force_pmem = true,
	                                                   .provider = provider,
	                                                   .pipeline_chunk = chunk},
	                                                  persists);
	INFO(requests << " requests for " << persists << " persists of 4 MiB");
	if (pipelined)
		CHECK(requests >= 4 * persists);
	else
		CHECK(requests < 3 * persists);
}

TEST_CASE("the connect-time probes leave the replica's bytes as they were", "[data][inline]")
{
	// The probes persist, at the end of the pool, bytes read from there first: opening a pool
	// over local memory that holds something else (pmempool sync reading a replica back) must
	// not change the replica. Every method, as each probes its own way.
	auto method = GENERATE(gpspm, apm, commit);
	INFO(ctl::to_string(method));
	sshd server;
	replica node(server, {.parent = "/dev/shm",
	                      .apm = method == apm,
	                      .fake_eadr = method == apm,
	                      .commit = method == commit,
	                      .provider = "tcp"});
	node.write_poolset("pool.set", {"8M"});
	local_pool written(8 << 20);
	written.fill_random(7, hdr);
	auto attr = sample_attr();
	unsigned nlanes = 2;
	auto pool = remote_pool::create(node.target(), "pool.set", written.data(), written.size(),
	                                &nlanes, &attr, node.options());
	pool->persist(hdr, written.size() - hdr, 0, 0);
	pool->close();

	local_pool zeros(8 << 20);
	pool = remote_pool::open(node.target(), "pool.set", zeros.data(), zeros.size(), &nlanes,
	                         nullptr, node.options());
	REQUIRE(pool->method() == method);
	std::vector<std::uint8_t> tail(16 << 10);
	pool->read(tail.data(), zeros.size() - tail.size(), tail.size(), 1);
	pool->close();
	CHECK(std::memcmp(tail.data(), written.data() + written.size() - tail.size(),
	                  tail.size()) == 0);
	check_replica_equals_local(node, written);
}

TEST_CASE("tcp GPSPM, both sides polling: replica equals the local pool", "[data][tcp][wait]")
{
	// RPMEM_SPIN=1 and rpmemd --wait=spin: no thread ever blocks on a completion queue.
	run_end_to_end({.parent = "/dev/shm",
	                .provider = "tcp",
	                .daemon_args = "--wait=spin",
	                .wait = rpmem::fabric::wait_mode::spin},
	               gpspm, "(spin waits)");
}
TEST_CASE("sockets GPSPM, both sides blocking: replica equals the local pool",
          "[data][sockets][wait]")
{
	// RPMEM_SPIN=0 and rpmemd --wait=block: every wait is a blocking read.
	run_end_to_end({.parent = "/dev/shm",
	                .provider = "sockets",
	                .daemon_args = "--wait=block",
	                .wait = rpmem::fabric::wait_mode::block},
	               gpspm, "(block waits)");
}

TEST_CASE("a method this side's provider cannot serve is refused, naming the remedy",
          "[data][method]")
{
	// tcp and sockets grant both orders and tcp FI_RMA_PMEM, so a provider that does not is
	// described here, as fi_getinfo would have granted it.
	rpmem::client::path_resources res;
	rpmem::fabric::granted g;
	g.provider = "verbs";
	g.msg_order = FI_ORDER_SAW; // no read-after-write
	g.rma_pmem = false;
	auto refused = [&](ctl::persist_method m) {
		try {
			rpmem::client::make_persist_method(m, res, g, "node2");
		} catch (const rpmem::error &e) {
			return e;
		}
		FAIL("method " << ctl::to_string(m) << " was accepted");
		throw;
	};
	auto e = refused(apm);
	CHECK(e.errnum() == ENOTSUP);
	CHECK_THAT(e.message(), Catch::Contains("node2") && Catch::Contains("verbs") &&
	                            Catch::Contains("read-after-write") &&
	                            Catch::Contains("without --persist-apm"));
	e = refused(commit);
	CHECK(e.errnum() == ENOTSUP);
	CHECK_THAT(e.message(),
	           Catch::Contains("FI_RMA_PMEM") && Catch::Contains("without --persist-commit"));
	e = refused(static_cast<ctl::persist_method>(9));
	CHECK(e.errnum() == EPROTO);
	CHECK(rpmem::client::make_persist_method(gpspm, res, g, "node2")->kind() == gpspm);
	g.msg_order |= FI_ORDER_RAW;
	g.rma_pmem = true;
	CHECK(rpmem::client::make_persist_method(apm, res, g, "node2")->kind() == apm);
	CHECK(rpmem::client::make_persist_method(commit, res, g, "node2")->kind() == commit);
}

TEST_CASE("a fabric connection without the session secret is refused", "[data][security]")
{
	remote_setup fx(8 << 20);
	unsigned nlanes = 2;
	auto pool = fx.create(nlanes);
	const auto &f = pool->fabric();
	raw_connection raw(f);
	std::vector<std::uint8_t> wrong(36, 0);
	wrong[0] = static_cast<std::uint8_t>(f.secret[0] ^ 1);
	auto ev = raw.connect(wrong);
	REQUIRE(ev);
	CHECK(ev->is_error());
	CHECK(ev->type != FI_CONNECTED);
	// The honest client is undisturbed.
	std::memset(fx.local.data() + 4096, 0x77, 4096);
	pool->persist(4096, 4096, 0, 0);
	pool->close();
	// Refused before rpmemd sees it: its listener closed once the client's connections were
	// up (a wrong secret that reaches it is refused and logged: attack_test.cpp).
	CHECK(fx.node.log_text().find("the listener closed") != std::string::npos);
}

namespace
{

/** Descriptors process `pid` ("self": this one) has open, or only those whose /proc link
 *  starts with `kind` (e.g. "socket:"). */
std::size_t count_fds(const std::string &pid, std::string_view kind = {})
{
	std::size_t n = 0;
	for (const auto &e : std::filesystem::directory_iterator("/proc/" + pid + "/fd")) {
		std::error_code ec;
		auto link = std::filesystem::read_symlink(e.path(), ec).string();
		if (link.starts_with(kind))
			++n;
	}
	return n;
}

} // namespace

TEST_CASE("1024 lanes keep rpmemd's threads and connections few", "[data][lanes]")
{
	// sockets starts progress threads of its own: rpmemd counts them against its budget.
	const std::string provider = GENERATE(as<std::string>{}, "tcp", "sockets");
	INFO("provider " << provider);
	sshd server;
	replica node(server, {.provider = provider});
	local_pool local(8 << 20);
	unsigned nlanes = 0;
	auto pool = create_pool(node, local, "8M", 1024, &nlanes);
	CHECK(nlanes == 1024);
	// Use every lane from several threads at once.
	std::vector<std::thread> ts;
	for (unsigned t = 0; t < 8; ++t)
		ts.emplace_back([&, t] {
			for (unsigned l = t; l < nlanes; l += 8) {
				std::size_t off = 4096 + std::size_t(l) * 64;
				std::memset(local.data() + off, static_cast<int>(l), 64);
				pool->persist(off, 64, l, 0);
			}
		});
	for (auto &t : ts)
		t.join();
	pid_t pid = find_rpmemd(node.dir().string());
	REQUIRE(pid > 0);
	std::size_t threads = 0;
	std::string names;
	for (const auto &e :
	     std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid))) {
		++threads;
		auto comm = slurp(e.path() / "comm");
		names += comm.substr(0, comm.find('\n')) + " ";
	}
	unsigned cores = std::thread::hardware_concurrency();
	INFO("rpmemd threads: " << threads << " (" << names
	                        << "), sockets: " << count_fds(std::to_string(pid), "socket:"));
	// A sanitizer runtime adds a background thread of its own to every process.
	const bool sanitized = std::getenv("RPMEM_TEST_DAEMON_ENV") != nullptr;
	CHECK(threads <= 2 * cores + 4 + (sanitized ? 1 : 0));
	CHECK(pool->fabric().nendpoints <= 16);
	// With tcp one fabric connection is one TCP socket; sockets opens several per endpoint
	// (connection manager, listener, data), so there only the endpoint count above applies.
	if (provider == "tcp")
		CHECK(count_fds(std::to_string(pid), "socket:") <=
		      16 + 4); // connections + listener + stdio
	pool->close();
	auto file = slurp(node.part("pool.set"));
	for (unsigned l = 0; l < 1024; ++l)
		CHECK(file[4096 + l * 64] == static_cast<char>(l));
}

TEST_CASE("a newer write over older inline bytes of the same batch wins", "[data]")
{
	// Regression (found by the soak): a small relaxed flush travels inline in the lane's batch
	// and is applied when the batch arrives; a later large flush over it is written by RDMA
	// before that. The newer bytes must be what the replica keeps.
	sshd server;
	replica node(server,
	             {.inline_max = 4096}); // the 6-byte ranges inline, whatever is measured
	local_pool local(8 << 20);
	auto pool = create_pool(node, local, "8M", 1);
	REQUIRE(pool->lanes().travels_inline(6));
	constexpr std::size_t x = 100000, big = 300000;
	std::memset(local.data() + x, 0xaa, 6);
	pool->flush(x, 6, 0, rpmem::client::flush_relaxed); // inline, in the batch
	std::memset(local.data() + x - 5000, 0xbb, big);
	pool->flush(x - 5000, big, 0, rpmem::client::flush_relaxed); // RDMA, covers x
	pool->drain(0, 0);
	std::memset(local.data() + 2 * big, 0xcc, 6);
	pool->flush(2 * big, 6, 0, rpmem::client::flush_relaxed);
	std::memset(local.data() + 2 * big, 0xdd, big);
	pool->deep_persist(2 * big, big, 0);
	pool->drain(0, 0);
	pool->close();
	auto file = slurp(node.part("pool.set"));
	CHECK(file.substr(x, 6) == std::string(6, '\xbb'));
	CHECK(file.substr(2 * big, 6) == std::string(6, '\xdd'));
}

TEST_CASE("rounds sent ahead land in order, and a write or a read waits for the round in "
          "flight",
          "[data][ahead]")
{
	// Asynchronous replication streams rounds on lane 0 with drain_ahead: a round goes out
	// while the next is built. Each round leaves its number in a slot of its own and in one
	// shared word (inline); every 8th round instead RDMA-writes 64 KiB over the word, which
	// must not land before the round in flight is applied (that round's older number would
	// end on top of it); every 16th ends with a read, which must see every round before it.
	auto [provider, method] = GENERATE(table<std::string, ctl::persist_method>(
	    {{"tcp", gpspm}, {"tcp", apm}, {"tcp", commit}, {"sockets", gpspm}, {"sockets", apm}}));
	INFO(provider << ", " << ctl::to_string(method));
	sshd server;
	replica node(server, {.parent = "/dev/shm",
	                      .apm = method == apm,
	                      .fake_eadr = method == apm,
	                      .commit = method == commit,
	                      .provider = provider,
	                      .inline_max = 4096});
	local_pool local(8 << 20);
	auto pool = create_pool(node, local, "8M", 1);
	REQUIRE(pool->method() == method);
	constexpr std::size_t word = 1 << 20, slots = 4 << 20, big = 64 << 10;
	constexpr std::uint64_t rounds = 400, written = 1u << 30;
	REQUIRE(pool->lanes().travels_inline(8));
	REQUIRE_FALSE(pool->lanes().travels_inline(big));
	REQUIRE(pool->lanes().sends_ahead(0));
	REQUIRE_FALSE(pool->lanes().sends_ahead(1));
	// The sender's copies: a word and a slot per round, then the large write's bytes.
	// Registered: whole pages of its own (a std::vector shares its pages with the heap).
	rpmem::fabric::page_buffer pages((2 * rounds + big / 8) * 8);
	std::span<std::uint64_t> source(pages.as<std::uint64_t>(), pages.size() / 8);
	pool->register_source(source.data(), pages.size());
	std::uint64_t *large = &source[2 * rounds];
	auto expect = [](std::uint64_t r) { return r % 8 == 0 ? written + r : r; };
	for (std::uint64_t r = 1; r <= rounds; ++r) {
		source[2 * r - 1] = r;
		if (r % 8 == 0) {
			std::fill(large, large + big / 8, written + r);
			pool->flush_from(large, word - big / 2, big, 0);
		} else {
			source[2 * r - 2] = r;
			pool->flush_from(&source[2 * r - 2], word, 8, 0);
		}
		pool->flush_from(&source[2 * r - 1], slots + 8 * r, 8, 0);
		pool->drain_ahead(0);
		if (r % 16 == 0) {
			std::uint64_t seen[2] = {0, 0};
			pool->read(&seen[0], word, 8, 0);
			pool->read(&seen[1], slots + 8 * r, 8, 0);
			REQUIRE(seen[0] == expect(r));
			REQUIRE(seen[1] == r);
		}
	}
	pool->complete(0);
	CHECK(pool->stats(0).drains >= rounds);
	pool->close();
	auto file = slurp(node.part("pool.set"));
	std::uint64_t last = 0;
	std::memcpy(&last, file.data() + word, 8);
	CHECK(last == expect(rounds));
	for (std::uint64_t r = 1; r <= rounds; ++r) {
		std::uint64_t v = 0;
		std::memcpy(&v, file.data() + slots + 8 * r, 8);
		REQUIRE(v == r);
	}
}

namespace
{

/** Opens pipes on a thread until stopped, keeping the last 64 pipes, and checks every pipe it
 *  owns is still the one it opened (same inode) before it closes it: a library that closes
 *  a descriptor number twice takes away one of these. */
class fd_squatter
{
public:
	fd_squatter()
	    : thread_([this] {
		      while (!stop_.load()) {
			      int p[2];
			      if (pipe2(p, O_CLOEXEC) != 0)
				      continue;
			      for (int fd : p)
				      owned_.push_back({fd, inode(fd)});
			      while (owned_.size() > 128)
				      release(owned_.front()), owned_.pop_front();
			      ++opened_;
		      }
	      })
	{
	}
	~fd_squatter()
	{
		if (thread_.joinable())
			finish();
	}
	fd_squatter(const fd_squatter &) = delete;
	fd_squatter &operator=(const fd_squatter &) = delete;

	/** Stops, checks and closes what it still owns; the number of pipes taken from it. */
	unsigned finish()
	{
		stop_ = true;
		thread_.join();
		while (!owned_.empty())
			release(owned_.front()), owned_.pop_front();
		return stolen_;
	}
	unsigned opened() const { return opened_; }

private:
	struct fd_id {
		int fd;
		ino_t ino;
	};
	static ino_t inode(int fd)
	{
		struct stat st {
		};
		return fstat(fd, &st) == 0 ? st.st_ino : 0;
	}
	void release(const fd_id &f)
	{
		if (inode(f.fd) != f.ino)
			++stolen_; // closed behind our back (and maybe reused)
		else
			::close(f.fd);
	}
	std::atomic<bool> stop_{false};
	std::deque<fd_id> owned_;
	unsigned stolen_ = 0;
	std::atomic<unsigned> opened_{0};
	std::thread thread_;
};

} // namespace

TEST_CASE("closing a pool closes each of its descriptors once, and all of them", "[data][fds]")
{
	// libfabric 1.17's sockets provider closes a connection's socket in fi_shutdown and again
	// in its connection-manager thread; a descriptor another thread opened in between was
	// closed with it (see fabric::endpoint::shutdown).
	const std::string provider = GENERATE(as<std::string>{}, "tcp", "sockets");
	INFO("provider " << provider);
	sshd server;
	replica node(server, {.provider = provider});
	node.write_poolset("pool.set", {"8M"});
	local_pool local(8 << 20);
	auto attr = sample_attr();
	std::size_t before = 0; // after the first round: libraries open some once per process
	unsigned stolen = 0, opened = 0;
	for (int round = 0; round < 3; ++round) {
		if (round == 1)
			before = count_fds("self");
		unsigned nlanes = 8;
		auto pool = remote_pool::create(node.target(), "pool.set", local.data(),
		                                local.size(), &nlanes, &attr, node.options());
		std::memset(local.data() + 4096, round, 4096);
		pool->persist(4096, 4096, 0, 0);
		fd_squatter squatter;
		pool->close();
		pool.reset();
		stolen += squatter.finish();
		opened += squatter.opened();
		if (round < 2)
			remote_pool::remove(node.target(), "pool.set", 0, node.options());
	}
	INFO(opened << " pipes opened while pools closed");
	CHECK(opened > 0);
	CHECK(stolen == 0);
	CHECK(count_fds("self") == before);
}
