// SPDX-License-Identifier: BSD-3-Clause
// replicated_pool::resync: brings a lost replica back (a remote one reopened, or re-created with
// the header it should have) and copies the master into it, marked possibly behind until the
// copy is complete.
#include "replication/replicated_pool_impl.hpp"

#include <algorithm>

namespace rpmem
{

using namespace replication;

namespace
{

/** Bytes copied per step by resync (one flush + drain per replica per chunk). */
constexpr std::size_t resync_chunk = 4u << 20;

} // namespace

void replicated_pool::resync(std::size_t index,
                             const std::function<void(std::size_t, std::size_t)> &progress)
{
	auto &d = open_pool(impl_.get(), "resync");
	if (index == 0 || index >= d.ps.replicas.size())
		throw rpmem::error(EINVAL,
		                   fmt::format("replicated_pool::resync: no replica {}: give "
		                               "1..{} (0 is the master)",
		                               index, d.ps.replicas.size() - 1));
	const std::size_t size = d.master->size();
	const std::size_t total = size - data_offset();
	std::unique_lock g(d.remote_mu); // no remote operation meanwhile

	for (auto &l : d.locals) {
		if (l.index != index)
			continue;
		for (std::size_t off = data_offset(); off < size; off += resync_chunk) {
			std::size_t n = std::min(resync_chunk, size - off);
			l.map->copy_persist(d.master->base(), off, n);
			if (progress)
				progress(off + n - data_offset(), total);
		}
		std::lock_guard s(d.state_mu);
		l.lost = false;
		l.error.clear();
		return;
	}

	auto it = std::find_if(d.remotes.begin(), d.remotes.end(),
	                       [&](const remote_replica &r) { return r.index == index; });
	auto &r = *it;
	const std::string what =
	    fmt::format("replicated_pool::resync: remote replica {} ({})", index, d.where(r));
	if (r.rp) {
		try {
			r.rp->close();
		} catch (const std::exception &) {
			// It is being replaced: how its old session ended does not matter.
		}
		r.rp.reset();
	}
	r.staged_on = nullptr; // a new remote pool registers the staging ring again
	unsigned lanes = lanes_per_replica;
	try {
		control::pool_attr a;
		r.rp = client::remote_pool::open(r.target, r.descriptor, d.master->base(), size,
		                                 &lanes, &a, r.conn);
		if (a.poolset_uuid != r.attr.poolset_uuid && !r.attr.is_zero())
			throw rpmem::error(EINVAL,
			                   "it holds another pool set (its pool set UUID "
			                   "differs): remove it so resync can re-create it");
		if (r.attr.is_zero())
			r.attr = marked_behind(a, false);
	} catch (const rpmem::error &open_err) {
		if (r.rp) {
			r.rp.reset();
			throw rpmem::error(open_err.errnum(), what + ": " + open_err.message());
		}
		// Gone (or never created): re-create it with the header it should have.
		if (r.attr.is_zero()) {
			// The master's identity and arch flags; a UUID of its own, no links
			// (its neighbours' UUIDs are not known here).
			r.attr = pmdk::to_attr(d.master->read_header(0));
			r.attr.uuid = generate_uuid();
			r.attr.prev_uuid = r.attr.next_uuid = {};
		}
		try {
			lanes = lanes_per_replica;
			// Marked behind until the copy is complete.
			const auto attr = marked_behind(r.attr, true);
			r.rp = client::remote_pool::create(r.target, r.descriptor, d.master->base(),
			                                   size, &lanes, &attr, r.conn);
		} catch (const rpmem::error &create_err) {
			throw rpmem::error(
			    create_err.errnum(),
			    fmt::format("{}: cannot open it ({}) nor re-create it ({})", what,
			                open_err.message(), create_err.message()));
		}
	}
	try {
		// Marked behind while the copy runs: an interrupted resync leaves it so.
		const auto copying = marked_behind(r.attr, true);
		r.rp->set_attr(&copying);
		for (std::size_t off = data_offset(); off < size; off += resync_chunk) {
			std::size_t n = std::min(resync_chunk, size - off);
			r.rp->flush(off, n, 0, client::flush_relaxed);
			r.rp->drain(0, 0);
			if (progress)
				progress(off + n - data_offset(), total);
		}
		// Whole now; asynchronous replication keeps the mark until a clean close.
		const auto done = marked_behind(r.attr, d.asynchronous());
		r.rp->set_attr(&done);
		r.lanes = lanes;
		d.count_lanes();
	} catch (const rpmem::error &e) {
		throw rpmem::error(e.errnum(), fmt::format("{}: copying the master failed: {}: "
		                                           "call resync({}) again",
		                                           what, e.message(), index));
	}
	{
		std::lock_guard s(d.state_mu);
		r.lost = false;
		r.error.clear();
		if (std::any_of(d.remotes.begin(), d.remotes.end(),
		                [](const remote_replica &x) { return x.lost; }))
			return;
	}
	std::lock_guard q(d.q_mu);
	d.async_error = nullptr; // every replica is back: asynchronous replication goes on
}

} // namespace rpmem
