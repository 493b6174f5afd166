// SPDX-License-Identifier: BSD-3-Clause
// Pool lifecycle through the real sshd and the real rpmemd: create, attributes, close, reopen,
// set_attr, remove, and the ways it must fail.
#include "replica_fixture.hpp"

#include "rpmem/error.hpp"

#include <cerrno>

using rpmem::client::remote_pool;
using namespace rpmem::test;
namespace ctl = rpmem::control;

namespace
{

constexpr std::size_t pool_size = 8 << 20;

/** Same as a but for user_flags, which rpmemd fills with its arch flags when they are zero. */
void check_same_attr(const ctl::pool_attr &got, const ctl::pool_attr &want)
{
	auto a = got, b = want;
	a.user_flags = {};
	b.user_flags = {};
	CHECK(a == b);
}

int errno_of(const std::function<void()> &f)
{
	try {
		f();
	} catch (const rpmem::error &e) {
		UNSCOPED_INFO(e.what());
		return e.errnum();
	}
	return 0;
}

} // namespace

TEST_CASE("create, close, open, set_attr, open, remove", "[pool]")
{
	remote_setup fx(pool_size, {"16M"});

	unsigned nlanes = 4;
	auto pool = fx.create(nlanes);
	CHECK(nlanes >= 1);
	CHECK(nlanes <= 4);
	CHECK(pool->has_headers());
	CHECK(std::filesystem::exists(fx.node.part("pool.set")));
	auto mode = std::filesystem::status(fx.node.part("pool.set")).permissions();
	CHECK((mode & (std::filesystem::perms::group_all | std::filesystem::perms::others_all)) ==
	      std::filesystem::perms::none);
	pool->close();
	pool.reset();

	ctl::pool_attr got;
	nlanes = 4;
	pool = fx.open(nlanes, &got);
	check_same_attr(got, fx.attr);
	CHECK(!(got.user_flags == ctl::pool_attr{}.user_flags));

	auto attr2 = sample_attr(7);
	attr2.user_flags = got.user_flags;
	pool->set_attr(&attr2);
	pool->close();
	pool.reset();

	pool = fx.open(nlanes, &got);
	check_same_attr(got, attr2);
	pool->close();
	pool.reset();

	remote_pool::remove(fx.node.target(), "pool.set", 0, fx.node.options());
	CHECK(!std::filesystem::exists(fx.node.part("pool.set")));
	CHECK(std::filesystem::exists(fx.node.dir() / "pool.set"));
	CHECK(fx.node.log_text().find("session start") != std::string::npos);
}

TEST_CASE("remove with the pool set flag deletes the pool set file too", "[pool]")
{
	remote_setup fx(pool_size);
	unsigned nlanes = 1;
	fx.create(nlanes)->close();
	remote_pool::remove(fx.node.target(), "pool.set",
	                    rpmem::client::remove_force | rpmem::client::remove_pool_set,
	                    fx.node.options());
	CHECK(!std::filesystem::exists(fx.node.part("pool.set")));
	CHECK(!std::filesystem::exists(fx.node.dir() / "pool.set"));
	// Removing what is not there: an error without --force.
	CHECK(errno_of([&] {
		      remote_pool::remove(fx.node.target(), "pool.set", 0, fx.node.options());
	      }) != 0);
}

TEST_CASE("a second open of an open pool is EBUSY and the first is undisturbed", "[pool]")
{
	remote_setup fx(pool_size);
	local_pool other(pool_size);
	unsigned nlanes = 2;
	auto first = fx.create(nlanes);
	unsigned n2 = 2;
	CHECK(errno_of([&] {
		      remote_pool::open(fx.node.target(), "pool.set", other.data(), other.size(),
		                        &n2, nullptr, fx.node.options());
	      }) == EBUSY);
	std::memset(fx.local.data() + 8192, 0x5a, 4096);
	first->persist(8192, 4096, 0, 0);
	first->close();
}

TEST_CASE("creating an existing pool is EEXIST", "[pool]")
{
	remote_setup fx(pool_size);
	unsigned nlanes = 1;
	fx.create(nlanes)->close();
	CHECK(errno_of([&] { fx.create(nlanes); }) == EEXIST);
}

TEST_CASE("descriptors leaving the poolset directory are refused", "[pool][security]")
{
	sshd server;
	replica node(server);
	local_pool local(pool_size);
	auto attr = sample_attr();
	for (std::string desc : {"../x.set", "/etc/passwd", "a/../../x.set"}) {
		unsigned nlanes = 1;
		INFO(desc);
		CHECK(errno_of([&] {
			      remote_pool::create(node.target(), desc, local.data(), local.size(),
			                          &nlanes, &attr, node.options());
		      }) == EINVAL);
	}
	unsigned nlanes = 1;
	CHECK(errno_of([&] {
		      remote_pool::open(node.target(), "missing.set", local.data(), local.size(),
		                        &nlanes, nullptr, node.options());
	      }) == ENOENT);
}

TEST_CASE("a missing rpmemd is an error naming the host and RPMEM_CMD", "[pool]")
{
	sshd server;
	replica node(server);
	local_pool local(pool_size);
	auto opts = node.options();
	opts.command = "/nonexistent/rpmemd";
	unsigned nlanes = 1;
	try {
		remote_pool::create(node.target(), "pool.set", local.data(), local.size(), &nlanes,
		                    nullptr, opts);
		FAIL("create succeeded without rpmemd");
	} catch (const rpmem::error &e) {
		std::string msg = e.message();
		INFO(msg);
		CHECK(msg.find(server.address()) != std::string::npos);
		CHECK(msg.find("RPMEM_CMD") != std::string::npos);
		CHECK(msg.find("/nonexistent/rpmemd") != std::string::npos);
	}
}

TEST_CASE("host keys and client keys are checked through the pool API", "[pool][security]")
{
	remote_setup fx(pool_size);
	unsigned nlanes = 1;

	auto unknown = fx.node.options();
	unknown.ssh->known_hosts_file = fx.server.make_empty_known_hosts("empty_known_hosts");
	CHECK(errno_of([&] { fx.create(nlanes, unknown); }) == ENOKEY);

	auto changed = fx.node.options();
	changed.ssh->known_hosts_file = fx.server.make_wrong_known_hosts("wrong_known_hosts");
	CHECK(errno_of([&] { fx.create(nlanes, changed); }) == EKEYREJECTED);

	auto wrong_key = fx.node.options();
	wrong_key.ssh->identity_files = {fx.server.make_key("stranger")};
	CHECK(errno_of([&] { fx.create(nlanes, wrong_key); }) == EACCES);
	CHECK(!std::filesystem::exists(fx.node.part("pool.set")));
}

TEST_CASE("an rpmemd of protocol 1.2 is sent no create_done: create, persist and close work",
          "[pool][compat]")
{
	// tests/support/old_rpmemd.py passes the real rpmemd's control channel through, announces
	// 1.2 in its hello and ends the session on a message type 1.2 did not know, as such an
	// rpmemd would: a create_done sent to it fails the close.
	remote_setup fx(pool_size);
	auto opts = fx.node.options();
	opts.command = "python3 " RPMEM_SOURCE_DIR "/tests/support/old_rpmemd.py " +
	               std::to_string(rpmem::control::create_done_since_minor - 1) + " " +
	               opts.command;
	unsigned nlanes = 1;
	auto pool = fx.create(nlanes, opts);
	std::memset(fx.local.data() + 4096, 0x5a, 4096);
	pool->persist(4096, 4096, 0, 0);
	pool->close();
	INFO("rpmemd's log:\n" << fx.node.log_text());
	CHECK(fx.node.log_text().find("create of pool pool.set returned") == std::string::npos);
	CHECK(slurp(fx.node.part("pool.set")).substr(4096, 4096) == std::string(4096, '\x5a'));
}

TEST_CASE("a Host alias from an ssh config file works", "[pool]")
{
	remote_setup fx(pool_size);
	auto opts = fx.node.options();
	opts.ssh->identity_files.clear();
	unsigned nlanes = 1;
	auto pool = remote_pool::create(fx.server.alias(), "pool.set", fx.local.data(),
	                                fx.local.size(), &nlanes, &fx.attr, opts);
	std::memset(fx.local.data() + 4096, 0xab, 4096);
	pool->persist(4096, 4096, 0, 0);
	pool->close();
	auto part = slurp(fx.node.part("pool.set"));
	CHECK(part.substr(4096, 4096) == std::string(4096, '\xab'));
}

TEST_CASE("bad arguments are EINVAL and do not poison the handle", "[pool]")
{
	remote_setup fx(pool_size);
	unsigned nlanes = 2;
	CHECK(errno_of([&] {
		      remote_pool::create(fx.node.target(), "pool.set", fx.local.data(),
		                          fx.local.size(), nullptr, &fx.attr, fx.node.options());
	      }) == EINVAL);
	CHECK(errno_of([&] {
		      remote_pool::create(fx.node.target(), "pool.set", fx.local.data() + 1,
		                          fx.local.size(), &nlanes, &fx.attr, fx.node.options());
	      }) == EINVAL);
	auto pool = fx.create(nlanes);
	CHECK(errno_of([&] { pool->persist(0, 64, 0, 0); }) == EINVAL); // header
	CHECK(errno_of([&] { pool->persist(4096, 64, nlanes, 0); }) == EINVAL);
	CHECK(errno_of([&] { pool->persist(fx.local.size() - 8, 64, 0, 0); }) == EINVAL);
	CHECK(errno_of([&] { pool->persist(4096, SIZE_MAX, 0, 0); }) == EINVAL);
	CHECK(errno_of([&] { pool->persist(4096, 64, 0, 0x80); }) == EINVAL);
	CHECK(errno_of([&] { pool->drain(0, 1); }) == EINVAL);
	std::memset(fx.local.data() + 4096, 0x11, 64);
	CHECK(errno_of([&] { pool->persist(4096, 64, 0, 0); }) == 0);
	pool->close();
}
