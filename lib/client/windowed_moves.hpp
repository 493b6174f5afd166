// SPDX-License-Identifier: BSD-3-Clause
// A catch-up's mover while the application's persists go to the replica directly (DRBD's
// writes to a SyncTarget): librpmem's synchronous pool (resilient_heal.cpp) and
// replicated_pool's synchronous mode (lib/replication/resync.cpp).
#pragma once

#include "client/catch_up_window.hpp"
#include "client/replica_sync.hpp"

#include <algorithm>
#include <cstdint>

namespace rpmem::client
{

/** Moves at most this much at a time while the calls go on: a persist waits on lane 0, or is
 *  recorded for a later round, for at most one such move. 1 MiB resent more (blocks hit in
 *  flight); 64 and 128 KiB made catch-ups slower (docs/lab/performance-records.md). */
inline constexpr std::uint64_t window_bytes = 256u << 10;

/** A catch-up's moves, each announced to the window (catch_up_window.hpp) while in flight and
 *  made on lane 0 in turns with the application's calls on it (lane_turns). */
class windowed_moves final : public sync_destination
{
public:
	windowed_moves(sync_destination &to, catch_up_window &window, lane_turns &lane0)
	    : to_(to), window_(window), lane0_(lane0)
	{
	}
	void mark() override { to_.mark(); }
	void clear() override { to_.clear(); }
	void move(std::uint64_t offset, std::uint64_t length) override
	{
		for (std::uint64_t off = offset, end = offset + length; off < end;) {
			const std::uint64_t n = std::min(window_bytes, end - off);
			window_.moving(off, n);
			struct moved {
				catch_up_window &w;
				~moved() { w.moved(); }
			} done{window_};
			const auto turn = lane0_.take();
			to_.move(off, n);
			off += n;
		}
	}

private:
	sync_destination &to_;
	catch_up_window &window_;
	lane_turns &lane0_;
};

} // namespace rpmem::client
