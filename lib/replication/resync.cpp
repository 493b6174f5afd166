// SPDX-License-Identifier: BSD-3-Clause
// Bringing a remote replica back while the calls go on (impl::catch_up: the healer's under
// failure_policy::degrade, heal.cpp, and replicated_pool::resync's): reopened, or re-created with
// the header it should have; what it lacks pushed in rounds, marked possibly behind while bytes
// move (client/replica_sync.hpp), the last round with the calls held.
#include "replication/replicated_pool_impl.hpp"

#include "async/pipeline.hpp"

#include "client/deadline_guard.hpp"
#include "client/log.hpp"
#include "client/replica_sync.hpp"
#include "client/windowed_moves.hpp"

#include <algorithm>
#include <optional>

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
/** Takes r's session away (remote_mu held exclusively, as the report reads r.rp under it);
 *  the caller ends it after letting go of the lock (end_session). */
std::unique_ptr<client::remote_pool> take_session(remote_replica &r) noexcept
{
	r.staged_on = nullptr; // a new remote pool registers the staging ring again
	return std::move(r.rp);
}

/** Ends a lost replica's old session with no lock held: its close may wait for the control
 *  timeout (a cut link), and the calls, which hold remote_mu shared, must not wait with it. */
void end_session(std::unique_ptr<client::remote_pool> old) noexcept
{
	if (!old)
		return;
	try {
		old->close();
	} catch (const std::exception &) {
	}
}

/** The replicas' own UUIDs (part 0's) as the pool set's headers known here say them: a
 *  replica's own header, else its neighbours' links to it. Known: the master's, the local
 *  replicas', and those of the remote replicas whose header was read (not one lost at open). */
class replica_ring
{
public:
	explicit replica_ring(const replicated_pool::impl &d) : ids_(d.ps.replicas.size())
	{
		struct known {
			std::size_t index;
			uuid self, prev, next;
		};
		std::vector<known> k;
		const auto m = d.master->read_header(0);
		k.push_back({0, m.links.self, m.links.prev_repl, m.links.next_repl});
		for (const auto &l : d.locals) {
			const auto h = l.map->read_header(0);
			k.push_back({l.index, h.links.self, h.links.prev_repl, h.links.next_repl});
		}
		for (const auto &x : d.remotes)
			if (!x.attr.is_zero())
				k.push_back(
				    {x.index, x.attr.uuid, x.attr.prev_uuid, x.attr.next_uuid});
		// A replica's own UUID first, then what its neighbours link to.
		for (const auto &x : k)
			learn(x.index, x.self);
		for (const auto &x : k) {
			learn(before(x.index), x.prev);
			learn(after(x.index), x.next);
		}
	}

	std::size_t before(std::size_t i) const { return (i + ids_.size() - 1) % ids_.size(); }
	std::size_t after(std::size_t i) const { return (i + 1) % ids_.size(); }
	const std::optional<uuid> &id(std::size_t i) const { return ids_[i]; }

private:
	void learn(std::size_t i, const uuid &u)
	{
		if (!ids_[i] && u != uuid{})
			ids_[i] = u;
	}
	std::vector<std::optional<uuid>> ids_;
};

/** The attributes remote replica r is re-created with when it is gone and its header was never
 *  read (lost at open): the master's identity and arch flags, and the UUID and links the other
 *  replicas' headers expect of it. Throws what to do when those are not known (its
 *  neighbours are lost too and their headers not read). */
control::pool_attr recreated_attr(const replicated_pool::impl &d, const remote_replica &r)
{
	const replica_ring ring(d);
	const auto prev = ring.before(r.index), next = ring.after(r.index);
	if (!ring.id(prev) || !ring.id(r.index) || !ring.id(next)) {
		std::string lost;
		std::size_t nlost = 0;
		for (const auto &x : d.remotes)
			if ((x.index == prev || x.index == next) && x.attr.is_zero()) {
				lost += fmt::format("{}{} ({})", nlost ? " and " : "", x.index,
				                    d.where(x));
				++nlost;
			}
		if (nlost == 0)
			throw rpmem::error(EINVAL,
			                   fmt::format("its replica UUID and links are not known: "
			                               "the headers of replicas {} and {} do not "
			                               "name it (check the pool set with rpmem "
			                               "verify)",
			                               prev, next));
		throw rpmem::error(
		    ENOENT, fmt::format("its replica UUID and links are not known: "
		                        "the other replicas' headers say them, but "
		                        "replica {} next to it in the ring {} lost too, "
		                        "{} header never read: bring {} back first "
		                        "(resync), then this one",
		                        lost, nlost > 1 ? "are" : "is", nlost > 1 ? "their" : "its",
		                        nlost > 1 ? "one of them" : "it"));
	}
	auto a = with_behind_mark(pmdk::to_attr(d.master->read_header(0)), false);
	a.uuid = *ring.id(r.index);
	a.prev_uuid = *ring.id(prev);
	a.next_uuid = *ring.id(next);
	return a;
}

/** A new session to r: its pool opened (*marked: whether it was found marked behind), or
 *  re-created, marked behind, with the header it should have when it is gone (*created and
 *  *marked then true). Returns the lanes granted. r.attr changes only to what r's header says
 *  from now on (read from it, or written by the re-create). */
unsigned reconnect(replicated_pool::impl &d, remote_replica &r, const std::string &what,
                   bool *created, bool *marked)
{
	*created = *marked = false;
	const std::size_t size = d.master->size();
	unsigned lanes = lanes_per_replica;
	try {
		control::pool_attr a;
		d.set_session(r, client::remote_pool::open(r.target, r.descriptor, d.master->base(),
		                                           size, &lanes, &a, r.conn));
		if (a.poolset_uuid != r.attr.poolset_uuid && !r.attr.is_zero())
			throw rpmem::error(EINVAL,
			                   "it holds another pool set (its pool set UUID "
			                   "differs): remove it so resync can re-create it");
		if (r.attr.is_zero())
			r.attr = pmdk::with_rebuilding_mark(with_behind_mark(a, false), false);
		*marked = pmdk::marked_behind(a) || pmdk::marked_rebuilding(a);
		return lanes;
	} catch (const rpmem::error &open_err) {
		if (r.rp) {
			d.set_session(r, nullptr);
			throw rpmem::error(open_err.errnum(), what + ": " + open_err.message());
		}
		// Gone (or never created, or not reachable): re-create it with the header it
		// should have. Kept in r.attr only once written: were the create refused (the
		// pool is there after all), a later open adopts the header it finds.
		try {
			const auto want = r.attr.is_zero() ? recreated_attr(d, r) : r.attr;
			lanes = lanes_per_replica;
			// Marked behind until the copy is complete.
			const auto attr = with_behind_mark(want, true);
			d.set_session(r, client::remote_pool::create(r.target, r.descriptor,
			                                             d.master->base(), size, &lanes,
			                                             &attr, r.conn));
			r.attr = want;
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

/** r is in sync again (remote_mu held exclusively); when no replica is lost any more,
 *  asynchronous replication goes on. Returns whether none is. */
bool mark_back(replicated_pool::impl &d, remote_replica &r)
{
	std::lock_guard s(d.state_mu);
	r.lost = false;
	r.compare = false;
	r.catching_up = false;
	r.error.clear();
	d.lost_count.fetch_sub(1, std::memory_order_release);
	for (std::size_t k = 0; k < d.exports.size(); ++k)
		if (&d.remotes[k] == &r)
			d.exports[k]->set_lost(false);
	return std::none_of(d.remotes.begin(), d.remotes.end(),
	                    [](const remote_replica &x) { return x.lost; });
}

/** What a reconnected replica lacks, into its dirty map: everything when it was re-created;
 *  what block checksums find when its changes from before the loss are not known. */
void mark_lacking(replicated_pool::impl &d, remote_replica &r, const std::string &what,
                  bool created)
{
	const auto begin = replicated_pool::data_offset();
	if (created) {
		r.dirty->mark(begin, d.master->size() - begin);
	} else if (r.compare) {
		auto plan = client::plan_sync(
		    *r.rp, reinterpret_cast<const std::uint8_t *>(d.master->base()), begin,
		    d.master->size(), false);
		client::log(2, "{}: {} bytes differ from the master ({})", what, plan.bytes(),
		            plan.method == "delta" ? "block checksums compared" : plan.fallback);
		r.dirty->mark(plan.ranges);
	}
}

/** A catch-up's rounds (apply_sync_rounds' next()): what the dirty map holds, round after
 *  round, until one is the last (client::last_catch_up_round); that one is taken with
 *  remote_mu held exclusively, so no call changes the pool meanwhile, and stays held until
 *  release(). The round in flight counts as the replica's bytes to go. */
class catch_up_rounds
{
public:
	catch_up_rounds(replicated_pool::impl &d, remote_replica &r)
	    : d_(d), r_(r), held_(d.remote_mu, std::defer_lock)
	{
		std::lock_guard s(d_.state_mu);
		slow_ = r_.slow;
	}
	~catch_up_rounds() { in_flight(0); }

	std::vector<client::byte_span> operator()()
	{
		if (held_.owns_lock())
			return {};
		{
			std::lock_guard s(d_.state_mu);
			if (d_.heal_stop)
				throw rpmem::error(ECANCELED, "the pool is closing");
		}
		taken_ = r_.dirty->take();
		std::uint64_t bytes = bytes_of(taken_);
		++rounds_;
		const auto now = std::chrono::steady_clock::now();
		// A replica dropped for being too slow: by its measured rate, so that the calls are
		// held no longer than the lag bound would hold them (synchronous mode: a quarter
		// of the call bound).
		const bool last =
		    slow_ ? client::last_round_of_slow(bytes, previous_, now - round_start_,
		                                       d_.opts.replication ==
		                                               replicated_pool::mode::asynchronous
		                                           ? d_.opts.max_lag_time
		                                           : d_.call_bound() / 4)
		          : client::last_catch_up_round(bytes, previous_, rounds_);
		round_start_ = now;
		if (last) {
			held_.lock();
			// Bounded under degrade as a batch is (asynchronous) or a call
			// (synchronous): past it the session fails, the round with it, and the
			// calls go on; the replica is then slow.
			const auto bound =
			    d_.congestion_bound().count() ? d_.congestion_bound() : d_.call_bound();
			hold_bound_.emplace(bound, [this, bound] {
				{
					std::lock_guard s(d_.state_mu);
					if (d_.heal_stop)
						return; // the pool is closing: no call is left to
						        // hold
				}
				r_.rp->give_up(
				    ETIMEDOUT,
				    d_.congestion_bound().count()
				        ? async::held_too_long(bound)
				        : fmt::format(
				              "the catch-up's last round, which holds the "
				              "calls, took longer than the call bound ({} ms): "
				              "the replica is too slow for it now; it stays "
				              "behind, its changes recorded",
				              bound.count()));
			});
			auto rest = r_.dirty->take();
			bytes += bytes_of(rest);
			taken_.insert(taken_.end(), rest.begin(), rest.end());
		}
		previous_ = bytes;
		moved_ += bytes;
		in_flight(bytes);
		return taken_;
	}
	/** The round in flight goes back to the map: it may not have landed. A last round that
	 *  failed, the calls held, leaves the replica slow: its next catch-up holds the calls by
	 *  its rate. */
	void give_back()
	{
		hold_bound_.reset();
		r_.dirty->mark(taken_);
		in_flight(0);
		if (held_.owns_lock()) {
			std::lock_guard s(d_.state_mu);
			r_.slow = true;
		}
	}
	/** The last round landed: its bound no longer applies. */
	void landed() { hold_bound_.reset(); }
	/** The calls may go on again. */
	void release()
	{
		hold_bound_.reset();
		held_.unlock();
	}
	/** Whether the last round holds the calls. */
	bool holding() const { return held_.owns_lock(); }
	/** Whether the replica was dropped for being too slow: no call goes to it meanwhile. */
	bool slow() const { return slow_; }
	int rounds() const { return rounds_; }
	std::uint64_t moved() const { return moved_; }

private:
	static std::uint64_t bytes_of(const std::vector<client::byte_span> &v)
	{
		std::uint64_t n = 0;
		for (const auto &x : v)
			n += x.size();
		return n;
	}
	void in_flight(std::uint64_t bytes)
	{
		std::lock_guard s(d_.state_mu);
		r_.moving = bytes;
	}

	replicated_pool::impl &d_;
	remote_replica &r_;
	std::unique_lock<replication::writer_first_mutex> held_;
	std::vector<client::byte_span> taken_;
	int rounds_ = 0;
	std::uint64_t moved_ = 0, previous_ = 0;
	bool slow_ = false; // remote_replica::slow when the catch-up began
	std::optional<client::deadline_guard> hold_bound_; // while the last round holds the calls
	std::chrono::steady_clock::time_point round_start_ = std::chrono::steady_clock::now();
};

/** Synchronous mode's mover: the persists go to the replica directly from its first move on
 *  (it is marked by then, or was found marked), so that a block moved stays current and moves
 *  once, as librpmem's catch-up does (client/windowed_moves.hpp); each move is announced to
 *  the window and takes lane 0 in turns with the calls. A round that holds the calls has
 *  nothing to forward, and arms nothing. */
class forwarding_moves final : public client::sync_destination
{
public:
	forwarding_moves(replicated_pool::impl &d, remote_replica &r, client::sync_destination &to,
	                 const catch_up_rounds &rounds)
	    : d_(d), r_(r), to_(to), rounds_(rounds)
	{
	}
	void mark() override { to_.mark(); }
	void clear() override { to_.clear(); }
	void move(std::uint64_t offset, std::uint64_t length) override
	{
		// A replica dropped for being slow is sent no call while it catches up: the calls
		// would wait for it again.
		if (!r_.forwarding && !rounds_.holding() && !rounds_.slow()) {
			std::unique_lock g(d_.remote_mu); // no call in flight sees half of it
			r_.forwarding = std::make_unique<client::catch_up_forwarding>(*r_.dirty);
			d_.forwarding_count.fetch_add(1, std::memory_order_release);
		}
		if (!r_.forwarding) {
			to_.move(offset, length);
			return;
		}
		client::windowed_moves(to_, r_.forwarding->window, r_.forwarding->lane0)
		    .move(offset, length);
	}
	/** Ends the forwarding, remote_mu held exclusively (by the last round, or here when
	 *  the catch-up failed before it); the bytes that went to the replica directly. */
	std::uint64_t disarm()
	{
		if (!r_.forwarding)
			return 0;
		std::unique_lock<replication::writer_first_mutex> g(d_.remote_mu, std::defer_lock);
		if (!rounds_.holding())
			g.lock();
		const auto bytes = r_.forwarding->bytes.load();
		r_.forwarding.reset();
		d_.forwarding_count.fetch_sub(1, std::memory_order_release);
		return bytes;
	}

private:
	replicated_pool::impl &d_;
	remote_replica &r_;
	client::sync_destination &to_;
	const catch_up_rounds &rounds_;
};

} // namespace

void replicated_pool::impl::catch_up(remote_replica &r, const progress_fn &progress)
{
	const std::string what = fmt::format("remote replica {} ({})", r.index, where(r));
	bool created = false, marked = false;
	std::unique_ptr<client::remote_pool> old;
	{
		std::unique_lock g(remote_mu); // the report reads r.rp under it
		std::lock_guard s(session_mu);
		old = take_session(r);
	}
	end_session(std::move(old));
	const unsigned lanes = reconnect(*this, r, what, &created, &marked);
	mark_lacking(*this, r, what, created);
	// Written asynchronously, the replica is a prefix of the persists outside a catch-up; in
	// one it holds blocks from different moments, and its header says it is not whole.
	const bool async = opts.replication == mode::asynchronous;
	const auto copying = pmdk::with_rebuilding_mark(with_behind_mark(r.attr, true), async);
	const auto done =
	    pmdk::with_rebuilding_mark(with_behind_mark(r.attr, may_fall_behind()), false);
	client::replica_destination dest(*r.rp, &copying, &done);
	catch_up_rounds rounds(*this, r);
	// Asynchronous mode forwards nothing: its replicator sends in persist order, and a
	// catching-up replica gets the recorded blocks only.
	forwarding_moves forwarded(*this, r, dest, rounds);
	try {
		client::apply_sync_rounds(async ? static_cast<client::sync_destination &>(dest)
		                                : forwarded,
		                          std::ref(rounds), {.found_marked = marked && !async},
		                          [&](std::uint64_t n, std::uint64_t total) {
			                          if (progress)
				                          progress(n, total);
		                          });
	} catch (...) {
		rounds.give_back();
		forwarded.disarm();
		throw;
	}
	rounds.landed();
	if (rounds.moved() == 0 && progress)
		progress(0, 0); // in sync already: nothing to copy
	r.lanes = lanes;
	count_lanes();
	const auto direct = forwarded.disarm();
	{
		std::lock_guard s(state_mu);
		r.slow = false; // it kept up: the next loss is judged afresh
	}
	const bool all_back = mark_back(*this, r);
	rounds.release();
	if (r.unmarked) {
		// Its header says "possibly behind" now (marked before the first byte moved):
		// the master's record need not.
		{
			std::lock_guard g(record_mu);
			r.unmarked = false;
		}
		try {
			write_record();
		} catch (const rpmem::error &e) {
			// Listed still: the next open compares it once more, which costs time only.
			client::log(1, "{}: {}", what, e.what());
		}
	}
	client::log(1,
	            "{}: in sync again ({} bytes moved in {} round(s); {} bytes of persists went "
	            "to it directly meanwhile)",
	            what, rounds.moved(), rounds.rounds(), direct);
	if (all_back)
		replication->replicas_back();
}

void replicated_pool::resync(std::size_t index, const progress_fn &progress)
{
	auto &d = open_pool(impl_.get(), "resync");
	if (index == 0 || index >= d.ps.replicas.size())
		throw rpmem::error(EINVAL,
		                   fmt::format("replicated_pool::resync: no replica {}: give "
		                               "1..{} (0 is the master)",
		                               index, d.ps.replicas.size() - 1));
	for (auto &l : d.locals)
		if (l.index == index) {
			std::unique_lock g(d.remote_mu); // written by every call: none meanwhile
			return copy_local(d, l, data_offset(), progress);
		}
	auto &r = *std::find_if(d.remotes.begin(), d.remotes.end(),
	                        [&](const remote_replica &x) { return x.index == index; });
	std::lock_guard one(d.heal_mu); // one catch-up at a time: the healer's or this
	{
		// Fenced: from here the calls go on without it and record what it misses; it is
		// marked behind first, so no call is acknowledged without it while it is not.
		std::unique_lock g(d.remote_mu);
		if (d.active(r)) {
			try {
				const auto behind = with_behind_mark(r.attr, true);
				r.rp->set_attr(&behind);
			} catch (const rpmem::error &) {
				// A replica that cannot be marked is reconnected (and marked)
				// below.
			}
		}
		d.fence(r, "resync() brings it in line with the master");
		std::lock_guard s(d.state_mu);
		r.compare = true; // whatever it was: compared, then every change since
		r.catching_up = true;
	}
	try {
		d.catch_up(r, progress);
	} catch (const rpmem::error &e) {
		{
			std::lock_guard s(d.state_mu);
			r.catching_up = false;
		}
		// Not in sync: lost, with this failure as its reason (and its header still marked
		// behind when the copy had begun).
		const auto why = fmt::format("replicated_pool::resync: remote replica {} ({}): {}: "
		                             "call resync({}) again",
		                             index, d.where(r), e.message(), index);
		{
			std::lock_guard s(d.state_mu);
			r.error = why;
			d.lost_unreported.push_back({r.index, true, d.where(r), false, why});
			d.lost_unreported.back().state = "lost";
			d.any_unreported.store(true, std::memory_order_release);
		}
		d.notify_lost(); // on_replica_lost hears of it, as of any loss
		throw rpmem::error(e.errnum(), why);
	}
}

} // namespace rpmem
