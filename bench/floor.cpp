// SPDX-License-Identifier: BSD-3-Clause
#include "floor.hpp"

#include "floor_protocol.hpp"

#include "client/env.hpp"
#include "fabric/cq.hpp"
#include "fabric/endpoint.hpp"
#include "fabric/eq.hpp"
#include "fabric/fabric.hpp"
#include "fabric/info.hpp"
#include "fabric/mr.hpp"
#include "fabric/page_buffer.hpp"
#include "fabric/waiter.hpp"
#include "lane/lane_msg.hpp"
#include "rpmem/error.hpp"
#include "ssh/session.hpp"
#include "ssh/target.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <sys/mman.h>

namespace rpmem::bench
{

namespace fab = rpmem::fabric;
namespace fp = floor_proto;
using namespace std::chrono_literals;

namespace
{

enum class kind : std::uint8_t { write, read, send, recv };

struct op_ctx {
	fi_context fctx; // first: FI_CONTEXT mode scratch space
	kind k;
};

inline constexpr unsigned reply_slots = 4;

} // namespace

std::string floor_command(const options &o)
{
	if (!o.floor_cmd.empty())
		return o.floor_cmd;
	const auto &cmds = client::process_settings().commands;
	std::string cmd = cmds.empty() ? std::string("rpmemd") : cmds.front();
	std::istringstream in(cmd);
	std::string word, out;
	while (in >> word) {
		auto slash = word.rfind('/');
		std::string base = slash == std::string::npos ? word : word.substr(slash + 1);
		if (base == "rpmemd") {
			out += (slash == std::string::npos ? std::string()
			                                   : word.substr(0, slash + 1)) +
			       "rpmem-floor";
			return out;
		}
		// Environment assignments, exec/env and wrappers (scripts/fake-eadr.sh) run the
		// floor as they run rpmemd.
		out += word + " ";
	}
	throw rpmem::error(EINVAL, fmt::format("cannot derive the rpmem-floor command from "
	                                       "RPMEM_CMD '{}': pass --floor-cmd",
	                                       cmd));
}

struct floor_link::impl {
	std::string host;
	std::unique_ptr<ssh::session> ssh;
	fp::ready peer;
	fab::info fi;
	std::unique_ptr<fab::fabric_domain> domain;
	std::unique_ptr<fab::eq> eq;
	std::unique_ptr<fab::cq> cq;
	std::unique_ptr<fab::endpoint> ep;
	std::uint8_t *buf = nullptr;
	std::size_t buf_size = 0;
	std::size_t cursor = 0;        // see place()
	fab::page_buffer msg, replies; // registered: whole pages
	fab::page_buffer raw;          // the 8 bytes an APM-style read lands in
	std::unique_ptr<fab::memory_region> buf_mr, msg_mr, reply_mr, raw_mr;
	std::size_t max_msg = 0;
	bool saw = true;
	std::unique_ptr<fab::cq_waiter> waiter;
	op_ctx write_ctx{{}, kind::write}, read_ctx{{}, kind::read}, send_ctx{{}, kind::send};
	std::array<op_ctx, reply_slots> recv_ctx{};
	unsigned pending_writes = 0, pending_reads = 0, pending_replies = 0;

	~impl()
	{
		if (ep) {
			try {
				ep->shutdown();
			} catch (const rpmem::error &) {
			}
		}
		ep.reset();
		buf_mr.reset();
		msg_mr.reset();
		reply_mr.reset();
		raw_mr.reset();
		cq.reset();
		eq.reset();
		domain.reset();
		if (buf)
			munmap(buf, buf_size);
		if (ssh) {
			try {
				ssh->close_stdin();
				ssh->wait_exit(1000ms);
			} catch (const rpmem::error &) {
			}
		}
	}

	std::string read_line(std::chrono::milliseconds timeout)
	{
		std::string line;
		std::uint8_t c = 0;
		while (line.size() < 4096) {
			ssh->read_exact({&c, 1}, timeout);
			if (c == '\n')
				return line;
			line += static_cast<char>(c);
		}
		return line;
	}

	template <class Post> void post(Post &&op)
	{
		while (op() == fab::post_status::again)
			poll(false);
	}

	void poll(bool block)
	{
		std::array<fab::cq_entry, 16> e{};
		auto res = block ? waiter->wait(*cq, e, 1000ms) : cq->read(e);
		if (res.error)
			throw rpmem::error(EIO, fmt::format("{}: floor connection to rpmem-floor "
			                                    "failed: {}",
			                                    host, res.error->text));
		for (std::size_t i = 0; i < res.count; ++i) {
			auto *ctx = static_cast<op_ctx *>(e[i].op_context);
			switch (ctx->k) {
			case kind::write:
				--pending_writes;
				break;
			case kind::read:
				--pending_reads;
				break;
			case kind::send:
				break;
			case kind::recv: {
				--pending_replies;
				auto slot = static_cast<std::size_t>(ctx - recv_ctx.data());
				post([&] {
					return ep->recv(replies.data() + slot * fp::reply_size,
					                fp::reply_size, reply_mr->desc(), ctx);
				});
				break;
			}
			}
		}
	}

	void wait(const unsigned &counter)
	{
		auto deadline = clock_type::now() + 10s;
		while (counter) {
			poll(true);
			if (clock_type::now() > deadline)
				throw rpmem::error(
				    ETIMEDOUT, fmt::format("{}: rpmem-floor did not answer within "
				                           "10 s",
				                           host));
		}
	}

	/** Where the next transfer of `size` bytes goes: successive transfers advance through the
	 * buffers (both as large as the pool) as the latency scenario advances through the pool,
	 * so the floor meets the same cache behaviour as the persists it is compared with. */
	std::size_t place(std::size_t size)
	{
		if (cursor + size > buf_size)
			cursor = 0;
		std::size_t at = cursor;
		cursor = (cursor + size + 7) & ~std::size_t(7);
		return at;
	}

	/** Writes `size` bytes at `at` of both buffers; flags 0: unsignalled, else fi_writemsg
	 * flags (FI_COMPLETION | ...). */
	void write(std::size_t at, std::size_t size, std::uint64_t flags)
	{
		for (std::size_t off = at, end = at + size; off < end;) {
			std::size_t n = std::min(end - off, max_msg);
			fab::rma_target dst{peer.raddr + off, peer.rkey};
			if (flags) {
				++pending_writes;
				post([&] {
					return ep->writemsg(buf + off, n, buf_mr->desc(), dst,
					                    &write_ctx, flags);
				});
			} else {
				post([&] {
					return ep->write(buf + off, n, buf_mr->desc(), dst,
					                 &write_ctx);
				});
			}
			off += n;
		}
	}

	void message_post(std::size_t payload)
	{
		++pending_replies;
		std::size_t len = rpmem::lane::request_header_size + payload;
		post([&] { return ep->send(msg.data(), len, msg_mr->desc(), &send_ctx); });
	}
	void message(std::size_t payload)
	{
		message_post(payload);
		wait(pending_replies);
	}
};

floor_link::floor_link(const options &o, const std::string &provider, std::size_t buffer,
                       std::size_t msg_max)
    : impl_(std::make_unique<impl>())
{
	auto &d = *impl_;
	msg_max_ = msg_max;
	auto t = ssh::parse_target(o.target);
	d.host = t.host;
	// The floor waits (RPMEM_SPIN) and registers memory (RPMEM_MR_MODE) as rpmem does, on
	// both sides: each row beside the floor of the same modes.
	const auto &settings = client::process_settings();
	d.waiter = std::make_unique<fab::cq_waiter>(settings.wait);
	std::string cmd = fmt::format(
	    "{} --provider {} --buffer {} --msg-max {} --depth 8 --wait {} --mr-mode {}",
	    floor_command(o), provider, buffer, rpmem::lane::request_header_size + msg_max,
	    fab::to_string(settings.wait), fab::to_string(settings.mr_mode));
	auto start = clock_type::now();
	d.ssh = ssh::session::start(t, cmd, ssh::options::from_environment());
	std::string line;
	try {
		line = d.read_line(15000ms);
	} catch (const rpmem::error &e) {
		throw rpmem::error(e.errnum(),
		                   fmt::format("{}: rpmem-floor ('{}') did not start: {} "
		                               "{}: install it beside rpmemd or pass "
		                               "--floor-cmd",
		                               d.host, cmd, e.message(), d.ssh->stderr_text()));
	}
	auto ready = fp::parse_ready(line);
	if (!ready)
		throw rpmem::error(
		    EPROTO, fmt::format("{}: rpmem-floor ('{}') failed: {}", d.host, cmd, line));
	start_us_ = us_since(start);
	d.peer = *ready;

	start = clock_type::now();
	fab::request req;
	req.provider = d.peer.provider;
	req.mr = settings.mr_mode;
	d.fi = fab::info::for_connect(d.peer.address, d.peer.port, req);
	d.domain = std::make_unique<fab::fabric_domain>(d.fi);
	const auto &g = d.domain->granted();
	d.saw = g.send_after_write();
	d.max_msg = std::max<std::size_t>(g.max_msg_size, 4096);
	d.eq = std::make_unique<fab::eq>(*d.domain);
	d.cq = std::make_unique<fab::cq>(
	    *d.domain, fab::cq_options{std::size_t(o.window) * 4 + 64, d.waiter->needs()});
	d.ep = std::make_unique<fab::endpoint>(*d.domain, d.fi);
	d.ep->bind(*d.eq);
	d.ep->bind(*d.cq, FI_TRANSMIT | FI_SELECTIVE_COMPLETION);
	d.ep->bind(*d.cq, FI_RECV);
	d.ep->enable();

	d.buf_size = (std::max<std::size_t>(buffer, 4096) + fab::page_size() - 1) /
	             fab::page_size() * fab::page_size();
	void *p = mmap(nullptr, d.buf_size, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		throw rpmem::error(
		    errno, fmt::format("mmap of {} bytes for the floor failed", d.buf_size));
	d.buf = static_cast<std::uint8_t *>(p);
	std::memset(d.buf, 0x5a, d.buf_size);
	d.buf_mr = std::make_unique<fab::memory_region>(*d.domain, d.buf, d.buf_size,
	                                                FI_WRITE | FI_READ | FI_SEND);
	d.msg = fab::page_buffer(rpmem::lane::request_header_size + msg_max);
	std::memset(d.msg.data(), 0x11, d.msg.size());
	d.msg_mr =
	    std::make_unique<fab::memory_region>(*d.domain, d.msg.data(), d.msg.size(), FI_SEND);
	d.replies = fab::page_buffer(reply_slots * fp::reply_size);
	d.reply_mr = std::make_unique<fab::memory_region>(*d.domain, d.replies.data(),
	                                                  d.replies.size(), FI_RECV);
	d.raw = fab::page_buffer(sizeof(std::uint64_t));
	d.raw_mr =
	    std::make_unique<fab::memory_region>(*d.domain, d.raw.data(), d.raw.size(), FI_READ);

	d.ep->connect(d.peer.secret);
	for (;;) {
		auto ev = d.eq->read(10000ms);
		if (!ev)
			throw rpmem::error(ETIMEDOUT,
			                   fmt::format("{}: connecting to rpmem-floor at "
			                               "{}:{} ({}) timed out",
			                               d.host, d.peer.address, d.peer.port,
			                               d.peer.provider));
		if (ev->is_error())
			throw rpmem::error(
			    ECONNREFUSED, fmt::format("{}: connecting to rpmem-floor at {}:{} ({}) "
			                              "failed: {}",
			                              d.host, d.peer.address, d.peer.port,
			                              d.peer.provider, ev->err_text));
		if (ev->type == FI_CONNECTED)
			break;
	}
	for (unsigned s = 0; s < reply_slots; ++s) {
		d.recv_ctx[s].k = kind::recv;
		d.post([&] {
			return d.ep->recv(d.replies.data() + s * fp::reply_size, fp::reply_size,
			                  d.reply_mr->desc(), &d.recv_ctx[s]);
		});
	}
	connect_us_ = us_since(start);
}

floor_link::~floor_link() = default;

const std::string &floor_link::provider() const
{
	return impl_->peer.provider;
}

double floor_link::write_msg_reply(std::size_t size)
{
	auto &d = *impl_;
	auto start = clock_type::now();
	d.write(d.place(size), size, d.saw ? 0 : FI_COMPLETION | FI_DELIVERY_COMPLETE);
	if (!d.saw)
		d.wait(d.pending_writes);
	d.message(0);
	return us_since(start);
}

double floor_link::write_read(std::size_t size)
{
	auto &d = *impl_;
	auto start = clock_type::now();
	auto at = d.place(size);
	d.write(at, size, 0);
	++d.pending_reads;
	fab::rma_target src{d.peer.raddr + at + size - std::min<std::size_t>(size, 8), d.peer.rkey};
	d.post([&] {
		return d.ep->readmsg(d.raw.data(), std::min<std::size_t>(size, 8), d.raw_mr->desc(),
		                     src, &d.read_ctx, FI_COMPLETION);
	});
	d.wait(d.pending_reads);
	return us_since(start);
}

double floor_link::commit_write(std::size_t size)
{
	auto &d = *impl_;
	auto start = clock_type::now();
	d.write(d.place(size), size, FI_COMPLETION | FI_COMMIT_COMPLETE);
	d.wait(d.pending_writes);
	return us_since(start);
}

bool floor_link::commit_supported() const
{
	return impl_->domain->granted().rma_pmem;
}

double floor_link::send_reply(std::size_t size)
{
	auto &d = *impl_;
	auto start = clock_type::now();
	d.message(std::min(size, msg_max_));
	return us_since(start);
}

void floor_link::message_post(std::size_t size)
{
	impl_->message_post(std::min(size, msg_max_));
}

void floor_link::message_wait()
{
	impl_->wait(impl_->pending_replies);
}

double floor_link::stream(std::size_t size, unsigned window, double seconds)
{
	auto &d = *impl_;
	std::size_t slots = std::max<std::size_t>(1, d.buf_size / size);
	std::uint64_t bytes = 0, n = 0;
	auto start = clock_type::now();
	auto end = start + std::chrono::duration_cast<clock_type::duration>(
	                       std::chrono::duration<double>(seconds));
	while (clock_type::now() < end) {
		while (d.pending_writes >= window)
			d.poll(true);
		std::size_t off = (n++ % slots) * size;
		fab::rma_target dst{d.peer.raddr + off, d.peer.rkey};
		++d.pending_writes;
		d.post([&] {
			return d.ep->writemsg(d.buf + off, size, d.buf_mr->desc(), dst,
			                      &d.write_ctx, FI_COMPLETION);
		});
		bytes += size;
	}
	d.wait(d.pending_writes);
	d.message(0);
	return mib_per_s(double(bytes), us_since(start));
}

} // namespace rpmem::bench
