// SPDX-License-Identifier: BSD-3-Clause
#include "client/persist_method.hpp"

#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

namespace rpmem::client
{

namespace ln = rpmem::lane;

void persist_method::complete(lane_state &l, bool wait_now)
{
	if (wait_now)
		l.conn->wait(l.sync);
	else
		l.posted = true;
}

void persist_method::send_request(lane_state &l, const ln::request &req, std::size_t payload,
                                  then t)
{
	auto &c = *l.conn;
	c.take_credit();
	if (l.sync.outstanding.load(std::memory_order_relaxed) == 0)
		l.sync.first_cookie.store(req.cookie, std::memory_order_release);
	ln::encode(req, l.batch.slot());
	l.sync.outstanding.fetch_add(1, std::memory_order_relaxed);
	c.post([&] {
		return c.ep().send(l.batch.slot(), ln::request_header_size + payload, res_.msg_desc,
		                   &l.sync.ctx);
	});
	if (t != then::build_on)
		complete(l, t == then::wait);
}

void persist_method::send_ahead(lane_state &l)
{
	auto *next = l.spare_slot;
	l.spare_slot = l.batch.slot();
	send_batch(l, then::build_on);
	l.batch = lane_batch(next, l.batch.capacity(), l.batch.inline_threshold());
}

void persist_method::send_batch(lane_state &l, then t)
{
	std::size_t payload = l.batch.payload_bytes();
	std::uint64_t entries = l.batch.entries();
	l.batch.clear();
	send_request(l, {ln::op::persist, l.index, 0, entries, l.sync.next_cookie()}, payload, t);
}

void persist_method::stage_inline(lane_state &l, range r, const std::uint8_t *src)
{
	if (!l.batch.fits(r.length))
		send_batch(l, true);
	l.batch.add_inline(r, src);
}

void persist_method::write(lane_state &l, range r, const std::uint8_t *src, void *desc,
                           std::uint64_t flags)
{
	auto &c = *l.conn;
	while (r.length) {
		std::uint64_t n = std::min<std::uint64_t>(r.length, res_.max_msg);
		fabric::rma_target dst{res_.remote.addr + r.offset, res_.remote.key};
		if (flags & FI_COMPLETION) {
			l.sync.outstanding.fetch_add(1, std::memory_order_relaxed);
			c.post(
			    [&] { return c.ep().writemsg(src, n, desc, dst, &l.sync.ctx, flags); });
		} else if (flags) {
			c.post([&] {
				return c.ep().writemsg(src, n, desc, dst, c.silent_context(),
				                       flags);
			});
		} else {
			c.post([&] { return c.ep().write(src, n, desc, dst, c.silent_context()); });
		}
		src += n;
		r.offset += n;
		r.length -= n;
	}
}

void persist_method::write_then_announce(lane_state &l, range r, const std::uint8_t *src,
                                         void *desc)
{
	// rpmemd applies a batch's inline data when the batch arrives, after every write posted
	// before it: inline bytes this newer write covers are sent first.
	if (l.batch.under_inline(r))
		send_batch(l, true);
	if (res_.send_after_write) {
		write(l, r, src, desc, unsignalled_write_flags());
	} else {
		// Without send-after-write order the write must land before the message.
		write(l, r, src, desc, FI_COMPLETION | FI_DELIVERY_COMPLETE);
		l.conn->wait(l.sync);
	}
	if (!l.batch.fits(r.length))
		send_batch(l, true);
	l.batch.add_written(r);
}

void persist_method::flush(lane_state &l, range r, const std::uint8_t *src, void *desc)
{
	if (l.batch.travels_inline(r.length))
		stage_inline(l, r, src);
	else
		write_then_announce(l, r, src, desc);
}

void persist_method::persist(lane_state &l, range r, bool wait_now)
{
	flush(l, r, res_.pool + r.offset, res_.pool_desc);
	drain(l, wait_now);
}

void persist_method::deep_persist(lane_state &l, range r)
{
	// As in flush: older inline bytes under this write must not land after it.
	if (l.batch.under_inline(r))
		send_batch(l, true);
	if (r.length) {
		bool saw = res_.send_after_write;
		write(l, r, res_.pool + r.offset, res_.pool_desc,
		      saw ? 0 : FI_COMPLETION | FI_DELIVERY_COMPLETE);
		if (!saw)
			l.conn->wait(l.sync);
	}
	// Only the header is sent: a batch of relaxed flushes behind it in the slot stays intact.
	send_request(l, {ln::op::deep_persist, l.index, r.offset, r.length, l.sync.next_cookie()},
	             0, then::wait);
}

void persist_method::read(lane_state &l, void *buf, range r, void *desc, bool wait_now)
{
	auto &c = *l.conn;
	auto *dst = static_cast<std::uint8_t *>(buf);
	while (r.length) {
		std::uint64_t n = std::min<std::uint64_t>(r.length, res_.max_msg);
		fabric::rma_target src{res_.remote.addr + r.offset, res_.remote.key};
		l.sync.outstanding.fetch_add(1, std::memory_order_relaxed);
		c.post(
		    [&] { return c.ep().readmsg(dst, n, desc, src, &l.sync.ctx, FI_COMPLETION); });
		dst += n;
		r.offset += n;
		r.length -= n;
	}
	complete(l, wait_now);
}

namespace
{

/** GPSPM: a persist request follows the writes; rpmemd makes every range durable. */
class gpspm final : public persist_method
{
public:
	using persist_method::persist_method;
	control::persist_method kind() const override { return control::persist_method::gpspm; }

	void drain(lane_state &l, bool wait_now) override { send_batch(l, wait_now); }

	void persist(lane_state &l, range r, bool wait_now) override
	{
		persist_method::persist(l, send_chunks(l, r), wait_now);
	}

private:
	/** A large persist in pipelined chunks: all but the last go out now, each written and
	 * then announced by its own request, so rpmemd makes chunk k durable while chunk k+1 is
	 * in transit. Returns what is left for the lane's own request (the last chunk). */
	range send_chunks(lane_state &l, range r)
	{
		if (!l.batch.empty())
			return r;
		auto plan = plan_chunks(r.length, res_.pipeline, res_.pipeline_chunk);
		if (plan.count == 0)
			return r;
		auto &c = *l.conn;
		l.sync.first_cookie.store(l.sync.cookie.load(std::memory_order_relaxed) + 1,
		                          std::memory_order_release);
		for (std::uint32_t i = 0; i < plan.count; ++i) {
			range chunk{r.offset, plan.chunk};
			write(l, chunk, res_.pool + chunk.offset, res_.pool_desc, 0);
			auto *m = l.chunk_msgs + std::size_t(i) * path_resources::chunk_slot;
			ln::encode(
			    ln::request{ln::op::persist, l.index, 0, 1, l.sync.next_cookie()}, m);
			ln::encode(chunk.offset, chunk.length, nullptr,
			           m + ln::request_header_size);
			l.sync.outstanding.fetch_add(1, std::memory_order_relaxed);
			c.post([&] {
				return c.ep().send(m,
				                   ln::request_header_size + ln::entry_header_size,
				                   res_.chunk_desc, &l.sync.ctx);
			});
			r.offset += plan.chunk;
			r.length -= plan.chunk;
		}
		return r;
	}
};

/** APM: the replica declared NIC writes durable; a read behind the writes proves arrival. A
 * batch that carries inline bytes still goes as a request (rpmemd copies and persists them). */
class apm final : public persist_method
{
public:
	using persist_method::persist_method;
	control::persist_method kind() const override { return control::persist_method::apm; }

	/** The read behind the writes makes no completion at rpmemd: announced writes keep its
	 * worker polling until the read arrives (measured: tcp, 16-64 KiB,
	 * docs/lab/performance-records.md). */
	std::uint64_t unsignalled_write_flags() const override
	{
		return res_.announce_writes ? FI_REMOTE_CQ_DATA : 0;
	}

	void drain(lane_state &l, bool wait_now) override
	{
		if (l.batch.has_inline()) {
			send_batch(l, wait_now);
			return;
		}
		auto w = *l.batch.last_written();
		l.batch.clear();
		std::uint64_t n = std::min<std::uint64_t>(w.length, 8);
		read(l, l.raw, {w.end() - n, n}, res_.raw_desc, wait_now);
	}
};

/** Commit: a write with FI_COMMIT_COMPLETE is durable on the replica when it completes (the
 * target provider flushes it to the persistence domain); rpmemd's workers take no part.
 * Ranges that travel inline still go as a request, which rpmemd applies and persists. */
class commit final : public persist_method
{
public:
	using persist_method::persist_method;
	control::persist_method kind() const override { return control::persist_method::commit; }

	void flush(lane_state &l, range r, const std::uint8_t *src, void *desc) override
	{
		if (l.batch.travels_inline(r.length)) {
			stage_inline(l, r, src);
			return;
		}
		// Inline bytes of the batch are applied when its request arrives: older ones
		// under this write go (and complete) first.
		if (l.batch.under_inline(r))
			send_batch(l, true);
		// Each write is signalled; bound what a lane leaves in the completion queue.
		if (l.sync.outstanding.load(std::memory_order_relaxed) >= max_in_flight)
			l.conn->wait(l.sync);
		write(l, r, src, desc,
		      FI_COMPLETION | FI_COMMIT_COMPLETE |
		          (res_.announce_writes ? FI_REMOTE_CQ_DATA : 0));
	}

	void drain(lane_state &l, bool wait_now) override
	{
		// One wait covers the lane's request (if any) and its writes.
		if (l.batch.empty())
			complete(l, wait_now);
		else
			send_batch(l, wait_now);
	}

	bool pending(const lane_state &l) const override
	{
		return !l.batch.empty() || l.sync.outstanding.load(std::memory_order_relaxed) != 0;
	}

	/** Commit writes a lane may have in flight between drains. */
	static constexpr std::uint32_t max_in_flight = 16;
};

} // namespace

std::uint32_t max_writes_in_flight(control::persist_method method)
{
	return method == control::persist_method::commit ? commit::max_in_flight : 0;
}

std::unique_ptr<persist_method> make_persist_method(control::persist_method method,
                                                    const path_resources &r,
                                                    const fabric::granted &g,
                                                    const std::string &host)
{
	switch (method) {
	case control::persist_method::gpspm:
		return std::make_unique<gpspm>(r);
	case control::persist_method::apm:
		if (!g.read_after_write())
			throw rpmem::error(
			    ENOTSUP, fmt::format("{}: rpmemd chose {}, but provider {} does not "
			                         "keep read-after-write order here, on which "
			                         "APM relies: run rpmemd without --persist-apm",
			                         host, control::describe(method), g.provider));
		return std::make_unique<apm>(r);
	case control::persist_method::commit:
		if (!g.rma_pmem)
			throw rpmem::error(
			    ENOTSUP, fmt::format("{}: rpmemd chose {}, but provider {} does not "
			                         "grant FI_RMA_PMEM here, so its commit "
			                         "completions mean nothing: run rpmemd without "
			                         "--persist-commit",
			                         host, control::describe(method), g.provider));
		return std::make_unique<commit>(r);
	}
	throw rpmem::error(EPROTO, fmt::format("{}: rpmemd chose persistence method {}, which "
	                                       "this client does not know",
	                                       host, static_cast<unsigned>(method)));
}

} // namespace rpmem::client
