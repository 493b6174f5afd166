// SPDX-License-Identifier: BSD-3-Clause
// replicated_pool::resync: brings a lost replica back (a remote one reopened, or re-created with
// the header it should have) and copies the master into it, marked possibly behind until the
// copy is complete.
#include "replication/replicated_pool_impl.hpp"

#include "client/log.hpp"
#include "client/replica_sync.hpp"

#include <algorithm>

namespace rpmem
{

using namespace replication;

namespace
{

/** Bytes copied per step into a local replica (one flush + drain per chunk). */
constexpr std::size_t resync_chunk = 4u << 20;

using progress_fn = std::function<void(std::size_t, std::size_t)>;

/** Copies the master into a local replica, chunk by chunk, each chunk persisted. */
void copy_local(replicated_pool::impl &d, const local_copy &l, std::size_t from,
                const progress_fn &progress)
{
	const std::size_t size = d.master->size();
	for (std::size_t off = from; off < size; off += resync_chunk) {
		std::size_t n = std::min(resync_chunk, size - off);
		l.map->copy_persist(d.master->base(), off, n);
		if (progress)
			progress(off + n - from, size - from);
	}
}

/** Drops r's old session (it is being replaced: how it ended does not matter). */
void drop_session(remote_replica &r) noexcept
{
	if (r.rp) {
		try {
			r.rp->close();
		} catch (const std::exception &) {
		}
		r.rp.reset();
	}
	r.staged_on = nullptr; // a new remote pool registers the staging ring again
}

/** A new session to r: its pool opened (*marked: whether it was found marked behind), or
 *  re-created, marked behind, with the header it should have when it is gone (*created and
 *  *marked then true). Returns the lanes granted. */
unsigned reconnect(replicated_pool::impl &d, remote_replica &r, const std::string &what,
                   bool *created, bool *marked)
{
	*created = *marked = false;
	const std::size_t size = d.master->size();
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
			r.attr = with_behind_mark(a, false);
		*marked = pmdk::marked_behind(a);
		return lanes;
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
			const auto attr = with_behind_mark(r.attr, true);
			r.rp = client::remote_pool::create(r.target, r.descriptor, d.master->base(),
			                                   size, &lanes, &attr, r.conn);
			*created = *marked = true;
			return lanes;
		} catch (const rpmem::error &create_err) {
			throw rpmem::error(
			    create_err.errnum(),
			    fmt::format("{}: cannot open it ({}) nor re-create it ({})", what,
			                open_err.message(), create_err.message()));
		}
	}
}

/**
 * Brings r up to date with the master (client/replica_sync.hpp): the blocks that differ
 * (block checksums), or everything when r was just re-created or its rpmemd cannot checksum.
 * Marked behind while anything is written (an interrupted resync leaves it so); then the mark
 * is cleared unless asynchronous replication keeps it until close.
 */
void copy_remote(replicated_pool::impl &d, remote_replica &r, std::size_t from, bool created,
                 bool marked, const progress_fn &progress, const std::string &what)
{
	const std::size_t size = d.master->size();
	auto plan = client::plan_sync(
	    *r.rp, reinterpret_cast<const std::uint8_t *>(d.master->base()), from, size, created);
	if (plan.method == "delta")
		client::log(2, "{}: {} of {} blocks of {} bytes differ: {} bytes to copy", what,
		            plan.diff.differing_blocks, plan.diff.blocks, plan.diff.block,
		            plan.bytes());
	else if (!plan.fallback.empty())
		client::log(2, "{}: {}: copying the whole master instead", what, plan.fallback);
	const auto copying = with_behind_mark(r.attr, true);
	const auto done = with_behind_mark(r.attr, d.may_fall_behind());
	client::replica_destination dest(*r.rp, &copying, &done);
	client::apply_sync(dest, plan.ranges, {.found_marked = marked},
	                   [&](std::uint64_t n, std::uint64_t total) {
		                   if (progress)
			                   progress(n, total);
	                   });
	if (plan.ranges.empty() && progress)
		progress(0, 0); // in sync already: nothing to copy
}

/** r is in sync again; when no replica is lost any more, asynchronous replication goes on. */
void mark_back(replicated_pool::impl &d, remote_replica &r)
{
	{
		std::lock_guard s(d.state_mu);
		r.lost = false;
		r.error.clear();
		for (std::size_t k = 0; k < d.exports.size(); ++k)
			if (&d.remotes[k] == &r)
				d.exports[k]->set_lost(false);
		if (std::any_of(d.remotes.begin(), d.remotes.end(),
		                [](const remote_replica &x) { return x.lost; }))
			return;
	}
	d.replication->replicas_back();
}

} // namespace

void replicated_pool::resync(std::size_t index, const progress_fn &progress)
{
	auto &d = open_pool(impl_.get(), "resync");
	if (index == 0 || index >= d.ps.replicas.size())
		throw rpmem::error(EINVAL,
		                   fmt::format("replicated_pool::resync: no replica {}: give "
		                               "1..{} (0 is the master)",
		                               index, d.ps.replicas.size() - 1));
	std::unique_lock g(d.remote_mu); // no remote operation meanwhile
	for (auto &l : d.locals)
		if (l.index == index)
			return copy_local(d, l, data_offset(), progress);

	auto &r = *std::find_if(d.remotes.begin(), d.remotes.end(),
	                        [&](const remote_replica &x) { return x.index == index; });
	const std::string what =
	    fmt::format("replicated_pool::resync: remote replica {} ({})", index, d.where(r));
	try {
		drop_session(r);
		bool created = false, marked = false;
		const unsigned lanes = reconnect(d, r, what, &created, &marked);
		try {
			copy_remote(d, r, data_offset(), created, marked, progress, what);
		} catch (const rpmem::error &e) {
			throw rpmem::error(e.errnum(),
			                   fmt::format("{}: copying the master failed: {}: "
			                               "call resync({}) again",
			                               what, e.message(), index));
		}
		r.lanes = lanes;
		d.count_lanes();
	} catch (const rpmem::error &e) {
		// Not in sync, whatever it was before: lost, with this failure as its reason (and
		// its header still marked behind when the copy had begun).
		d.mark_lost(r.index, e.message());
		{
			std::lock_guard s(d.state_mu);
			r.error = e.message();
		}
		g.unlock();
		d.notify_lost();
		throw;
	}
	mark_back(d, r);
}

} // namespace rpmem
