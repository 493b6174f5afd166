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

int persist_ranges(std::span<const std::uint8_t> payload, std::uint64_t count,
                   const lane_limits &limits, persist_region &region)
{
	if (count > limits.max_ranges || payload.size() != count * rpmem::lane::range_size)
		return EINVAL;
	for (std::uint64_t i = 0; i < count; ++i) {
		auto r = rpmem::lane::decode_range(payload.data() + i * rpmem::lane::range_size);
		if (!in_bounds(r.offset, r.length, region.size()))
			return EINVAL;
	}
	for (std::uint64_t i = 0; i < count; ++i) {
		auto r = rpmem::lane::decode_range(payload.data() + i * rpmem::lane::range_size);
		if (r.length)
			region.persist(r.offset, r.length);
	}
	return 0;
}

} // namespace

int execute(std::span<const std::uint8_t> msg, const lane_limits &limits, persist_region &region,
            rpmem::lane::request *decoded)
{
	auto req = rpmem::lane::decode_request(msg);
	if (!req || msg.size() < rpmem::lane::request_header_size)
		return EPROTO;
	if (decoded)
		*decoded = *req;
	if (req->lane >= limits.nlanes)
		return EINVAL;
	auto payload = msg.subspan(rpmem::lane::request_header_size);
	try {
		switch (req->kind) {
		case op::persist:
		case op::deep_persist:
			if (!payload.empty() || !in_bounds(req->offset, req->length, region.size()))
				return EINVAL;
			if (req->length == 0)
				return 0;
			if (req->kind == op::persist)
				region.persist(req->offset, req->length);
			else
				region.deep_persist(req->offset, req->length);
			return 0;
		case op::persist_inline:
			if (req->length > limits.inline_max || payload.size() != req->length ||
			    !in_bounds(req->offset, req->length, region.size()))
				return EINVAL;
			if (req->length == 0)
				return 0;
			atomic_copy(region.base() + req->offset, payload.data(), payload.size());
			region.persist(req->offset, req->length);
			return 0;
		case op::drain:
			return persist_ranges(payload, req->length, limits, region);
		}
	} catch (const std::exception &) {
		return EIO;
	}
	return EPROTO;
}

} // namespace rpmemd
