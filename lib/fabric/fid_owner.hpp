// SPDX-License-Identifier: BSD-3-Clause
// Ownership of one libfabric object, so every wrapper here gets its move-only semantics and its
// fi_close from one place instead of repeating them.
#pragma once

#include <rdma/fabric.h>

#include <utility>

namespace rpmem::fabric
{

/** Owns a fid_* object: closes it once (fi_close) when destroyed or reset; moves, never copies. */
template <typename Fid> class fid_owner
{
public:
	fid_owner() noexcept = default;
	~fid_owner() { reset(); }
	fid_owner(fid_owner &&other) noexcept : fid_(std::exchange(other.fid_, nullptr)) {}
	fid_owner &operator=(fid_owner &&other) noexcept
	{
		if (this != &other) {
			reset();
			fid_ = std::exchange(other.fid_, nullptr);
		}
		return *this;
	}
	fid_owner(const fid_owner &) = delete;
	fid_owner &operator=(const fid_owner &) = delete;

	Fid *get() const noexcept { return fid_; }
	/** For the out-parameter of an fi_*open call; closes what was held before. */
	Fid **out() noexcept
	{
		reset();
		return &fid_;
	}
	void reset() noexcept
	{
		// A destructor cannot report failure; fi_close fails with EBUSY when children are
		// still open, and leaking then is the lesser harm than freeing what they still use.
		if (fid_ != nullptr)
			fi_close(&fid_->fid);
		fid_ = nullptr;
	}

private:
	Fid *fid_ = nullptr;
};

} // namespace rpmem::fabric
