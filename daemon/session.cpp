// SPDX-License-Identifier: BSD-3-Clause
#include "session.hpp"

#include "log.hpp"
#include "pool_region.hpp"
#include "session_checksums.hpp"
#include "session_report.hpp"
#include "session_status.hpp"
#include "target.hpp"

#include "control/codec.hpp"
#include "rpmem/error.hpp"

#include <libpmem.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>

namespace rpmemd
{

namespace ctl = rpmem::control;
using namespace std::chrono_literals;

namespace
{

/** How long the rest of a frame may take once its first byte arrived. */
inline constexpr std::chrono::milliseconds frame_timeout{5000};

/** A stream whose first byte was already read (to wait for a frame without cutting it). */
class prefetched_stream final : public rpmem::byte_stream
{
public:
	prefetched_stream(rpmem::byte_stream &inner, std::uint8_t first)
	    : inner_(inner), first_(first)
	{
	}
	void write_all(std::span<const std::uint8_t> data) override { inner_.write_all(data); }
	void read_exact(std::span<std::uint8_t> data, std::chrono::milliseconds timeout) override
	{
		if (pending_ && !data.empty()) {
			data[0] = first_;
			pending_ = false;
			data = data.subspan(1);
		}
		if (!data.empty())
			inner_.read_exact(data, timeout);
	}

private:
	rpmem::byte_stream &inner_;
	std::uint8_t first_;
	bool pending_ = true;
};

class session
{
public:
	session(const config &cfg, pool_store &store, rpmem::byte_stream &io, std::string peer,
	        std::string address, const target_factory &start)
	    : cfg_(cfg), store_(store), io_(io), peer_(std::move(peer)),
	      address_(std::move(address)), start_(start),
	      started_(std::chrono::steady_clock::now())
	{
	}

	~session() { teardown(false); }

	int run()
	{
		try {
			for (;;) {
				auto msg = receive();
				if (!msg)
					return finish(exit_peer_gone);
				if (auto code = dispatch(*msg))
					return finish(*code);
				// Silence counts from the reply: creating a pool may take a while.
				last_message_ = std::chrono::steady_clock::now();
			}
		} catch (const ctl::protocol_error &e) {
			log_err("{}: protocol error: {} — closing the session", peer_, e.message());
			return finish(exit_protocol);
		} catch (const rpmem::error &e) {
			if (e.errnum() == ECONNRESET || e.errnum() == EPIPE) {
				log_warn("{}: control channel closed by the client ({})", peer_,
				         e.message());
				return finish(exit_peer_gone);
			}
			log_err("{}: {}", peer_, e.what());
			return finish(exit_peer_gone);
		} catch (const std::exception &e) {
			log_err("{}: unexpected failure: {}", peer_, e.what());
			return finish(exit_protocol);
		}
	}

private:
	/**
	 * The next message; nullopt when the client has been silent (no control message, no fabric
	 * request) for longer than the heartbeat timeout, or its fabric connection broke while the
	 * control channel is silent. Only the first byte of a frame waits for the heartbeat: the
	 * rest of a started frame gets frame_timeout, so a timeout never cuts a frame in two.
	 */
	std::optional<ctl::message> receive()
	{
		const auto timeout = cfg_.heartbeat_timeout;
		for (;;) {
			std::uint8_t first = 0;
			try {
				io_.read_exact({&first, 1}, timeout.count() > 0
				                                ? time_left(timeout)
				                                : std::chrono::milliseconds(-1));
			} catch (const rpmem::error &e) {
				if (e.errnum() != ETIMEDOUT)
					throw;
				if (client_gone(timeout))
					return std::nullopt;
				continue;
			}
			prefetched_stream rest(io_, first);
			auto m = ctl::receive(rest, std::max(timeout, frame_timeout));
			last_message_ = std::chrono::steady_clock::now();
			return m;
		}
	}

	/** The latest sign of life: a control message or a fabric request. */
	std::chrono::steady_clock::time_point last_sign_of_life() const
	{
		auto t = last_message_;
		if (target_ && target_->last_activity() > 0) {
			std::chrono::steady_clock::time_point fabric{
			    std::chrono::nanoseconds(target_->last_activity())};
			t = std::max(t, fabric);
		}
		return t;
	}

	std::chrono::milliseconds time_left(std::chrono::milliseconds timeout) const
	{
		auto idle = std::chrono::steady_clock::now() - last_sign_of_life();
		auto left = std::chrono::duration_cast<std::chrono::milliseconds>(timeout - idle);
		return std::max(left, std::chrono::milliseconds(1));
	}

	bool client_gone(std::chrono::milliseconds timeout) const
	{
		if (target_ && target_->failed()) {
			log_err("{}: fabric connection lost and the control channel is silent: "
			        "closing the session",
			        peer_);
			return true;
		}
		if (std::chrono::steady_clock::now() - last_sign_of_life() < timeout)
			return false;
		log_err("{}: client silent for more than {} ms (no control message, no fabric "
		        "request; a client pings every third of heartbeat-timeout): closing the "
		        "session",
		        peer_, timeout.count());
		return true;
	}

	/** Handles one message; an exit code when the session is over. */
	std::optional<int> dispatch(const ctl::message &msg)
	{
		switch (msg.type) {
		case ctl::msg_type::create:
		case ctl::msg_type::open: {
			auto req = decode_or_refuse<ctl::pool_request>(msg);
			return req ? open_pool(msg.type, *req) : exit_protocol;
		}
		case ctl::msg_type::set_attr: {
			auto req = decode_or_refuse<ctl::set_attr_request>(msg);
			if (!req)
				return exit_protocol;
			set_attr(*req);
			return std::nullopt;
		}
		case ctl::msg_type::ping: {
			auto p = ctl::decode<ctl::ping>(msg);
			ctl::send(io_, ctl::encode(ctl::pong{p.cookie}));
			return std::nullopt;
		}
		case ctl::msg_type::close: {
			auto req = decode_or_refuse<ctl::close_request>(msg);
			return req ? close(*req) : exit_protocol;
		}
		case ctl::msg_type::checksum: {
			auto req = decode_or_refuse<ctl::checksum_request>(msg);
			if (!req)
				return exit_protocol;
			send_checksums(io_, peer_, cfg_, pool_.get(), region_.get(), *req);
			return std::nullopt;
		}
		case ctl::msg_type::create_done:
			// A body, or no pool created here: a protocol error, the session ends.
			(void)ctl::decode<ctl::create_done>(msg);
			if (!created_)
				throw ctl::protocol_error(
				    "create_done without a pool created in this session");
			create_done_ = true;
			log_info(
			    "{}: the client's create of pool {} returned: the pool stays from now "
			    "on",
			    peer_, descriptor_);
			return std::nullopt;
		default:
			throw ctl::protocol_error(fmt::format(
			    "unexpected message type {} ({}) from the client: only "
			    "create, create_done, open, set_attr, checksum, ping and close are "
			    "requests",
			    static_cast<unsigned>(msg.type), ctl::msg_type_name(msg.type)));
		}
	}

	/**
	 * Decodes a request whose frame header was valid; a bad body is answered with status
	 * badproto in the matching response (docs/protocol.md, Errors) and nullopt: the session
	 * ends because the client cannot be trusted to speak the protocol.
	 */
	template <class T> std::optional<T> decode_or_refuse(const ctl::message &msg)
	{
		try {
			return ctl::decode<T>(msg);
		} catch (const ctl::protocol_error &e) {
			log_err("{}: invalid {} request: {} — answering badproto and closing the "
			        "session",
			        peer_, ctl::msg_type_name(msg.type), e.message());
			refuse(msg.type, e.message());
			return std::nullopt;
		}
	}

	void refuse(ctl::msg_type request, const std::string &why)
	{
		const auto st = ctl::status::badproto;
		switch (request) {
		case ctl::msg_type::create:
			reply_error(ctl::msg_type::create_resp, st, EPROTO, why);
			break;
		case ctl::msg_type::open:
			reply_error(ctl::msg_type::open_resp, st, EPROTO, why);
			break;
		case ctl::msg_type::checksum:
			ctl::send(
			    io_, ctl::encode(ctl::checksum_response{st, EPROTO, why, 0, true, {}}));
			break;
		default: {
			ctl::status_response resp{st, EPROTO, why};
			ctl::send(io_, ctl::encode(resp, request == ctl::msg_type::close
			                                     ? ctl::msg_type::close_resp
			                                     : ctl::msg_type::set_attr_resp));
		}
		}
	}

	/** How the fabric target of the pool just opened for `req` is set up. */
	target_params target_for(const ctl::pool_request &req) const
	{
		// Provider cache flushes (commit) are durable only where the pool is persistent
		// memory; commit is new in protocol 1.1. APM needs more (target_method.hpp).
		const bool pmem = pool_->is_pmem();
		target_params tp;
		tp.address = address_;
		tp.providers = req.provider;
		tp.ports = cfg_.ports;
		tp.region = region_.get();
		tp.nlanes = req.nlanes;
		tp.methods.commit =
		    cfg_.persist_commit && pmem && req.minor >= ctl::commit_since_minor;
		tp.methods.apm = cfg_.persist_apm;
		tp.methods.pmem = pmem;
		tp.methods.auto_flush = cfg_.persist_apm && pmem_has_auto_flush() == 1;
		tp.methods.nic_writes_durable = cfg_.nic_writes_durable;
		tp.nthreads = cfg_.nthreads;
		tp.wait = cfg_.wait;
		tp.mr_mode = cfg_.mr_mode.value_or(rpmem::fabric::mr_mode::automatic);
		tp.auth_timeout = cfg_.auth_timeout;
		return tp;
	}

	std::optional<int> open_pool(ctl::msg_type type, const ctl::pool_request &req)
	{
		const bool create = type == ctl::msg_type::create;
		auto resp_type = create ? ctl::msg_type::create_resp : ctl::msg_type::open_resp;
		ctl::pool_response resp;
		if (pool_) {
			reply_error(
			    resp_type, ctl::status::fatal, EALREADY,
			    fmt::format("a pool ({}) is already open in this session: close "
			                "it first",
			                pool_->descriptor()));
			return std::nullopt;
		}
		try {
			if (create) {
				pool_ = store_.create(req.descriptor, req.attr, req.pool_size);
				created_ = true;
				confirms_create_ = req.minor >= ctl::create_done_since_minor;
			} else {
				pool_ = store_.open(req.descriptor, req.pool_size);
			}
			region_ = std::make_unique<pool_region>(*pool_, req.pool_size);
			target_ = start_(target_for(req));
		} catch (const store_error &e) {
			log_err("{}: {} {}: {}", peer_, create ? "create" : "open", req.descriptor,
			        e.message());
			teardown(true);
			reply_error(resp_type, status_for(req, e.status()), e.errnum(),
			            e.message());
			return exit_ok;
		} catch (const rpmem::error &e) {
			log_err("{}: {} {}: {}", peer_, create ? "create" : "open", req.descriptor,
			        e.message());
			teardown(true);
			reply_error(resp_type,
			            e.errnum() == ENOMEDIUM ? ctl::status::provnosup
			                                    : ctl::status::fatal_conn,
			            e.errnum(), e.message());
			return exit_ok;
		}
		// Named from here: a client gone before the answer leaves this pool to judge.
		descriptor_ = req.descriptor;
		resp.fabric = target_->params();
		resp.pool_size = pool_->size();
		resp.is_pmem = pool_->is_pmem();
		if (!create)
			resp.attr = pool_->attr();
		// Recorded before the answer: once the client's open returns, `rpmem status` on
		// this host lists the session.
		status_.publish(req.descriptor, create, *pool_, resp.fabric);
		ctl::send(io_, ctl::encode(resp, resp_type));
		log_notice("{}: session start: {} pool {} ({} bytes), {} lanes over {} "
		           "connection(s), provider {}, persist method {}, made durable by {}; {}",
		           peer_, create ? "created" : "opened", req.descriptor, req.pool_size,
		           resp.fabric.nlanes, resp.fabric.nendpoints, resp.fabric.provider,
		           ctl::to_string(resp.fabric.method),
		           pool_->is_pmem() ? "pmem_persist" : "pmem_msync", version_string());
		return std::nullopt;
	}

	void set_attr(const ctl::set_attr_request &req)
	{
		ctl::status_response resp;
		if (!pool_) {
			resp = {ctl::status::fatal, EINVAL,
			        "set_attr before create or open: no pool is open in this session"};
		} else {
			try {
				pool_->set_attr(req.attr);
			} catch (const store_error &e) {
				resp = {e.status(), static_cast<std::uint32_t>(e.errnum()),
				        e.message()};
			} catch (const rpmem::error &e) {
				resp = {ctl::status::fatal, static_cast<std::uint32_t>(e.errnum()),
				        e.message()};
			}
		}
		if (resp.st != ctl::status::success)
			log_err("{}: set_attr: {}", peer_, resp.message);
		ctl::send(io_, ctl::encode(resp, ctl::msg_type::set_attr_resp));
	}

	std::optional<int> close(const ctl::close_request &req)
	{
		ctl::status_response resp;
		if (!pool_) {
			resp = {ctl::status::fatal, EINVAL, "close without an open pool"};
			ctl::send(io_, ctl::encode(resp, ctl::msg_type::close_resp));
			return exit_ok;
		}
		bool remove = created_ && (req.flags & ctl::close_flag_remove);
		try {
			release(remove);
		} catch (const std::exception &e) {
			resp = {ctl::status::fatal, EIO, e.what()};
		}
		// The pool is closed and unlocked: the client may go on. The fabric's remains (its
		// queues, domain and the provider's threads: milliseconds with sockets) go after.
		ctl::send(io_, ctl::encode(resp, ctl::msg_type::close_resp));
		return exit_ok;
	}

	/** A status the client knows: before 1.4 a damaged pool was pool_cfg (and an unknown
	 *  status would break the client's decoder). */
	static ctl::status status_for(const ctl::pool_request &req, ctl::status st)
	{
		if (st == ctl::status::damaged && req.minor < ctl::damaged_since_minor)
			return ctl::status::pool_cfg;
		return st;
	}

	void reply_error(ctl::msg_type type, ctl::status st, int err, const std::string &message)
	{
		ctl::pool_response resp;
		resp.st = st;
		resp.err = static_cast<std::uint32_t>(err);
		resp.message = message;
		ctl::send(io_, ctl::encode(resp, type));
	}

	int finish(int code)
	{
		// A pool whose creation never completed goes away, and one the application may
		// have written to stays. A client of protocol 1.3 says when its create returns
		// (create_done): nothing can have been acknowledged before. An older client is
		// judged by the fabric: it sends lane requests only once all its connections are
		// up, and the accept thread may not have seen the last one's event yet, so a pool
		// that served a request stays (APM and commit persists are not requests: the
		// reason 1.3 asks the client).
		// (After a close, or a failed create, the pool is already closed: nothing to
		// judge.)
		const bool judged = created_ && target_ && pool_;
		bool remove = false;
		if (judged && confirms_create_) {
			remove = !create_done_;
			if (remove)
				log_notice(
				    "{}: the client left before its create returned (it "
				    "never sent create_done): the creation of pool {} did not "
				    "complete",
				    peer_, descriptor_);
		} else if (judged) {
			remove = !target_->connected() && target_->served().requests == 0;
			if (remove)
				log_notice(
				    "{}: the client left before its fabric connections were "
				    "up, and sent no request: the creation of pool {} did not "
				    "complete",
				    peer_, descriptor_);
		}
		teardown(remove);
		return code;
	}

	/** Stops serving, closes the pool and removes it if asked, then closes what is left of
	 * the fabric. Idempotent. */
	void teardown(bool remove)
	{
		release(remove);
		target_.reset();
	}

	/** Stops serving (nothing reaches the pool after), closes the pool and removes it if
	 * asked. Idempotent. */
	void release(bool remove)
	{
		if (target_ && !stopped_) {
			target_->stop();
			stopped_ = true;
			log_session_end(peer_, descriptor_, target_->served(), started_);
		}
		status_.withdraw();
		region_.reset();
		if (!pool_)
			return;
		std::string desc = pool_->descriptor();
		pool_.reset();
		if (remove && created_) {
			created_ = false;
			try {
				store_.remove(desc, true, false);
				log_notice("{}: removed pool {} created in this session", peer_,
				           desc);
			} catch (const std::exception &e) {
				log_err("{}: could not remove pool {}: {}", peer_, desc, e.what());
			}
		}
	}

	const config &cfg_;
	pool_store &store_;
	rpmem::byte_stream &io_;
	std::string peer_;
	std::string address_;
	const target_factory &start_;
	std::chrono::steady_clock::time_point started_;
	std::unique_ptr<pool> pool_;
	std::unique_ptr<pool_region> region_;
	std::unique_ptr<target> target_;
	std::chrono::steady_clock::time_point last_message_ = std::chrono::steady_clock::now();
	std::string descriptor_;
	bool created_ = false;
	bool confirms_create_ = false; // the client speaks 1.3: it sends create_done
	bool create_done_ = false;     // and did
	bool stopped_ = false;         // target_ stopped: only its remains are left
	session_status status_{cfg_, peer_};
};

} // namespace

int run_session(const config &cfg, pool_store &store, rpmem::byte_stream &io,
                const std::string &peer, const std::string &listen_address,
                const target_factory &start)
{
	session s(cfg, store, io, peer, listen_address, start);
	return s.run();
}

} // namespace rpmemd
