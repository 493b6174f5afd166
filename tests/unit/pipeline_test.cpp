// SPDX-License-Identifier: BSD-3-Clause
// The asynchronous replication engine (lib/async/pipeline) against a sink that records what it
// is sent: snapshots reach the sink in one global order that keeps each thread's persists in
// the order it made them and a persist that returned before another began ahead of it; each
// snapshot holds the bytes of its call, not later writes; the staging ring wraps and persists
// wait for room. Many writer threads at once, so the sanitizer runs check the copy a writer
// makes outside the lock is published before the sink reads it. No fabric.
#include "async/pipeline.hpp"

#include "../support/proc_state.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace rpmem::async;

namespace
{

/** One persisted record: who wrote it and its number; the rest of its bytes are filler. */
struct record {
	std::uint32_t thread;
	std::uint32_t check; // ~thread: a torn or overwritten record fails it
	std::uint64_t number;
	std::array<std::uint8_t, 240> filler;
};
static_assert(sizeof(record) == 256);

/** Records what it is sent, in order, after checking each record is whole. */
class recording_sink final : public sink
{
public:
	void send(const std::vector<piece> &batch, const staging_ring &) override
	{
		// On the replicator's thread: no Catch assertion here (not thread-safe); the test
		// checks what was recorded.
		std::lock_guard g(mu_);
		for (const auto &p : batch) {
			if (p.r.length % sizeof(record) != 0)
				++bad_pieces;
			for (std::size_t at = 0; at + sizeof(record) <= p.r.length;
			     at += sizeof(record)) {
				record r;
				std::memcpy(&r, p.src + at, sizeof r);
				seen.push_back(r);
			}
		}
		++batches;
	}
	std::vector<record> seen;
	std::size_t batches = 0;
	std::size_t bad_pieces = 0;

private:
	std::mutex mu_;
};

record make(std::uint32_t thread, std::uint64_t number)
{
	record r{};
	r.thread = thread;
	r.check = ~thread;
	r.number = number;
	r.filler.fill(static_cast<std::uint8_t>(number));
	return r;
}

} // namespace

TEST_CASE("pipeline: many writers, one order that keeps each writer's persists in order and "
          "each snapshot's bytes as they were at its call",
          "[pipeline]")
{
	constexpr std::uint32_t writers = 4;
	constexpr std::uint64_t each = 20000; // 4 x 20000 x 256 B = 20 MB through a 4 MiB ring
	std::vector<record> pool(writers * each);
	recording_sink out;
	bounds b;
	b.max_lag_bytes = 1 << 20; // the ring is 4 MiB: it wraps, and persists wait for room
	pipeline p(b, out);
	std::vector<std::thread> threads;
	for (std::uint32_t t = 0; t < writers; ++t)
		threads.emplace_back([&, t] {
			for (std::uint64_t i = 0; i < each; ++i) {
				const std::size_t slot = t * each + i;
				pool[slot] = make(t, i);
				const auto *bytes =
				    reinterpret_cast<const std::byte *>(&pool[slot]);
				p.persist({slot * sizeof(record), sizeof(record)}, bytes);
				// The application may write the range again once persist returned:
				// the replicas get what was persisted.
				std::memset(&pool[slot], 0xff, sizeof(record));
			}
		});
	for (auto &t : threads)
		t.join();
	p.barrier();
	CHECK(out.bad_pieces == 0);
	REQUIRE(out.seen.size() == writers * each);
	std::vector<std::uint64_t> next(writers, 0);
	for (const auto &r : out.seen) {
		REQUIRE(r.thread < writers);
		REQUIRE(r.check == ~r.thread);
		REQUIRE(r.number == next[r.thread]); // each writer's persists in its order
		REQUIRE(r.filler[17] == static_cast<std::uint8_t>(r.number));
		++next[r.thread];
	}
	const auto st = p.status();
	CHECK(st.enqueued == writers * each);
	CHECK(st.replicated == writers * each);
	CHECK(st.lag_bytes == 0);
	p.finish();
}

TEST_CASE("pipeline: a persist that returned before another began is ahead of it", "[pipeline]")
{
	// Two threads take turns: each persists only after the other's persist returned, so
	// their records must reach the sink alternating, in the order of the turns.
	constexpr std::uint64_t turns = 5000;
	std::vector<record> pool(2 * turns);
	recording_sink out;
	pipeline p(bounds{}, out);
	std::atomic<std::uint64_t> turn{0};
	auto writer = [&](std::uint32_t me) {
		for (std::uint64_t k = me; k < turns; k += 2) {
			while (turn.load(std::memory_order_acquire) != k)
				std::this_thread::yield();
			pool[k] = make(me, k);
			p.persist({k * sizeof(record), sizeof(record)},
			          reinterpret_cast<const std::byte *>(&pool[k]));
			turn.store(k + 1, std::memory_order_release);
		}
	};
	std::thread a(writer, 0), c(writer, 1);
	a.join();
	c.join();
	p.barrier();
	REQUIRE(out.seen.size() == turns);
	for (std::uint64_t k = 0; k < turns; ++k) {
		REQUIRE(out.seen[k].number == k);
		REQUIRE(out.seen[k].thread == k % 2);
	}
	p.finish();
}

namespace
{

/** Holds the replicator in its first send() until opened. */
class gated_sink final : public sink
{
public:
	void send(const std::vector<piece> &, const staging_ring &) override
	{
		std::unique_lock lk(mu_);
		cv_.wait(lk, [&] { return open_; });
	}
	void open()
	{
		{
			std::lock_guard g(mu_);
			open_ = true;
		}
		cv_.notify_all();
	}

private:
	std::mutex mu_;
	std::condition_variable cv_;
	bool open_ = false;
};

} // namespace

TEST_CASE("pipeline: persists that wait because the replicas fell behind are counted", "[pipeline]")
{
	std::vector<std::byte> pool(5u << 20, std::byte{7});
	bounds b;
	b.max_lag_bytes = 1 << 20; // the ring is 4 MiB, snapshots at most 1 MiB each
	SECTION("the lag bound")
	{
		recording_sink out;
		pipeline p(b, out);
		// 2 MiB queued at once is over the 1 MiB bound: the call waits until it is sent.
		p.persist({0, 2u << 20}, pool.data());
		const auto st = p.status();
		CHECK(st.lag_waits == 1);
		CHECK(st.room_waits == 0);
		p.finish();
	}
	SECTION("room in the staging ring")
	{
		gated_sink out;
		pipeline p(b, out);
		// Four 1 MiB snapshots fill the ring while the replicator is held in send().
		for (std::size_t i = 0; i < 4; ++i)
			p.snapshot({i << 20, 1u << 20}, pool.data() + (i << 20));
		CHECK(p.status().room_waits == 0);
		std::atomic<pid_t> tid{0};
		std::thread fifth([&] {
			tid = gettid();
			p.snapshot({4u << 20, 1u << 20}, pool.data() + (4u << 20));
		});
		// Until the fifth snapshot sleeps waiting for room (bounded: the test's timeout).
		while (tid.load() == 0 || rpmem::test::thread_state(::getpid(), tid.load()) != 'S')
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		out.open();
		fifth.join();
		const auto st = p.status();
		CHECK(st.room_waits == 1);
		CHECK(st.max_room_wait > clock_type::duration::zero());
		CHECK(st.lag_waits == 0);
		p.finish();
	}
}

namespace
{

/** Holds the replicator in send() until congested() has dropped `replicas` replicas, one per
 *  time it is asked after declining `declines` times (as a sink does while the replicator is
 *  between replicas); then send() fails as a dropped replica's does. Once all are dropped it
 *  has nothing left to drop: false. */
class congested_sink final : public sink
{
public:
	congested_sink(int declines, int replicas) : declines_(declines), replicas_(replicas) {}
	void send(const std::vector<piece> &, const staging_ring &) override
	{
		std::unique_lock lk(mu_);
		cv_.wait(lk, [&] { return dropped_ == replicas_; });
		throw std::runtime_error("the replicas were given up");
	}
	bool congested(clock_type::duration sending) override
	{
		std::lock_guard g(mu_);
		asked.push_back(sending);
		if (static_cast<int>(asked.size()) <= declines_ || dropped_ == replicas_)
			return false;
		++dropped_;
		cv_.notify_all();
		return true;
	}
	std::vector<clock_type::duration> asked; // read once the pipeline is finished

private:
	std::mutex mu_;
	std::condition_variable cv_;
	int declines_, replicas_;
	int dropped_ = 0;
};

/** A 2 MiB persist over the 1 MiB lag bound, on a pipeline whose congestion bound is 50 ms:
 *  the call waits for a batch that never arrives until the sink gives its replicas up. */
progress persist_through(congested_sink &out)
{
	std::vector<std::byte> pool(2u << 20, std::byte{7});
	bounds b;
	b.max_lag_bytes = 1 << 20;
	b.fail_on_error = false; // the sink's failure is kept, not thrown by the calls
	b.congestion = std::chrono::milliseconds(50);
	pipeline p(b, out);
	p.persist({0, 2u << 20}, pool.data());
	auto st = p.status();
	CHECK(st.lag_waits == 1);
	CHECK(p.error() != nullptr);
	return st;
}

} // namespace

TEST_CASE("pipeline: a call held by a batch on its way longer than the congestion bound tells the "
          "sink, again until it acts",
          "[pipeline]")
{
	congested_sink out(2, 1);
	const auto st = persist_through(out);
	CHECK(st.congestions == 1);
	// Declined twice, then acted; asked again, maybe, before the batch ended: nothing left.
	REQUIRE(out.asked.size() >= 3);
	for (const auto &d : out.asked)
		CHECK(d > std::chrono::milliseconds(50));
}

TEST_CASE("pipeline: after the sink dropped one replica the batch waits on, it is asked again "
          "and drops the next slow one: the batch does not wait on it unbounded",
          "[pipeline]")
{
	// Two links throttled at once: once per batch, the second held a call 10 s in chaos.
	congested_sink out(0, 2);
	const auto st = persist_through(out);
	CHECK(st.congestions == 2);
	REQUIRE(out.asked.size() >= 2);
}
