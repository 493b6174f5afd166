// SPDX-License-Identifier: BSD-3-Clause
// fd_stream over real socketpairs and pipes, and send/receive/expect on top of it.
#include "control/fd_stream.hpp"
#include "control_samples.hpp"

#include <catch2/catch.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <thread>

#include <sys/socket.h>
#include <unistd.h>

using namespace rpmem::control;
using namespace rpmem::control::test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace
{

using bytes = std::vector<std::uint8_t>;

/** Two connected descriptors; either end can be closed early to play a dead peer. */
struct fd_pair {
	int a = -1;
	int b = -1;

	static fd_pair sockets()
	{
		int fds[2];
		REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
		return {fds[0], fds[1]};
	}
	static fd_pair pipe() // a: read end, b: write end
	{
		int fds[2];
		REQUIRE(::pipe(fds) == 0);
		return {fds[0], fds[1]};
	}
	void close_a() { close_fd(a); }
	void close_b() { close_fd(b); }
	~fd_pair()
	{
		close_a();
		close_b();
	}

private:
	static void close_fd(int &fd)
	{
		if (fd >= 0)
			::close(fd);
		fd = -1;
	}
};

void write_raw(int fd, const bytes &b)
{
	REQUIRE(::write(fd, b.data(), b.size()) == static_cast<ssize_t>(b.size()));
}

template <class F> rpmem::error require_error(F &&f, int errnum)
{
	try {
		f();
	} catch (const rpmem::error &e) {
		CHECK(e.errnum() == errnum);
		return e;
	}
	FAIL("no rpmem::error thrown");
	return rpmem::error(0, "");
}

/** Ignores SIGPIPE for its lifetime, as rpmemd does for its whole life. */
struct ignore_sigpipe {
	struct sigaction old {
	};
	ignore_sigpipe()
	{
		struct sigaction ign {
		};
		ign.sa_handler = SIG_IGN;
		sigaction(SIGPIPE, &ign, &old);
	}
	~ignore_sigpipe() { sigaction(SIGPIPE, &old, nullptr); }
};

} // namespace

TEST_CASE("fd_stream reads exactly the requested bytes across partial writes",
          "[control][fd_stream]")
{
	fd_pair p = fd_pair::sockets();
	fd_stream s(p.a, p.a, "test channel");
	std::thread writer([&] {
		for (std::uint8_t i = 0; i < 3; ++i) {
			std::this_thread::sleep_for(20ms);
			write_raw(p.b, bytes(4, i));
		}
	});
	bytes got(12);
	s.read_exact(got, 5s);
	writer.join();
	CHECK(got == bytes{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
}

TEST_CASE("fd_stream leaves bytes beyond the request for the next read", "[control][fd_stream]")
{
	fd_pair p = fd_pair::sockets();
	fd_stream s(p.a, p.a);
	write_raw(p.b, {1, 2, 3, 4, 5});
	bytes first(2), rest(3);
	s.read_exact(first, 0ms); // already there: a zero timeout is enough
	s.read_exact(rest, 1s);
	CHECK(first == bytes{1, 2});
	CHECK(rest == bytes{3, 4, 5});
}

TEST_CASE("fd_stream read times out with ETIMEDOUT", "[control][fd_stream]")
{
	fd_pair p = fd_pair::sockets();
	fd_stream s(p.a, p.a, "test channel");
	write_raw(p.b, {1, 2});
	bytes buf(4);
	auto start = std::chrono::steady_clock::now();
	auto e = require_error([&] { s.read_exact(buf, 50ms); }, ETIMEDOUT);
	CHECK(std::chrono::steady_clock::now() - start >= 50ms);
	CHECK_THAT(e.message(), Contains("test channel") && Contains("2 of 4 bytes"));
}

TEST_CASE("fd_stream reports a closed peer as ECONNRESET", "[control][fd_stream]")
{
	SECTION("socket read")
	{
		fd_pair p = fd_pair::sockets();
		fd_stream s(p.a, p.a, "test channel");
		write_raw(p.b, {9, 9});
		p.close_b();
		bytes buf(4);
		auto e = require_error([&] { s.read_exact(buf, 1s); }, ECONNRESET);
		CHECK_THAT(e.message(), Contains("peer closed") && Contains("2 of 4 bytes"));
	}
	SECTION("socket write: MSG_NOSIGNAL, so no SIGPIPE kills the test")
	{
		fd_pair p = fd_pair::sockets();
		fd_stream s(p.a, p.a);
		p.close_b();
		require_error([&] { s.write_all(bytes(16, 1)); }, ECONNRESET);
	}
	SECTION("pipe read")
	{
		fd_pair p = fd_pair::pipe();
		fd_stream s(p.a, p.b);
		p.close_b();
		bytes buf(1);
		require_error([&] { s.read_exact(buf, 1s); }, ECONNRESET);
	}
	SECTION("pipe write, with SIGPIPE ignored as the caller must")
	{
		ignore_sigpipe guard;
		fd_pair p = fd_pair::pipe();
		fd_stream s(p.a, p.b);
		p.close_a();
		require_error([&] { s.write_all(bytes(16, 1)); }, ECONNRESET);
	}
}

TEST_CASE("fd_stream moves data through pipes in PIPE_BUF chunks", "[control][fd_stream]")
{
	fd_pair in = fd_pair::pipe();
	fd_pair out = fd_pair::pipe();
	fd_stream s(in.a, out.b, "pipes");
	bytes big(100000);
	for (std::size_t i = 0; i < big.size(); ++i)
		big[i] = static_cast<std::uint8_t>(i * 7);
	std::thread reader([&] {
		bytes got(big.size());
		fd_stream(out.a, out.a).read_exact(got, 5s);
		CHECK(got == big);
	});
	s.write_all(big); // more than the 64 KiB a pipe buffers: needs the reader to progress
	reader.join();
}

TEST_CASE("fd_stream write times out when the peer does not read", "[control][fd_stream]")
{
	fd_pair p = fd_pair::sockets();
	fd_stream s(p.a, p.a, "test channel", 100ms);
	auto e = require_error([&] { s.write_all(bytes(16 << 20, 0)); }, ETIMEDOUT);
	CHECK_THAT(e.message(), Contains("write") && Contains("100 ms"));
}

TEST_CASE("fd_stream refuses a closed descriptor", "[control][fd_stream]")
{
	require_error([] { fd_stream s(-1, -1, "test channel"); }, EBADF);
}

TEST_CASE("every message survives send and receive over a socketpair", "[control][stream]")
{
	fd_pair p = fd_pair::sockets();
	fd_stream client(p.a, p.a), daemon(p.b, p.b);
	for (const sample &s : all_samples()) {
		INFO(s.name);
		send(client, s.frame);
		message m = receive(daemon, 1s);
		CHECK(m.type == message_of(s.frame).type);
		CHECK(m.body == message_of(s.frame).body);
		s.decode(m);
	}
	send(daemon, encode(sample_open_resp(), msg_type::open_resp));
	CHECK(expect<pool_response>(client, msg_type::open_resp, 1s) == sample_open_resp());
}

TEST_CASE("receive validates the header before reading or allocating the body", "[control][stream]")
{
	fd_pair p = fd_pair::sockets();
	fd_stream s(p.a, p.a);
	bytes huge = encode(ping{1});
	huge.resize(header_size);
	huge[8] = huge[9] = huge[10] = huge[11] = 0xff; // length 4 GiB, no body follows
	write_raw(p.b, huge);
	// EPROTO at once: had receive() trusted the length it would wait for the body and time out.
	try {
		(void)receive(s, 5s);
		FAIL("no protocol_error");
	} catch (const protocol_error &e) {
		CHECK_THAT(e.message(), Contains("length 4294967295"));
	}
}

TEST_CASE("receive bounds the whole frame by its timeout", "[control][stream]")
{
	fd_pair p = fd_pair::sockets();
	fd_stream s(p.a, p.a);
	bytes frame = encode(ping{1});
	write_raw(p.b, bytes(frame.begin(), frame.begin() + header_size + 3));
	require_error([&] { (void)receive(s, 50ms); }, ETIMEDOUT);
}

TEST_CASE("receive reports a frame cut by the peer's exit as ECONNRESET", "[control][stream]")
{
	fd_pair p = fd_pair::sockets();
	fd_stream s(p.a, p.a);
	bytes frame = encode(sample_hello());
	write_raw(p.b, bytes(frame.begin(), frame.end() - 1));
	p.close_b();
	require_error([&] { (void)receive(s, 1s); }, ECONNRESET);
}

TEST_CASE("expect names the expected and the received type", "[control][stream]")
{
	fd_pair p = fd_pair::sockets();
	fd_stream client(p.a, p.a), daemon(p.b, p.b);
	send(daemon, encode(pong{5}));
	try {
		(void)expect<pool_response>(client, msg_type::create_resp, 1s);
		FAIL("no protocol_error");
	} catch (const protocol_error &e) {
		CHECK_THAT(e.message(), Contains("expected message type create_resp") &&
		                            Contains("received pong"));
	}
}

TEST_CASE("send refuses what is not a frame", "[control][stream]")
{
	fd_pair p = fd_pair::sockets();
	fd_stream s(p.a, p.a);
	require_error([&] { send(s, bytes(3, 0)); }, EINVAL);
}
