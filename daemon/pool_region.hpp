// SPDX-License-Identifier: BSD-3-Clause
// The part of an open pool a client registered, as the lane executor sees it (persist_region):
// the adapter between the pool store and the fabric target's workers.
#pragma once

#include "lane_exec.hpp"
#include "pool_store.hpp"

#include <cstdint>

namespace rpmemd
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

} // namespace rpmemd
