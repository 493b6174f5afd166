// SPDX-License-Identifier: BSD-3-Clause
// rpmemd's control loop (daemon/session.cpp) on a socketpair, against a real pool store in a
// temporary directory and a fake fabric target (the one part that needs libfabric; the
// integration tests run the real one). The client side speaks the real control codec.
#include "log.hpp"
#include "pool_store.hpp"
#include "session.hpp"

#include "checksum/block_sums.hpp"
#include "control/codec.hpp"
#include "control/fd_stream.hpp"
#include "control/session_record.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <future>
#include <sys/socket.h>
#include <unistd.h>

namespace fs = std::filesystem;
namespace ctl = rpmem::control;
using namespace std::chrono_literals;

namespace
{

constexpr std::uint64_t MiB = 1u << 20;
constexpr auto reply_timeout = 30s; // a bound for a broken session, not a measurement

/** What the fake target saw and what it reports; shared with the test. */
struct fake_state {
	std::optional<rpmemd::target_params> params;
	std::uint64_t region_size = 0;
	std::atomic<bool> connected{true};
	std::atomic<bool> failed{false};
	std::atomic<bool> stopped{false};
	std::atomic<bool> busy{false}; // a lane request "just arrived" at every look
	int throw_errno = 0;           // the factory fails with this errno instead of starting
	rpmemd::served_counts served{};
};

class fake_target final : public rpmemd::target
{
public:
	explicit fake_target(fake_state &s) : s_(s)
	{
		params_.provider = "fake";
		params_.address = s.params->address;
		params_.port = 4242;
		params_.nlanes = s.params->nlanes;
		params_.nendpoints = 1;
		params_.queue_depth = 8;
	}
	const ctl::fabric_params &params() const override { return params_; }
	bool connected() const override { return s_.connected; }
	bool failed() const override { return s_.failed; }
	std::int64_t last_activity() const override
	{
		if (!s_.busy)
			return 0;
		return std::chrono::duration_cast<std::chrono::nanoseconds>(
		           std::chrono::steady_clock::now().time_since_epoch())
		    .count();
	}
	rpmemd::served_counts served() const override { return s_.served; }
	void stop() override { s_.stopped = true; }

private:
	fake_state &s_;
	ctl::fabric_params params_;
};

/** A pool store in a temporary directory, one pool set (sets/p.set, one 8 MiB part), and a
 *  session running on one end of a socketpair in a thread of its own. */
struct session_fixture {
	fs::path root;
	fake_state fake;
	rpmemd::config cfg;
	std::unique_ptr<rpmemd::pool_store> store;
	int fds[2] = {-1, -1};
	std::unique_ptr<ctl::fd_stream> daemon_end;
	std::unique_ptr<ctl::fd_stream> client;
	rpmemd::target_factory factory;
	std::future<int> exit_code;

	session_fixture()
	{
		std::string tmpl = (fs::temp_directory_path() / "rpmemd-session-XXXXXX").string();
		REQUIRE(mkdtemp(tmpl.data()) != nullptr);
		root = tmpl;
		fs::create_directories(root / "sets");
		std::ofstream(root / "sets" / "p.set")
		    << "PMEMPOOLSET\n8M " << part().string() << "\n";
		store = std::make_unique<rpmemd::pool_store>((root / "sets").string());
		new_connection();
		factory =
		    [this](const rpmemd::target_params &p) -> std::unique_ptr<rpmemd::target> {
			fake.params = p;
			fake.region_size = p.region->size();
			if (fake.throw_errno)
				throw rpmem::error(fake.throw_errno,
				                   "no provider of the list can listen");
			return std::make_unique<fake_target>(fake);
		};
	}
	~session_fixture()
	{
		hang_up();
		if (exit_code.valid())
			exit_code.wait();
		if (fds[0] >= 0)
			::close(fds[0]);
		fs::remove_all(root);
	}

	fs::path part() const { return root / "parts.p0"; }

	/** A fresh socketpair for the next session (the previous one has ended). */
	void new_connection()
	{
		hang_up();
		if (fds[0] >= 0)
			::close(fds[0]);
		REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
		daemon_end = std::make_unique<ctl::fd_stream>(fds[0], fds[0], "daemon end");
		client = std::make_unique<ctl::fd_stream>(fds[1], fds[1], "client end");
	}

	void start()
	{
		exit_code = std::async(std::launch::async, [this] {
			return rpmemd::run_session(cfg, *store, *daemon_end, "test client",
			                           "127.0.0.1", factory);
		});
	}
	/** The client goes away: the session sees EOF. */
	void hang_up()
	{
		if (fds[1] >= 0) {
			::close(fds[1]);
			fds[1] = -1;
		}
	}
	int wait_exit()
	{
		REQUIRE(exit_code.wait_for(reply_timeout) == std::future_status::ready);
		return exit_code.get();
	}

	static ctl::pool_request request(std::uint32_t nlanes = 4)
	{
		ctl::pool_request r;
		r.pool_size = 4 * MiB;
		r.nlanes = nlanes;
		r.provider = "tcp";
		r.descriptor = "p.set";
		return r;
	}
	static ctl::pool_attr attr()
	{
		ctl::pool_attr a;
		std::memcpy(a.signature.data(), "SESSION", 8);
		a.major = 3;
		a.poolset_uuid[0] = 0x42;
		a.uuid[0] = 0x17;
		return a;
	}
	ctl::pool_response create(std::uint16_t minor = ctl::proto_minor)
	{
		auto r = request();
		r.minor = minor;
		r.attr = attr();
		ctl::send(*client, ctl::encode(r, ctl::msg_type::create));
		return ctl::decode<ctl::pool_response>(ctl::receive(*client, reply_timeout));
	}
	ctl::pool_response open(std::uint16_t minor = ctl::proto_minor)
	{
		auto r = request();
		r.minor = minor;
		ctl::send(*client, ctl::encode(r, ctl::msg_type::open));
		return ctl::decode<ctl::pool_response>(ctl::receive(*client, reply_timeout));
	}
	/** What a client of 1.3 sends when its create returns (no answer). */
	void create_done() { ctl::send(*client, ctl::encode(ctl::create_done{})); }
	ctl::status_response close(std::uint32_t flags = 0)
	{
		ctl::send(*client, ctl::encode(ctl::close_request{flags}));
		return ctl::decode<ctl::status_response>(ctl::receive(*client, reply_timeout));
	}
	/** The pool can be opened again: the session closed it and released its lock. */
	bool reopens() const
	{
		try {
			auto p = store->open("p.set", 4 * MiB);
			return p != nullptr;
		} catch (const std::exception &) {
			return false;
		}
	}
};

/** rpmemd's log while it lives: stderr into a file, at level info (restored after). */
struct captured_log {
	fs::path file = fs::temp_directory_path() / fmt::format("rpmemd-log-{}", ::getpid());
	int saved = ::dup(2);
	captured_log()
	{
		int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		REQUIRE(fd >= 0);
		::dup2(fd, 2);
		::close(fd);
		rpmemd::logger::instance().init_stderr(rpmemd::log_level::info);
	}
	~captured_log()
	{
		rpmemd::logger::instance().init_stderr();
		::dup2(saved, 2);
		::close(saved);
		fs::remove(file);
	}
	std::string text() const
	{
		std::ifstream in(file);
		return std::string(std::istreambuf_iterator<char>(in), {});
	}
};

} // namespace

TEST_CASE("session: create hands the fabric target the pool and the client's request", "[session]")
{
	session_fixture f;
	f.cfg.nthreads = 3;
	f.start();
	auto resp = f.create();
	REQUIRE(resp.st == ctl::status::success);
	CHECK(resp.fabric.provider == "fake");
	CHECK(resp.fabric.nlanes == 4);
	CHECK(resp.fabric.port == 4242);
	CHECK(resp.pool_size >= 4 * MiB);
	REQUIRE(f.fake.params);
	CHECK(f.fake.params->address == "127.0.0.1");
	CHECK(f.fake.params->providers == "tcp");
	CHECK(f.fake.params->nlanes == 4);
	CHECK(f.fake.params->nthreads == 3);
	CHECK(f.fake.region_size == 4 * MiB);
	// /tmp is not persistent memory: neither NIC-write method may be offered, on any provider.
	CHECK_FALSE(f.fake.params->methods.pmem);
	CHECK_FALSE(f.fake.params->methods.commit);
	for (auto provider : {"tcp", "sockets", "verbs"})
		CHECK(rpmemd::choose_method(f.fake.params->methods, provider, true).method ==
		      ctl::persist_method::gpspm);
	CHECK_FALSE(f.reopens()); // the session holds the pool

	auto closed = f.close();
	CHECK(closed.st == ctl::status::success);
	CHECK(f.wait_exit() == rpmemd::exit_ok);
	CHECK(f.fake.stopped);
	CHECK(fs::exists(f.part()));
	CHECK(f.reopens());
}

TEST_CASE("session: the target is told what decides APM: persist-apm, the pool, the operator's "
          "word",
          "[session]")
{
	session_fixture f;
	f.cfg.persist_apm = true;
	f.cfg.persist_commit = true;
	f.cfg.nic_writes_durable = true;
	f.start();
	REQUIRE(f.create().st == ctl::status::success);
	REQUIRE(f.fake.params);
	const auto &m = f.fake.params->methods;
	CHECK(m.apm);
	CHECK(m.nic_writes_durable);
	CHECK_FALSE(m.pmem);
	CHECK_FALSE(m.commit); // commit needs the pool on pmem
	// Asked for, but the pool in /tmp is not persistent memory: GPSPM, and the log says why.
	auto c = rpmemd::choose_method(m, "verbs", true);
	CHECK(c.method == ctl::persist_method::gpspm);
	CHECK_THAT(c.apm_refused, Catch::Contains("not on persistent memory"));
	CHECK(f.close().st == ctl::status::success);
	CHECK(f.wait_exit() == rpmemd::exit_ok);
}

TEST_CASE("session: open returns the attributes create stored", "[session]")
{
	session_fixture f;
	f.start();
	REQUIRE(f.create().st == ctl::status::success);
	REQUIRE(f.close().st == ctl::status::success);
	REQUIRE(f.wait_exit() == rpmemd::exit_ok);

	f.new_connection(); // the next session, as the next ssh command would start it
	f.start();
	auto resp = f.open();
	REQUIRE(resp.st == ctl::status::success);
	CHECK(resp.attr.signature == session_fixture::attr().signature);
	CHECK(resp.attr.major == 3);
	CHECK(resp.attr.poolset_uuid == session_fixture::attr().poolset_uuid);
	CHECK(f.close().st == ctl::status::success);
	CHECK(f.wait_exit() == rpmemd::exit_ok);
}

TEST_CASE("session: a damaged pool is refused as damaged to a client of 1.4, as pool_cfg before",
          "[session]")
{
	// The status lets a client tell a replica that answers but must be re-created from one it
	// cannot reach; a client older than 1.4 does not know it (its decoder refuses unknown
	// statuses) and gets what rpmemd sent before.
	session_fixture f;
	f.start();
	REQUIRE(f.create().st == ctl::status::success);
	REQUIRE(f.close().st == ctl::status::success);
	REQUIRE(f.wait_exit() == rpmemd::exit_ok);
	{
		std::fstream part(f.part(), std::ios::in | std::ios::out | std::ios::binary);
		part.seekp(200);
		part.put('x'); // inside the checksummed part of the header
	}
	for (std::uint16_t minor :
	     {ctl::proto_minor, std::uint16_t(ctl::damaged_since_minor - 1)}) {
		INFO("a client of 1." << minor);
		f.new_connection();
		f.start();
		auto resp = f.open(minor);
		CHECK(resp.st == (minor >= ctl::damaged_since_minor ? ctl::status::damaged
		                                                    : ctl::status::pool_cfg));
		CHECK(resp.err == EINVAL);
		CHECK_THAT(resp.message, Catch::Contains(f.part().string()) &&
		                             Catch::Contains("invalid pool header checksum"));
		CHECK(f.wait_exit() == rpmemd::exit_ok);
	}
}

TEST_CASE("session: a second create in one session is refused, the first pool undisturbed",
          "[session]")
{
	session_fixture f;
	f.start();
	REQUIRE(f.create().st == ctl::status::success);
	auto again = f.create();
	CHECK(again.st == ctl::status::fatal);
	CHECK(again.err == EALREADY);
	CHECK_THAT(again.message, Catch::Contains("p.set") && Catch::Contains("close it first"));
	CHECK(f.close().st == ctl::status::success);
	CHECK(f.wait_exit() == rpmemd::exit_ok);
	CHECK(fs::exists(f.part()));
}

TEST_CASE("session: a target that cannot listen is provnosup, and the new pool is removed",
          "[session]")
{
	session_fixture f;
	f.fake.throw_errno = ENOMEDIUM;
	f.start();
	auto resp = f.create();
	CHECK(resp.st == ctl::status::provnosup);
	CHECK(resp.err == ENOMEDIUM);
	CHECK_THAT(resp.message, Catch::Contains("no provider"));
	CHECK(f.wait_exit() == rpmemd::exit_ok);
	CHECK_FALSE(fs::exists(f.part()));
}

TEST_CASE("session: a client that goes before its fabric connects leaves no pool behind",
          "[session]")
{
	session_fixture f;
	f.fake.connected = false;
	f.start();
	REQUIRE(f.create().st == ctl::status::success);
	REQUIRE(fs::exists(f.part()));
	f.hang_up();
	CHECK(f.wait_exit() == rpmemd::exit_peer_gone);
	CHECK(f.fake.stopped);
	CHECK_FALSE(fs::exists(f.part()));
}

TEST_CASE("session: a create whose answer finds the client gone names the pool it removes",
          "[session]")
{
	// The client asks and goes: the answer cannot be sent (EPIPE), the creation never
	// completed, and the log says which pool it was (it once said "pool  did not complete").
	session_fixture f;
	captured_log log;
	f.start();
	auto r = f.request();
	r.attr = f.attr();
	ctl::send(*f.client, ctl::encode(r, ctl::msg_type::create));
	f.hang_up();
	CHECK(f.wait_exit() == rpmemd::exit_peer_gone);
	const auto text = log.text();
	INFO(text);
	CHECK_THAT(text, Catch::Contains("the creation of pool p.set did not complete"));
	CHECK_THAT(text, Catch::Contains("session end: pool p.set,"));
	CHECK_FALSE(fs::exists(f.part()));
}

TEST_CASE("session: the records of sessions that are gone are removed when a pool opens",
          "[session]")
{
	// A killed rpmemd cannot remove its status record; the next session does, so `rpmem
	// status` does not list it as gone forever (or until --prune).
	session_fixture f;
	const auto dir = f.root / "sessions";
	fs::create_directory(dir);
	fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
	f.cfg.status_dir = dir.string();
	ctl::session_record killed;
	killed.pid = 0x3ffffff0; // above pid_max: no such process
	killed.process_start = 42;
	killed.descriptor = "old.set";
	const auto stale = dir / "1073741808.session";
	std::ofstream(stale) << ctl::encode(killed);
	REQUIRE(ctl::list_sessions(dir.string()).size() == 1);
	f.start();
	REQUIRE(f.create().st == ctl::status::success);
	CHECK(!fs::exists(stale));
	auto listed = ctl::list_sessions(dir.string());
	REQUIRE(listed.size() == 1);
	CHECK(listed[0].record.pid == ::getpid());
	CHECK(listed[0].alive);
	f.close();
	CHECK(f.wait_exit() == rpmemd::exit_ok);
}

TEST_CASE("session: a silent client, or a broken fabric, ends the session and frees the pool",
          "[session]")
{
	session_fixture f;
	f.cfg.heartbeat_timeout = 200ms;
	SECTION("silent: no control message, no lane request") {}
	SECTION("lane requests keep coming, but the fabric broke")
	{
		f.fake.busy = true;
		f.fake.failed = true;
	}
	f.start();
	REQUIRE(f.create().st == ctl::status::success);
	f.create_done();
	CHECK(f.wait_exit() == rpmemd::exit_peer_gone);
	CHECK(f.fake.stopped);
	CHECK(fs::exists(f.part())); // its create returned: a real pool, kept
	CHECK(f.reopens());
}

TEST_CASE("session: a created pool outlives its client exactly when create_done came first",
          "[session]")
{
	// Protocol 1.3: the client's word, not what the fabric saw, decides.
	session_fixture f;
	bool done = false;
	SECTION("every connection up, requests served, no create_done: removed")
	{
		f.fake.served.requests = 7;
	}
	SECTION("no connection seen, no request, create_done: kept")
	{
		f.fake.connected = false;
		done = true;
	}
	SECTION("every connection up, create_done: kept")
	{
		done = true;
	}
	f.start();
	REQUIRE(f.create().st == ctl::status::success);
	if (done)
		f.create_done();
	f.hang_up();
	CHECK(f.wait_exit() == rpmemd::exit_peer_gone);
	CHECK(fs::exists(f.part()) == done);
}

TEST_CASE("session: a client older than 1.3 is judged by its fabric", "[session]")
{
	session_fixture f;
	bool kept = true;
	SECTION("every connection seen: kept") {}
	SECTION("a connection not seen, but a request served: kept")
	{
		f.fake.connected = false;
		f.fake.served.requests = 1;
	}
	SECTION("a connection not seen, no request: removed")
	{
		f.fake.connected = false;
		kept = false;
	}
	f.start();
	REQUIRE(f.create(ctl::create_done_since_minor - 1).st == ctl::status::success);
	f.hang_up();
	CHECK(f.wait_exit() == rpmemd::exit_peer_gone);
	CHECK(fs::exists(f.part()) == kept);
}

TEST_CASE("session: create_done where no pool was created ends the session, the pool kept",
          "[session]")
{
	session_fixture f;
	REQUIRE(fs::exists(f.part()) == false);
	f.start();
	REQUIRE(f.create().st == ctl::status::success);
	f.create_done();
	REQUIRE(f.close().st == ctl::status::success);
	REQUIRE(f.wait_exit() == rpmemd::exit_ok);

	f.new_connection();
	f.start();
	REQUIRE(f.open().st == ctl::status::success);
	f.create_done(); // after an open: the client is broken
	CHECK(f.wait_exit() == rpmemd::exit_protocol);
	CHECK(fs::exists(f.part()));
	CHECK(f.reopens());
}

TEST_CASE("session: lane requests are signs of life while the control channel is silent",
          "[session]")
{
	session_fixture f;
	f.cfg.heartbeat_timeout = 100ms;
	f.fake.busy = true;
	f.start();
	REQUIRE(f.create().st == ctl::status::success);
	// Ten heartbeat timeouts of control silence: a slower machine only makes this easier.
	CHECK(f.exit_code.wait_for(1s) == std::future_status::timeout);
	CHECK_FALSE(f.fake.stopped);
	f.hang_up();
	CHECK(f.wait_exit() == rpmemd::exit_peer_gone);
}

TEST_CASE("session: ping is answered with its cookie, a malformed request gets badproto",
          "[session]")
{
	session_fixture f;
	f.start();
	ctl::send(*f.client, ctl::encode(ctl::ping{0x1234abcd}));
	auto pong = ctl::decode<ctl::pong>(ctl::receive(*f.client, reply_timeout));
	CHECK(pong.cookie == 0x1234abcd);

	// A valid frame whose body names a descriptor with a NUL byte in it.
	auto r = session_fixture::request();
	r.descriptor = "pXset";
	auto frame = ctl::encode(r, ctl::msg_type::open);
	auto at = std::search(frame.begin(), frame.end(), r.descriptor.begin(), r.descriptor.end());
	REQUIRE(at != frame.end());
	at[1] = 0;
	ctl::send(*f.client, frame);
	auto resp = ctl::decode<ctl::pool_response>(ctl::receive(*f.client, reply_timeout));
	CHECK(resp.st == ctl::status::badproto);
	CHECK(resp.err == EPROTO);
	CHECK_THAT(resp.message, Catch::Contains("NUL"));
	CHECK(f.wait_exit() == rpmemd::exit_protocol);
	CHECK_FALSE(f.fake.params); // nothing was opened
}

namespace
{

/** The checksum answer to `req`: every response, in order, until the last or a failure. */
std::vector<ctl::checksum_response> ask_checksums(session_fixture &f,
                                                  const ctl::checksum_request &req)
{
	ctl::send(*f.client, ctl::encode(req));
	std::vector<ctl::checksum_response> out;
	do
		out.push_back(
		    ctl::decode<ctl::checksum_response>(ctl::receive(*f.client, reply_timeout)));
	while (!out.back().last);
	return out;
}

/** A session on big.set (one 12 MiB part), its pool created with pool_size 12 MiB. */
void create_big(session_fixture &f)
{
	std::ofstream(f.root / "sets" / "big.set")
	    << "PMEMPOOLSET\n12M " << (f.root / "big.p0").string() << "\n";
	f.start();
	auto r = session_fixture::request();
	r.descriptor = "big.set";
	r.pool_size = 12 * MiB;
	ctl::send(*f.client, ctl::encode(r, ctl::msg_type::open));
	REQUIRE(ctl::decode<ctl::pool_response>(ctl::receive(*f.client, reply_timeout)).st ==
	        ctl::status::noexist);
	f.new_connection();
	f.start();
	r.attr = session_fixture::attr();
	ctl::send(*f.client, ctl::encode(r, ctl::msg_type::create));
	REQUIRE(ctl::decode<ctl::pool_response>(ctl::receive(*f.client, reply_timeout)).st ==
	        ctl::status::success);
}

} // namespace

TEST_CASE("session: checksums are the pool's blocks, in bounded messages, the last block short",
          "[session][checksum]")
{
	session_fixture f;
	create_big(f);
	REQUIRE(f.fake.params);
	std::uint8_t *pool = f.fake.params->region->base();
	for (std::uint64_t i = 0; i < 12 * MiB; i += 512)
		pool[i] = static_cast<std::uint8_t>(i / 512 * 7); // what RDMA writes would leave

	// 3070.98 blocks of 4 KiB from offset 4096: 2048 in the first message, then the rest
	// with a short last block.
	ctl::checksum_request req{4096, 12 * MiB - 4096 - 100, 4096,
	                          ctl::checksum_algorithm::xxh3_128};
	auto answer = ask_checksums(f, req);
	REQUIRE(answer.size() == 2);
	CHECK(answer[0].first_block == 0);
	CHECK_FALSE(answer[0].last);
	CHECK(answer[0].sums.size() == ctl::max_checksums_per_message);
	CHECK(answer[1].first_block == ctl::max_checksums_per_message);
	CHECK(answer[1].sums.size() == 3071 - ctl::max_checksums_per_message);
	std::vector<ctl::block_sum> want(3071);
	rpmem::checksum::blocks(pool + 4096, req.length, 4096, want);
	std::vector<ctl::block_sum> got = answer[0].sums;
	got.insert(got.end(), answer[1].sums.begin(), answer[1].sums.end());
	CHECK(got == want);
	// The short last block covers exactly the bytes asked for.
	CHECK(got.back() == rpmem::checksum::of(pool + 4096 + 3070 * 4096, 4096 - 100));

	// One changed byte changes one block's sum and no other.
	pool[4096 + 5 * 4096 + 17] ^= 0xff;
	auto again = ask_checksums(f, req);
	std::vector<ctl::block_sum> now = again[0].sums;
	now.insert(now.end(), again[1].sums.begin(), again[1].sums.end());
	for (std::size_t i = 0; i < now.size(); ++i) {
		INFO("block " << i);
		CHECK((now[i] == got[i]) == (i != 5));
	}

	// Large blocks: one message, bounded by bytes hashed rather than count.
	auto big = ask_checksums(f, {0, 12 * MiB, 4 * MiB, ctl::checksum_algorithm::xxh3_128});
	REQUIRE(big.size() == 1);
	CHECK(big[0].sums.size() == 3);
	CHECK(big[0].sums[2] == rpmem::checksum::of(pool + 8 * MiB, 4 * MiB));

	// Outside the registered region: refused, the session goes on.
	auto out =
	    ask_checksums(f, {8 * MiB, 4 * MiB + 1, 4096, ctl::checksum_algorithm::xxh3_128});
	REQUIRE(out.size() == 1);
	CHECK(out[0].st == ctl::status::badsize);
	CHECK_THAT(out[0].message,
	           Catch::Contains("outside the 12582912 bytes") && Catch::Contains("big.set"));
	CHECK(f.close().st == ctl::status::success);
	CHECK(f.wait_exit() == rpmemd::exit_ok);
}

TEST_CASE("session: checksum requests without a pool, turned off, or malformed",
          "[session][checksum]")
{
	const ctl::checksum_request req{0, MiB, 65536, ctl::checksum_algorithm::xxh3_128};
	SECTION("before create or open: refused, the session goes on")
	{
		session_fixture f;
		f.start();
		auto r = ask_checksums(f, req);
		REQUIRE(r.size() == 1);
		CHECK(r[0].st == ctl::status::fatal);
		CHECK_THAT(r[0].message, Catch::Contains("no pool is open"));
		REQUIRE(f.create().st == ctl::status::success);
		CHECK(ask_checksums(f, req).back().st == ctl::status::success);
		CHECK(f.close().st == ctl::status::success);
	}
	SECTION("block-checksums = no: unsupported, naming the setting")
	{
		session_fixture f;
		f.cfg.block_checksums = false;
		f.start();
		REQUIRE(f.create().st == ctl::status::success);
		auto r = ask_checksums(f, req);
		REQUIRE(r.size() == 1);
		CHECK(r[0].st == ctl::status::unsupported);
		CHECK(r[0].err == ENOTSUP);
		CHECK_THAT(r[0].message, Catch::Contains("block-checksums = no"));
		CHECK(f.close().st == ctl::status::success);
	}
	SECTION("a malformed body: badproto, and the session ends")
	{
		session_fixture f;
		f.start();
		REQUIRE(f.create().st == ctl::status::success);
		auto frame = ctl::encode(req);
		frame[ctl::header_size + 16] = 3; // block_size 65539
		ctl::send(*f.client, frame);
		auto r =
		    ctl::decode<ctl::checksum_response>(ctl::receive(*f.client, reply_timeout));
		CHECK(r.st == ctl::status::badproto);
		CHECK_THAT(r.message, Catch::Contains("block_size"));
		CHECK(f.wait_exit() == rpmemd::exit_protocol);
	}
}
