// SPDX-License-Identifier: BSD-3-Clause
// The mover of a catch-up round (client/resilient_heal.cpp): what a round took from the dirty
// map goes to the replica, less the blocks written again since.
#pragma once

#include "client/dirty_map.hpp"
#include "client/replica_sync.hpp"

#include <algorithm>
#include <cstdint>

namespace rpmem::client
{

/**
 * A catch-up round's mover: skips the blocks written again since the round took them. Those
 * are marked again and go in a later round with the bytes they hold then, so sending them now
 * would only be sent again (a hot block would go once per round). The last round, with the
 * calls held, skips nothing: nothing is marked again then.
 */
class fresh_blocks final : public sync_destination
{
public:
	fresh_blocks(sync_destination &to, const dirty_map &dirty) : to_(to), dirty_(dirty) {}
	void mark() override { to_.mark(); }
	void clear() override { to_.clear(); }
	void move(std::uint64_t offset, std::uint64_t length) override
	{
		const std::uint64_t end = offset + length, block = dirty_.block();
		std::uint64_t run = offset; // the start of the blocks to send not yet sent
		for (std::uint64_t b = offset; b < end;) {
			const std::uint64_t next = std::min(end, (b / block + 1) * block);
			if (skipping && dirty_.marked(b)) {
				send(run, b);
				skipped += next - b;
				run = next;
			}
			b = next;
		}
		send(run, end);
	}
	bool skipping = true;
	std::uint64_t moved = 0, skipped = 0;

private:
	void send(std::uint64_t from, std::uint64_t to)
	{
		if (to > from) {
			to_.move(from, to - from);
			moved += to - from;
		}
	}
	sync_destination &to_;
	const dirty_map &dirty_;
};

} // namespace rpmem::client
