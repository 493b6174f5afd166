// SPDX-License-Identifier: BSD-3-Clause
#include "lane_exec.hpp"

#include <cerrno>
#include <cstring>
#include <exception>

namespace rpmemd
{

using rpmem::lane::op;

void atomic_copy(std::uint8_t *dst, const std::uint8_t *src, std::size_t n) noexcept
{
	while (n && (reinterpret_cast<std::uintptr_t>(dst) & 7)) {
		*dst++ = *src++;
		--n;
	}
	auto *d = reinterpret_cast<volatile std::uint64_t *>(dst);
	for (; n >= 8; n -= 8, src += 8) {
		std::uint64_t w;
		std::memcpy(&w, src, 8);
		*d++ = w; // one aligned 8-byte store
	}
	dst = reinterpret_cast<std::uint8_t *>(const_cast<std::uint64_t *>(d));
	while (n--)
		*dst++ = *src++;
}

namespace
{

bool in_bounds(std::uint64_t offset, std::uint64_t len, std::uint64_t size)
{
	return offset <= size && len <= size - offset;
}

/**
 * Validates every entry before touching the pool (a bad batch changes nothing), then applies the
 * entries in order, each durable before the next one's bytes are written: the pool's durable
 * content is always the state after some prefix of the batch (plus part of the entry being
 * applied). Asynchronous replication sends a round of persists as one batch and promises a
 * replica that holds a prefix of them even across the replica host's power failure; copying
 * every entry first would leave them all in the CPU cache at once, where any of them may reach
 * the media before an earlier one.
 */
int persist_batch(std::span<const std::uint8_t> payload, std::uint64_t count,
                  persist_region &region, std::uint64_t &persisted)
{
	rpmem::lane::entry_reader check(payload, count);
	while (auto e = check.next())
		if (!in_bounds(e->offset, e->length, region.size()))
			return EINVAL;
	if (!check.ok())
		return EINVAL;
	rpmem::lane::entry_reader apply(payload, count);
	while (auto e = apply.next()) {
		if (!e->length)
			continue;
		if (e->data)
			atomic_copy(region.base() + e->offset, e->data, e->length);
		region.persist(e->offset, e->length);
		persisted += e->length;
	}
	return 0;
}

} // namespace

int execute(std::span<const std::uint8_t> msg, const lane_limits &limits, persist_region &region,
            rpmem::lane::request *decoded, std::uint64_t *persisted)
{
	std::uint64_t ignored = 0;
	std::uint64_t &bytes = persisted ? *persisted : ignored;
	auto req = rpmem::lane::decode_request(msg);
	if (!req)
		return EPROTO;
	if (decoded)
		*decoded = *req;
	if (req->lane >= limits.nlanes ||
	    msg.size() > rpmem::lane::request_header_size + std::size_t(limits.inline_max))
		return EINVAL;
	auto payload = msg.subspan(rpmem::lane::request_header_size);
	try {
		switch (req->kind) {
		case op::persist:
			return persist_batch(payload, req->length, region, bytes);
		case op::deep_persist:
			if (!payload.empty() || !in_bounds(req->offset, req->length, region.size()))
				return EINVAL;
			if (req->length)
				region.deep_persist(req->offset, req->length);
			bytes = req->length;
			return 0;
		}
	} catch (const std::exception &) {
		return EIO;
	}
	return EPROTO;
}

} // namespace rpmemd
