// SPDX-License-Identifier: BSD-3-Clause
// rpmem::replicated_pool — a pool described by a pool set file (poolset(5)): the master's local
// parts, mapped contiguously through libpmem, plus every REPLICA section, local or remote.
//
//   PMEMPOOLSET
//   256M /mnt/pmem/log.part0
//   REPLICA node2 log.set          # rpmemd on node2, pool set log.set in its poolset dir
//   REPLICA node3 log.set
//
//   auto p = rpmem::replicated_pool::create("/etc/app/log.set");
//   std::memcpy(p.data().data(), record, n);
//   p.persist(p.data_offset(), n); // durable on the master, node2 and node3 when it returns
//
// Layout: a replicated pool set is a PMDK pool set. Each part starts with a PMDK pool header
// (4 KiB; signature options::signature, default "RPMEMRP", major options::major, the
// CKSUM_2K feature, a pool set UUID shared by all replicas, part and replica links as PMDK
// writes them); `pmempool info` reads them and rpmemd writes the same headers on remote
// replicas. Offsets are relative to the pool's start (the master part 0 header): data begins
// at data_offset() (4096). OPTION SINGLEHDR and NOHDRS are not supported.
//
// Fan-out: remote writes are posted to every replica and waited on together, so a persist
// costs the slowest replica's latency, not the sum. Asynchronous mode: persist() returns once
// the data is durable on the master and the local replicas and copied aside; a background
// thread replicates the copies in persist order with a bounded lag, so a replica always holds
// a prefix of the master's persists; barrier() waits for everything persisted before it.
// While a replica is written asynchronously its pool header is marked "possibly behind"
// (a compat feature bit); a clean close() or a completed resync() clears the mark. If the
// writer dies first, open() refuses the replica (ESTALE; degrade: lost until resync()) and
// `rpmem promote` refuses it without --force.
//
// Failures: by default a lost replica fails the call (rpmem::error) and every later one until
// resync(); with failure_policy::degrade the pool keeps going on the remaining replicas,
// reports the lost one (on_replica_lost, replicas()), records what it misses, reconnects it by
// itself and catches it up while the calls go on (options::reconnect; resync() does the same on
// request), in either mode: synchronous persists go to it directly meanwhile (unless it was
// dropped as too slow: under degrade a synchronous call waits on one replica at most twice the
// silence bound, connect_options::timeout or RPMEM_TIMEOUT; past it that replica is lost as
// "too slow", sent no call while it catches up, and its last round holds the calls only when
// its measured rate says that round is short; a replica whose calls each complete within it
// sets the pace, as synchronous replication does; the bound does not grow with a call's size:
// where one persist takes longer than that to move, raise connect_options::timeout); an
// asynchronous
// replica, which is no prefix of the persists while blocks move, is marked "not whole" (an
// incompat bit: open() and `rpmem promote`, even with --force, refuse it) until the catch-up's
// last round, which holds the replicator. Under degrade every remote replica is marked
// "possibly behind" from open until a clean close, as in asynchronous mode: a replica left behind
// is never taken as current. A replica unreachable when open() goes on without it cannot be
// marked on its host, so the master keeps the fact: open() lists it, durably and before it
// returns, in "<master's first part>.rpmem-behind", and every later open() takes a replica listed
// there as marked (refused under failure_policy::fail; compared and caught up under degrade)
// until a catch-up of it completes or `rpmem sync` brings it in line. One case stays open: until
// the healer reaches it (and marks it before the first byte moves) nothing on its own host says
// it is behind, so `rpmem promote` there, with the master lost, cannot tell; open() logs it
// (level 1). DRBD has the same gap without a fencing handler.
//
// Thread safety: persist/flush+drain/barrier may be called from several threads, each on a lane
// of its own (a drain() covers the calling thread's flush() calls); resync() runs beside them
// (the calls go on; the replica it brings back gets what they write meanwhile);
// create/open/close are not concurrent with anything.
//
// Handles: every call on a closed pool throws rpmem::error (EINVAL) except replicas(), lag()
// and close(); every call on a moved-from replicated_pool throws rpmem::error (EINVAL).
#pragma once

#include "rpmem/error.hpp"
#include "rpmem/export.hpp"
#include "rpmem/pool.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rpmem
{

class RPMEM_API replicated_pool
{
public:
	enum class mode {
		synchronous, // persist returns when every replica holds the range
		asynchronous // persist returns when the master holds it; replicas follow
	};
	enum class failure_policy {
		fail,   // a lost replica fails the call and every later one until resync()
		degrade // keep going on the remaining replicas; report the lost one
	};

	/** One replica as the pool set names it: index 0 is the master. */
	struct replica_status {
		std::size_t index = 0;
		bool remote = false;
		std::string where; // "target:poolset" for a remote replica, part 0's path else
		bool in_sync = true;
		std::string error; // why it was lost (empty while in sync)
		// "connected" (in sync), "lost" (the calls go on without it, recording what it
		// misses) or "catching_up" (what it misses is being pushed to it)
		std::string state = "connected";
		std::uint64_t bytes_to_go = 0; // what it misses, while lost or catching up
	};

	/** How far the replicas trail the master (asynchronous mode; zeros when synchronous). */
	struct lag_info {
		std::size_t bytes = 0;              // persisted locally, not yet on every replica
		std::size_t ranges = 0;             // persist calls behind those bytes
		std::chrono::nanoseconds oldest{0}; // age of the oldest unreplicated persist
	};

	struct options {
		mode replication = mode::synchronous;
		failure_policy on_failure = failure_policy::fail;
		/** Asynchronous mode: persist blocks while more than this many bytes, or data older
		 * than max_lag_time, wait for replication. persist() snapshots each range (the
		 * replicas get what was persisted, in persist order, never later writes): the
		 * snapshots take max_lag_bytes of memory, at least 4 MiB. A replica that answers
		 * but slowly holds the calls while it keeps up with the bound. Under
		 * failure_policy::degrade one that does not (a batch on its way to it for longer
		 * than the data path's silence bound, connect_options::timeout or RPMEM_TIMEOUT,
		 * while calls wait) is lost ("the replica is too slow") and caught up as after an
		 * outage, its last round held only when the measured rate says it is shorter than
		 * max_lag_time (DRBD's pull-ahead), and ended, the replica behind again, if it
		 * holds the calls longer than that silence bound. Several slow at once are dropped
		 * in turn: once a batch is past the bound, a replica it then waits on is dropped
		 * too when it took half the bound of the batch's time (a healthy one, which then
		 * has the batch's rest to take, is not), so each further slow replica adds about
		 * half the bound to a call's wait. Under fail the calls go at the slowest one's
		 * pace. */
		std::size_t max_lag_bytes = 64u << 20;
		std::chrono::milliseconds max_lag_time{1000};
		/** How to reach every remote replica's rpmemd (defaults: the environment; with
		 * RPMEM_CMD="cmdA|cmdB" each remote replica takes the next entry in order). */
		connect_options remote;
		/** If set, overrides `remote` per replica (index in the pool set, target, name). */
		std::function<connect_options(std::size_t replica, const std::string &target,
		                              const std::string &poolset)>
		    remote_for;
		/** Called when a replica is lost, from the thread that saw it, with no lock of the
		 * pool held: it may call the pool (replicas(), lag(); persist in synchronous mode).
		 * In asynchronous mode it runs on the replication thread, which replicates nothing
		 * meanwhile: it must not wait for replication (barrier(), close(), or a persist
		 * the lag bound would hold). The status's error says why and that resync(index)
		 * brings the replica back. */
		std::function<void(const replica_status &)> on_replica_lost;
		/** failure_policy::degrade: a lost remote replica is reconnected by itself
		 * (attempts every 50 ms, doubling up to 2 s) and caught up while the calls go on;
		 * false: only resync() brings it back. */
		bool reconnect = true;
		/** Header identity written by create() and required by open(). */
		std::array<char, 8> signature{'R', 'P', 'M', 'E', 'M', 'R', 'P', '\0'};
		std::uint32_t major = 1;
	};

	/** Creates every part of every local replica (files must not exist) and every remote
	 * replica's pool set, writes headers. Throws rpmem::error. */
	static replicated_pool create(const std::string &poolset_path, const options &opts);
	static replicated_pool create(const std::string &poolset_path);
	/** Maps the master, checks every replica's headers (signature, major, pool set UUID),
	 * connects the remote replicas. Replicas are not compared: call resync() if one is
	 * known to be behind. A remote replica still marked possibly behind (see Asynchronous
	 * mode above) is refused with ESTALE, or under failure_policy::degrade reported lost
	 * until resync(). */
	static replicated_pool open(const std::string &poolset_path, const options &opts);
	static replicated_pool open(const std::string &poolset_path);

	replicated_pool(replicated_pool &&) noexcept;
	replicated_pool &operator=(replicated_pool &&) noexcept;
	replicated_pool(const replicated_pool &) = delete;
	replicated_pool &operator=(const replicated_pool &) = delete;
	/** barrier() (asynchronous mode), then closes every replica; never throws. */
	~replicated_pool();

	/** The whole pool (header included), mapped from the master's parts. */
	std::byte *addr() const;
	std::size_t size() const;
	static constexpr std::size_t data_offset() { return 4096; }
	/** The part after the header: [data_offset(), size()). */
	std::span<std::byte> data() const;

	/** Durable on the master (and, when synchronous, on every replica) when it returns. */
	void persist(std::size_t offset, std::size_t length);
	void persist(std::span<const std::byte> range);
	/** Batching: flush() posts ranges to every replica; drain() makes the calling thread's
	 * flush() calls since its last drain durable as persist() would (the master, and when
	 * synchronous every replica), with one round trip per replica, all replicas waited on
	 * together. Each thread flushes on a lane of its own (PMDK's lanes are per thread too): a
	 * drain covers no other thread's flushes, and does not wait for them; that thread's own
	 * drain() does. */
	void flush(std::size_t offset, std::size_t length);
	void flush(std::span<const std::byte> range);
	void drain();

	/** Waits until every replica in sync holds everything persisted before the call. When
	 * asynchronous under failure_policy::degrade, each batch it waits for ends within the
	 * silence bound (see max_lag_bytes: a replica too slow is dropped), and it waits for
	 * the batch in flight and usually the next: about twice that bound behind a slow
	 * replica (4.1 s seen with 2 s in chaos); more when a replica takes each batch just
	 * within it. */
	void barrier();
	lag_info lag() const;

	std::vector<replica_status> replicas() const;
	/** Brings replica `index` back (remote: reconnects, reopening or re-creating its pool)
	 * and copies the master into it; progress(done, total) is called as bytes are copied.
	 * A remote replica that still holds its pool gets only the 64 KiB blocks that differ
	 * (block checksums computed by its rpmemd and here, compared; total is then the bytes
	 * of those blocks, progress(0, 0) when none differs); a re-created one, or one whose
	 * rpmemd cannot checksum (older than rpmem's protocol 1.2, or block-checksums = no),
	 * gets the whole pool. A re-created one gets the replica UUID and links the other
	 * replicas' headers give it; when they cannot (its neighbours in the ring are lost too and
	 * their headers were never read) it is not re-created: ENOENT says which to bring back
	 * first. It is marked possibly behind while bytes move: an interrupted resync leaves it
	 * so, and the next one finishes it. Afterwards the replica is in sync. */
	void resync(std::size_t index,
	            const std::function<void(std::size_t done, std::size_t total)> &progress = {});

	/** barrier(), then closes every replica and unmaps. Throws what the barrier or a
	 * replica's close reports; the pool is closed either way. */
	void close();

	struct RPMEM_LOCAL impl; // not exported: defined in lib/replication only

private:
	explicit replicated_pool(std::unique_ptr<impl> p);
	std::unique_ptr<impl> impl_;
};

} // namespace rpmem
