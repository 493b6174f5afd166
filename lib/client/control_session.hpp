// SPDX-License-Identifier: BSD-3-Clause
// The client end of a control session: rpmemd started over SSH, its hello checked, then
// request/response exchanges. Every failure is an rpmem::error naming the host.
#pragma once

#include "control/codec.hpp"
#include "control/messages.hpp"
#include "rpmem/error.hpp"
#include "ssh/session.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>

namespace rpmem::client
{

/** The advice a failure noticed by the keep-alive carries (replicated_pool gives its own). */
inline constexpr const char *reopen_advice = "the pool is unusable: close it and open it again";

/**
 * The remote pool is unusable: its rpmemd or the link is gone (noticed by the keep-alive).
 * The message ends with reopen_advice; a layer with another remedy (replicated_pool: resync)
 * words it with with_remedy() instead of editing the text.
 */
class session_lost : public rpmem::error
{
public:
	session_lost(int err, std::string cause, std::string how)
	    : rpmem::error(err, words(cause, how, reopen_advice)), cause_(std::move(cause)),
	      how_(std::move(how))
	{
	}
	/** The message with `remedy` in place of reopen_advice. */
	std::string with_remedy(std::string_view remedy) const
	{
		return words(cause_, how_, remedy);
	}

private:
	static std::string words(std::string_view cause, std::string_view how,
	                         std::string_view remedy)
	{
		return std::string(cause) + " (" + std::string(how) + "; " + std::string(remedy) +
		       ")";
	}
	std::string cause_;
	std::string how_;
};

/**
 * rpmemd answered a create or open with a refusal: its status (PMDK's, and ours) for callers
 * that act on the reason, not the words. errnum() is the status's errno (PMDK's mapping).
 * rpmem check and sync tell a damaged replica (status damaged: rpmemd answers, the pool on
 * disk is not sound) from one they cannot reach or may not open.
 */
class pool_refused : public rpmem::error
{
public:
	pool_refused(control::status st, const std::string &message)
	    : rpmem::error(control::status_errno(st), message), status_(st)
	{
	}
	control::status status() const noexcept { return status_; }

private:
	control::status status_;
};

class control_session
{
public:
	/** Starts `command` on `target` ([user@]host[:port]) and reads rpmemd's hello. */
	control_session(const std::string &target, const std::string &command,
	                const ssh::options &ssh_opts, std::chrono::milliseconds timeout);
	~control_session();

	control_session(const control_session &) = delete;
	control_session &operator=(const control_session &) = delete;

	/** create or open; a failure status becomes a pool_refused with PMDK's errno. */
	control::pool_response request_pool(const control::pool_request &req, bool create);
	/**
	 * Tells rpmemd (protocol 1.3 or later; nothing to an older one) that the create it
	 * answered is about to return: from then on it keeps the pool when this client vanishes.
	 * Not answered; the frame is written to the channel before this returns.
	 */
	void create_done();
	void set_attr(const std::optional<control::pool_attr> &attr);
	/** Sends close and waits for the reply; flags: control::close_flag_remove. */
	void close(std::uint32_t flags);
	/**
	 * Checksums of the request's blocks, in order; `sink(first_block, sums)` receives each
	 * message's. A daemon older than protocol 1.2 (it would not know the request) or one with
	 * block-checksums = no: rpmem::error(ENOTSUP) saying so, the session still usable.
	 */
	void checksums(
	    const control::checksum_request &req,
	    const std::function<void(std::uint64_t, std::span<const control::block_sum>)> &sink);
	/** The protocol minor version rpmemd announced in its hello. */
	std::uint16_t daemon_minor() const { return daemon_minor_; }
	/** A ping round trip: proves the daemon is alive. timeout < 0: the session's timeout. */
	void ping(std::chrono::milliseconds timeout = std::chrono::milliseconds(-1));

	/**
	 * Starts a thread that pings rpmemd every `interval` while the session is idle or busy
	 * with the data path (rpmemd closes a session silent for its heartbeat-timeout, and a
	 * dead daemon or ssh is noticed without waiting for the next data-path call). A failed
	 * ping is recorded (failure()) and ends the thread. Stopped by stop_keepalive(), close()
	 * and the destructor.
	 */
	void start_keepalive(std::chrono::milliseconds interval);
	void stop_keepalive();
	/**
	 * Gives the session up without an exchange (a reconnect replaces it): the keep-alive
	 * stops, the remote command is ended (rpmemd exits and unlocks the pool; a frozen one
	 * when it runs again), every later exchange fails at once. Thread-safe with a waiting
	 * exchange.
	 */
	void abandon(const std::string &why) noexcept;
	/** The keep-alive's verdict: nullopt while rpmemd answers, else why it does not. */
	std::optional<session_lost> failure() const;
	/** When rpmemd last answered a request or a ping (its hello, before any). */
	std::chrono::steady_clock::time_point last_answer() const;

	const std::string &host() const { return host_; }
	const std::string &command() const { return command_; }

private:
	/** Throws e as a failure of the exchange that expected `answer`, with what rpmemd said. */
	[[noreturn]] void fail_transport(const rpmem::error &e, control::msg_type answer);
	control::message exchange(const std::vector<std::uint8_t> &frame, control::msg_type expect,
	                          std::chrono::milliseconds timeout);
	void keepalive_loop(std::chrono::milliseconds interval);
	void note_answer(); // rpmemd answered just now (see last_answer)

	std::string target_;
	std::string host_;
	std::string command_;
	std::chrono::milliseconds timeout_;
	std::uint16_t daemon_minor_ = 0;
	std::string daemon_version_;
	std::unique_ptr<ssh::session> ssh_;
	std::mutex mutex_; // one exchange at a time (the keep-alive runs beside the data path)
	std::atomic<std::uint64_t> ping_cookie_{0};
	std::atomic<std::chrono::steady_clock::rep> last_answer_{0}; // steady_clock ticks

	std::thread keepalive_;
	std::mutex keepalive_mutex_;
	std::condition_variable keepalive_cv_;
	bool keepalive_stop_ = false;
	std::atomic<bool> failed_{false};
	mutable std::mutex failure_mutex_;
	std::optional<session_lost> failure_;
};

/** Runs `rpmemd --remove` on the target (PMDK's rpmem_remove). */
void remove_remote(const std::string &target, const std::string &descriptor, int flags,
                   const std::string &command, const ssh::options &ssh_opts,
                   std::chrono::milliseconds timeout);

} // namespace rpmem::client
