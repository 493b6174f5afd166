// SPDX-License-Identifier: BSD-3-Clause
#include "client/control_session.hpp"
#include "client/exit_guard.hpp"

#include "client/env.hpp"
#include "control/codec.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

namespace rpmem::client
{

namespace ctl = rpmem::control;

namespace
{

/** The remote's stderr, trimmed to its last meaningful line(s). */
std::string remote_said(ssh::session &s)
{
	std::string text = s.stderr_text();
	while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
		text.pop_back();
	if (text.size() > 512)
		text = "..." + text.substr(text.size() - 512);
	return text;
}

/** Quotes a word for the remote shell (rpmemd runs through the user's login shell). */
std::string shell_quote(const std::string &word)
{
	std::string out = "'";
	for (char c : word) {
		if (c == '\'')
			out += "'\\''";
		else
			out += c;
	}
	return out + "'";
}

/** The command's exit status if it ends within a moment; -1 while it still runs. */
int exit_status_soon(ssh::session &s)
{
	try {
		return s.wait_exit(std::chrono::milliseconds(500));
	} catch (const rpmem::error &) {
		return -1;
	}
}

/** What the client was doing when the answer `answer` did not come, in the user's words. */
const char *doing(ctl::msg_type answer)
{
	switch (answer) {
	case ctl::msg_type::create_resp:
		return "creating the pool";
	case ctl::msg_type::open_resp:
		return "opening the pool";
	case ctl::msg_type::set_attr_resp:
		return "setting the pool attributes";
	case ctl::msg_type::close_resp:
		return "closing the pool";
	case ctl::msg_type::pong:
		return "the keep-alive ping";
	case ctl::msg_type::checksum_resp:
		return "reading the replica's block checksums";
	case ctl::msg_type::create_done:
		return "telling rpmemd the create completed";
	default:
		return "talking to rpmemd";
	}
}

} // namespace

control_session::control_session(const std::string &target, const std::string &command,
                                 const ssh::options &ssh_opts, std::chrono::milliseconds timeout)
    : target_(target), command_(command), timeout_(timeout)
{
	auto t = ssh::parse_target(target);
	host_ = t.host;
	ssh_ = ssh::session::start(t, command, ssh_opts);
	ctl::hello h;
	try {
		h = ctl::expect<ctl::hello>(*ssh_, ctl::msg_type::hello, timeout_);
	} catch (const ctl::protocol_error &e) {
		ssh_->terminate();
		throw rpmem::error(EPROTO,
		                   fmt::format("{}: '{}' did not answer like rpmemd ({}): check "
		                               "RPMEM_CMD points to rpmemd",
		                               host_, command_, e.message()));
	} catch (const rpmem::error &e) {
		std::string said = remote_said(*ssh_);
		if (e.errnum() == ETIMEDOUT) {
			ssh_->terminate();
			throw rpmem::error(ETIMEDOUT,
			                   fmt::format("{}: rpmemd ('{}') did not answer within "
			                               "{} ms{}{}",
			                               host_, command_, timeout_.count(),
			                               said.empty() ? "" : ": ", said));
		}
		int status = exit_status_soon(*ssh_);
		if (status == 127 || said.find("not found") != std::string::npos ||
		    said.find("No such file") != std::string::npos)
			throw rpmem::error(
			    ENOENT, fmt::format("{}: cannot start rpmemd: '{}' was not found "
			                        "({}): install rpmemd on {} or set RPMEM_CMD "
			                        "to its path",
			                        host_, command_, said, host_));
		std::string how = ssh_->ending();
		if (how.empty())
			how = fmt::format("exit status {}", status);
		throw rpmem::error(ECONNRESET, fmt::format("{}: rpmemd ('{}') ended before it "
		                                           "answered ({}){}{}",
		                                           host_, command_, how,
		                                           said.empty() ? "" : ": ", said));
	}
	note_answer();
	daemon_minor_ = h.minor;
	daemon_version_ = h.daemon_version;
	if (h.st != ctl::status::success) {
		int err = h.err ? static_cast<int>(h.err) : ctl::status_errno(h.st);
		throw rpmem::error(
		    err, fmt::format("{}: rpmemd failed to start: {}", host_,
		                     h.message.empty() ? ctl::status_text(h.st) : h.message));
	}
}

control_session::~control_session()
{
	stop_keepalive();
}

void control_session::fail_transport(const rpmem::error &e, ctl::msg_type answer)
{
	std::string said = ssh_ ? remote_said(*ssh_) : std::string();
	int err = e.errnum() == ETIMEDOUT ? ETIMEDOUT : e.errnum() == EPROTO ? EPROTO : ECONNRESET;
	// rpmemd exits with 1 when it gives a client up: silent past its heartbeat-timeout, or
	// its control channel closed.
	bool given_up = err == ECONNRESET && ssh_ && exit_status_soon(*ssh_) == 1;
	throw rpmem::error(
	    err, fmt::format("{}: {} failed: {}{}{}{}", host_, doing(answer), e.message(),
	                     said.empty() ? "" : "; rpmemd said: ", said,
	                     given_up ? "; rpmemd ends a session whose client is silent for "
	                                "longer than its heartbeat-timeout: keep RPMEM_KEEPALIVE "
	                                "on and below a third of it (rpmemd's log says why it "
	                                "stopped)"
	                              : ""));
}

ctl::message control_session::exchange(const std::vector<std::uint8_t> &frame, ctl::msg_type expect,
                                       std::chrono::milliseconds timeout)
{
	std::lock_guard lock(mutex_);
	try {
		ctl::send(*ssh_, frame);
		auto m = ctl::receive(*ssh_, timeout);
		ctl::check_type(expect, m.type);
		note_answer();
		return m;
	} catch (const rpmem::error &e) {
		fail_transport(e, expect);
	}
}

ctl::pool_response control_session::request_pool(const ctl::pool_request &req, bool create)
{
	auto type = create ? ctl::msg_type::create : ctl::msg_type::open;
	auto resp_type = create ? ctl::msg_type::create_resp : ctl::msg_type::open_resp;
	auto m = exchange(ctl::encode(req, type), resp_type, timeout_);
	ctl::pool_response resp;
	try {
		resp = ctl::decode<ctl::pool_response>(m);
	} catch (const rpmem::error &e) {
		fail_transport(e, resp_type);
	}
	if (resp.st != ctl::status::success)
		throw pool_refused(resp.st,
		                   fmt::format("{}: {}: {} of pool set '{}' failed{}{}",
		                               ctl::status_text(resp.st), host_,
		                               create ? "create" : "open", req.descriptor,
		                               resp.message.empty() ? "" : ": ", resp.message));
	return resp;
}

void control_session::create_done()
{
	if (daemon_minor_ < ctl::create_done_since_minor)
		return; // an older rpmemd judges by what its fabric saw (docs/protocol.md)
	std::lock_guard lock(mutex_);
	try {
		ctl::send(*ssh_, ctl::encode(ctl::create_done{}));
	} catch (const rpmem::error &e) {
		fail_transport(e, ctl::msg_type::create_done);
	}
}

void control_session::set_attr(const std::optional<ctl::pool_attr> &attr)
{
	auto m = exchange(ctl::encode(ctl::set_attr_request{attr}), ctl::msg_type::set_attr_resp,
	                  timeout_);
	auto resp = ctl::decode<ctl::status_response>(m);
	if (resp.st != ctl::status::success)
		throw rpmem::error(ctl::status_errno(resp.st),
		                   fmt::format("{}: {}: setting the pool attributes failed{}{}",
		                               ctl::status_text(resp.st), host_,
		                               resp.message.empty() ? "" : ": ", resp.message));
}

void control_session::checksums(
    const ctl::checksum_request &req,
    const std::function<void(std::uint64_t, std::span<const ctl::block_sum>)> &sink)
{
	if (daemon_minor_ < ctl::checksum_since_minor)
		throw rpmem::error(
		    ENOTSUP,
		    fmt::format("{}: rpmemd ({}, control protocol {}.{}) cannot "
		                "checksum blocks (protocol 1.{} can): install this "
		                "rpmem release on {}",
		                host_,
		                daemon_version_.empty() ? "unknown version" : daemon_version_,
		                ctl::proto_major, daemon_minor_, ctl::checksum_since_minor, host_));
	const std::uint64_t nblocks = ctl::checksum_count(req);
	const auto expect = ctl::msg_type::checksum_resp;
	std::lock_guard lock(mutex_); // the whole answer: a keep-alive ping waits for it
	std::uint64_t next = 0;
	for (bool sent = false;; sent = true) {
		ctl::checksum_response resp;
		try {
			if (!sent)
				ctl::send(*ssh_, ctl::encode(req));
			auto m = ctl::receive(*ssh_, timeout_);
			ctl::check_type(expect, m.type);
			note_answer();
			resp = ctl::decode<ctl::checksum_response>(m);
		} catch (const rpmem::error &e) {
			fail_transport(e, expect);
		}
		if (resp.st != ctl::status::success) // rpmemd's refusal: the session goes on
			throw rpmem::error(
			    ctl::status_errno(resp.st),
			    fmt::format("{}: {}: block checksums of [{}, {}) refused{}{}",
			                ctl::status_text(resp.st), host_, req.offset,
			                req.offset + req.length, resp.message.empty() ? "" : ": ",
			                resp.message));
		if (resp.first_block != next || resp.sums.size() > nblocks - next ||
		    resp.last != (next + resp.sums.size() == nblocks))
			fail_transport(ctl::protocol_error(fmt::format(
			                   "control protocol: checksum_resp with blocks {}..{} "
			                   "(last: {}) where "
			                   "block {} of {} was due; {}",
			                   resp.first_block, resp.first_block + resp.sums.size(),
			                   resp.last, next, nblocks, ctl::peer_hint)),
			               expect);
		sink(next, resp.sums);
		next += resp.sums.size();
		if (resp.last)
			return;
	}
}

void control_session::close(std::uint32_t flags)
{
	stop_keepalive();
	if (auto f = failure())
		throw *f; // the daemon is gone: nothing to exchange, the destructor ends ssh
	auto m =
	    exchange(ctl::encode(ctl::close_request{flags}), ctl::msg_type::close_resp, timeout_);
	auto resp = ctl::decode<ctl::status_response>(m);
	// rpmemd answers once the pool is closed and unlocked; it then closes what is left of its
	// fabric and exits by itself: nothing to wait for.
	ssh_->close_stdin();
	if (resp.st != ctl::status::success)
		throw rpmem::error(ctl::status_errno(resp.st),
		                   fmt::format("{}: {}: closing the pool failed{}{}",
		                               ctl::status_text(resp.st), host_,
		                               resp.message.empty() ? "" : ": ", resp.message));
}

void control_session::ping(std::chrono::milliseconds timeout)
{
	auto cookie = ++ping_cookie_;
	auto m = exchange(ctl::encode(ctl::ping{cookie}), ctl::msg_type::pong,
	                  timeout.count() < 0 ? timeout_ : timeout);
	if (ctl::decode<ctl::pong>(m).cookie != cookie)
		throw rpmem::error(EPROTO, fmt::format("{}: rpmemd answered a ping with a wrong "
		                                       "cookie",
		                                       host_));
}

void control_session::start_keepalive(std::chrono::milliseconds interval)
{
	if (interval.count() <= 0 || keepalive_.joinable())
		return;
	exit_guard::install();
	keepalive_stop_ = false;
	keepalive_ = std::thread([this, interval] { keepalive_loop(interval); });
}

void control_session::stop_keepalive()
{
	{
		std::lock_guard lock(keepalive_mutex_);
		keepalive_stop_ = true;
	}
	keepalive_cv_.notify_all();
	if (keepalive_.joinable())
		keepalive_.join();
}

void control_session::abandon(const std::string &why) noexcept
{
	stop_keepalive();
	{
		std::lock_guard fl(failure_mutex_);
		if (!failure_)
			failure_.emplace(ECONNRESET, why, "the session was given up");
	}
	failed_.store(true, std::memory_order_release);
	try {
		std::lock_guard lock(mutex_); // after an exchange in flight: its reads time out
		ssh_->terminate();
	} catch (...) {
		// Ending it is best effort: the destructor ends the connection in any case.
	}
}

std::optional<session_lost> control_session::failure() const
{
	if (!failed_.load(std::memory_order_acquire))
		return std::nullopt;
	std::lock_guard lock(failure_mutex_);
	return failure_;
}

void control_session::note_answer()
{
	last_answer_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
	                   std::memory_order_release);
}

std::chrono::steady_clock::time_point control_session::last_answer() const
{
	return std::chrono::steady_clock::time_point(
	    std::chrono::steady_clock::duration(last_answer_.load(std::memory_order_acquire)));
}

void control_session::keepalive_loop(std::chrono::milliseconds interval)
{
	// A ping that takes longer than a few intervals means the daemon (or the link) is gone;
	// waiting the whole control timeout would only delay the verdict and close().
	const auto ping_timeout =
	    std::min(timeout_, std::max(3 * interval, std::chrono::milliseconds(1000)));
	std::unique_lock lock(keepalive_mutex_);
	for (;;) {
		if (keepalive_cv_.wait_for(lock, interval, [this] { return keepalive_stop_; }))
			return;
		lock.unlock();
		auto &guard = exit_guard::get();
		if (!guard.enter()) {
			// The process is exiting: no more pings. Wait for a close that may still
			// come (from a static destructor) rather than end unjoined.
			lock.lock();
			keepalive_cv_.wait(lock, [this] { return keepalive_stop_; });
			return;
		}
		struct leave_on_return {
			exit_guard &g;
			~leave_on_return() { g.leave(); }
		} in_flight{guard};
		try {
			ping(ping_timeout);
		} catch (const rpmem::error &e) {
			int err = e.errnum() == ETIMEDOUT ? ETIMEDOUT : ECONNRESET;
			{
				std::lock_guard fl(failure_mutex_);
				failure_.emplace(err, e.message(),
				                 "noticed by the keep-alive ping");
			}
			failed_.store(true, std::memory_order_release);
			// This thread ends now, and may never be joined (an application may exit
			// with the pool open): its OpenSSL state goes before it leaves the exit
			// guard, not in its exit handlers, which could race with OpenSSL's own
			// atexit cleanup.
			ssh::end_thread();
			return;
		}
		lock.lock();
	}
}

void remove_remote(const std::string &target, const std::string &descriptor, int flags,
                   const std::string &command, const ssh::options &ssh_opts,
                   std::chrono::milliseconds timeout)
{
	auto t = ssh::parse_target(target);
	std::string cmd = command + " --remove " + shell_quote(descriptor);
	if (flags & 1)
		cmd += " --force";
	if (flags & 2)
		cmd += " --pool-set";
	auto s = ssh::session::start(t, cmd, ssh_opts);
	s->close_stdin();
	int status = s->wait_exit(timeout);
	if (status != 0) {
		std::string said = remote_said(*s);
		// PMDK's rpmem_remove said "remote command failed" and nothing more.
		throw rpmem::error(status > 0 ? status : ECONNRESET,
		                   fmt::format("remote command failed: {}: removing pool set '{}' "
		                               "failed (rpmemd exit status {}){}{}",
		                               t.host, descriptor, status, said.empty() ? "" : ": ",
		                               said));
	}
}

} // namespace rpmem::client
