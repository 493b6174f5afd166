// SPDX-License-Identifier: BSD-3-Clause
#include "session_checksums.hpp"

#include "log.hpp"

#include "checksum/block_sums.hpp"
#include "control/codec.hpp"

#include <algorithm>
#include <cerrno>

namespace rpmemd
{

namespace ctl = rpmem::control;

void send_checksums(rpmem::byte_stream &io, const std::string &peer, const config &cfg,
                    const pool *p, persist_region *region, const ctl::checksum_request &req)
{
	auto fail = [&](ctl::status st, int err, std::string why) {
		log_err("{}: checksum request refused: {}", peer, why);
		ctl::send(io,
		          ctl::encode(ctl::checksum_response{
		              st, static_cast<std::uint32_t>(err), std::move(why), 0, true, {}}));
	};
	if (!cfg.block_checksums)
		return fail(ctl::status::unsupported, ENOTSUP,
		            "block checksums are turned off on this replica node (rpmemd "
		            "block-checksums = no): copy the whole pool instead, or turn them on");
	if (!p)
		return fail(ctl::status::fatal, EINVAL,
		            "checksum request before create or open: no pool is open in this "
		            "session");
	if (req.offset + req.length > region->size())
		return fail(ctl::status::badsize, EFBIG,
		            fmt::format("checksum range [{}, {}) is outside the {} bytes of pool "
		                        "set '{}' the client registered",
		                        req.offset, req.offset + req.length, region->size(),
		                        p->descriptor()));
	const std::uint64_t block = req.block_size;
	const std::uint64_t nblocks = ctl::checksum_count(req);
	const std::uint64_t per_message = std::clamp<std::uint64_t>(
	    checksum_bytes_per_message / block, 1, ctl::max_checksums_per_message);
	const std::uint8_t *base = region->base() + req.offset;
	ctl::checksum_response resp;
	for (std::uint64_t first = 0; first < nblocks; first += per_message) {
		const std::uint64_t n = std::min(per_message, nblocks - first);
		const std::uint64_t from = first * block;
		const std::uint64_t len = std::min(n * block, req.length - from);
		resp.first_block = first;
		resp.last = first + n == nblocks;
		resp.sums.resize(n);
		rpmem::checksum::blocks(base + from, len, req.block_size, resp.sums);
		ctl::send(io, ctl::encode(resp));
	}
	log_info("{}: checksums of [{}, {}) sent: {} blocks of {} bytes", peer, req.offset,
	         req.offset + req.length, nblocks, block);
}

} // namespace rpmemd
