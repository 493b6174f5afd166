// SPDX-License-Identifier: BSD-3-Clause
#include "session.hpp"

#include "log.hpp"
#include "target.hpp"

#include "control/codec.hpp"
#include "rpmem/error.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

namespace rpmemd
{

namespace ctl = rpmem::control;
using namespace std::chrono_literals;

namespace
{

/** The part of the pool the client registered, as the lane executor sees it. */
class pool_region final : public persist_region
{
public:
	pool_region(pool &p, std::uint64_t size) : pool_(p), size_(size) {}
	std::uint8_t *base() override { return static_cast<std::uint8_t *>(pool_.base()); }
	std::uint64_t size() const override { return size_; }
	void persist(std::uint64_t off, std::uint64_t len) override { pool_.persist(off, len); }
	void deep_persist(std::uint64_t off, std::uint64_t len) override
	{
		pool_.deep_persist(off, len);
	}

private:
	pool &pool_;
	std::uint64_t size_;
};

const char *method_name(ctl::persist_method m)
{
	return m == ctl::persist_method::apm ? "APM" : "GPSPM";
}

class session
{
public:
	session(const config &cfg, pool_store &store, rpmem::byte_stream &io, std::string peer,
	        std::string address)
	    : cfg_(cfg), store_(store), io_(io), peer_(std::move(peer)),
	      address_(std::move(address)), started_(std::chrono::steady_clock::now())
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
					return *code;
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
	/** The next message; nullopt when the client has been silent for too long. */
	std::optional<ctl::message> receive()
	{
		const auto timeout = cfg_.heartbeat_timeout;
		for (;;) {
			try {
				return ctl::receive(io_, pool_ && timeout.count() > 0
				                             ? timeout
				                             : std::chrono::milliseconds(-1));
			} catch (const rpmem::error &e) {
				if (e.errnum() != ETIMEDOUT)
					throw;
			}
			if (target_ && target_->failed()) {
				log_err("{}: fabric connection lost and the control channel is "
				        "silent: closing the session",
				        peer_);
				return std::nullopt;
			}
			auto idle =
			    std::chrono::steady_clock::now().time_since_epoch() -
			    std::chrono::nanoseconds(target_ ? target_->last_activity() : 0);
			if (!target_ || idle > timeout) {
				log_err(
				    "{}: client silent for more than {} ms (no control message, "
				    "no fabric request): closing the session",
				    peer_, timeout.count());
				return std::nullopt;
			}
		}
	}

	/** Handles one message; an exit code when the session is over. */
	std::optional<int> dispatch(const ctl::message &msg)
	{
		switch (msg.type) {
		case ctl::msg_type::create:
		case ctl::msg_type::open:
			return open_pool(msg);
		case ctl::msg_type::set_attr:
			set_attr(ctl::decode<ctl::set_attr_request>(msg));
			return std::nullopt;
		case ctl::msg_type::ping: {
			auto p = ctl::decode<ctl::ping>(msg);
			ctl::send(io_, ctl::encode(ctl::pong{p.cookie}));
			return std::nullopt;
		}
		case ctl::msg_type::close:
			return close(ctl::decode<ctl::close_request>(msg));
		default:
			throw ctl::protocol_error(fmt::format("unexpected message type {} from the "
			                                      "client",
			                                      static_cast<unsigned>(msg.type)));
		}
	}

	std::optional<int> open_pool(const ctl::message &msg)
	{
		const bool create = msg.type == ctl::msg_type::create;
		auto req = ctl::decode<ctl::pool_request>(msg);
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
		if (req.major != ctl::proto_major) {
			reply_error(resp_type, ctl::status::badproto, EPROTONOSUPPORT,
			            fmt::format("protocol version {}.{} is not supported by rpmemd "
			                        "{} (speaks {}.{}): install matching versions",
			                        req.major, req.minor, RPMEMD_VERSION,
			                        ctl::proto_major, ctl::proto_minor));
			return exit_ok;
		}
		try {
			if (create) {
				pool_ = store_.create(req.descriptor, req.attr, req.pool_size);
				created_ = true;
			} else {
				pool_ = store_.open(req.descriptor, req.pool_size);
			}
			region_ = std::make_unique<pool_region>(*pool_, req.pool_size);
			method_ = cfg_.persist_apm && pool_->is_pmem() ? ctl::persist_method::apm
			                                               : ctl::persist_method::gpspm;
			target_ = start_target({address_, req.provider, region_.get(), req.nlanes,
			                        method_, cfg_.nthreads});
		} catch (const store_error &e) {
			log_err("{}: {} {}: {}", peer_, create ? "create" : "open", req.descriptor,
			        e.message());
			teardown(true);
			reply_error(resp_type, e.status(), e.errnum(), e.message());
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
		resp.fabric = target_->params();
		resp.pool_size = pool_->size();
		resp.is_pmem = pool_->is_pmem();
		if (!create)
			resp.attr = pool_->attr();
		ctl::send(io_, ctl::encode(resp, resp_type));
		descriptor_ = req.descriptor;
		log_notice("{}: session start: {} pool {} ({} bytes), {} lanes over {} "
		           "connection(s), provider {}, {}, {}",
		           peer_, create ? "created" : "opened", req.descriptor, req.pool_size,
		           resp.fabric.nlanes, resp.fabric.nendpoints, resp.fabric.provider,
		           method_name(method_), pool_->is_pmem() ? "pmem" : "msync");
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
			teardown(remove);
		} catch (const std::exception &e) {
			resp = {ctl::status::fatal, EIO, e.what()};
		}
		ctl::send(io_, ctl::encode(resp, ctl::msg_type::close_resp));
		return exit_ok;
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
		// A pool whose creation never completed (the client never connected) goes away.
		bool remove = created_ && target_ && !target_->connected();
		teardown(remove);
		return code;
	}

	/** Stops the fabric, closes the pool and removes it if asked. Idempotent. */
	void teardown(bool remove)
	{
		if (target_) {
			target_->stop();
			auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() -
			                                          started_)
			                .count();
			log_notice("{}: session end: pool {}, {} requests, {} bytes persisted, "
			           "{:.3f} s",
			           peer_, descriptor_, target_->requests(), target_->bytes(), secs);
			target_.reset();
		}
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
	std::chrono::steady_clock::time_point started_;
	std::unique_ptr<pool> pool_;
	std::unique_ptr<pool_region> region_;
	std::unique_ptr<target> target_;
	ctl::persist_method method_ = ctl::persist_method::gpspm;
	std::string descriptor_;
	bool created_ = false;
};

} // namespace

int run_session(const config &cfg, pool_store &store, rpmem::byte_stream &io,
                const std::string &peer, const std::string &listen_address)
{
	session s(cfg, store, io, peer, listen_address);
	return s.run();
}

} // namespace rpmemd
