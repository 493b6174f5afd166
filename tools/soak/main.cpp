// SPDX-License-Identifier: BSD-3-Clause
// rpmem-soak: a long run of every persist kind against a real rpmemd, then a byte-exact check
// of the replica (issue 6, "Soak").
//
//   rpmem-soak [options] TARGET POOLSET
//
// T threads, each owning L lanes; each lane owns a slice of the pool. Threads write random ranges
// (1 byte .. --max-range, any alignment) into their slices and make them durable with a random
// kind: persist, relaxed persist, flush (non-relaxed), deep_persist, or a batch of relaxed flushes
// (with an occasional plain persist among them) spread over the thread's lanes followed by a
// drain of each lane. A range is acknowledged when
// its call (or its drain) returns; then its checksum goes to the checksum log and the range into
// a last-writer map. The content of every write is a function of (seed, operation number, pool
// offset), so the expected replica is known without keeping copies: at the end the whole pool is
// read back through the pool handle (and, with --replica-file, from the single part file after
// close) and compared byte for byte; ranges no later write touched are also checked against their
// logged checksum. Exit status 0 only with zero mismatches and no error.
//
// Checksum log (--log): one line per acknowledged range:
//   <op> <thread> <lane> <kind> <offset> <length> <checksum hex>
// TARGET and POOLSET as for rpmem_create; RPMEM_CMD and RPMEM_SSH* say how to reach rpmemd.
#include "history.hpp"

namespace
{

using namespace rpmem::soak;

class soak
{
public:
	explicit soak(const options &o) : o_(o), content_{o.seed}, log_(o.log)
	{
		void *p = mmap(nullptr, o.pool_size, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED)
			throw rpmem::error(errno,
			                   fmt::format("cannot map {} bytes for the local pool: "
			                               "lower --pool-size",
			                               o.pool_size));
		mem_ = static_cast<std::uint8_t *>(p);
	}
	~soak() { munmap(mem_, o_.pool_size); }
	soak(const soak &) = delete;
	soak &operator=(const soak &) = delete;

	int run()
	{
		rpmem::control::pool_attr attr;
		std::memcpy(attr.signature.data(), "RPMEMSOK", 8);
		attr.major = 1;
		for (int i = 0; i < 16; ++i)
			attr.uuid[i] = static_cast<std::uint8_t>(o_.seed >> (i % 8 * 8)) ^ 0x5a;
		try {
			remote_pool::remove(o_.target, o_.poolset, rpmem::client::remove_force);
		} catch (const rpmem::error &) {
		}
		unsigned nlanes = o_.threads * o_.lanes;
		pool_ =
		    remote_pool::create(o_.target, o_.poolset, mem_, o_.pool_size, &nlanes, &attr);
		if (nlanes < o_.threads * o_.lanes)
			throw rpmem::error(EINVAL,
			                   fmt::format("{} granted only {} lanes, {} threads × "
			                               "{} lanes need {}: lower --threads "
			                               "or --lanes",
			                               pool_->host(), nlanes, o_.threads, o_.lanes,
			                               o_.threads * o_.lanes));
		make_slices();
		fmt::print("rpmem-soak: {} threads × {} lanes on {}:{} ({} MiB, ranges up to {} "
		           "bytes, seed {}) for {} s\n",
		           o_.threads, o_.lanes, o_.target, o_.poolset, o_.pool_size >> 20,
		           o_.max_range, o_.seed, o_.seconds);
		std::fflush(stdout);
		initial_fill();

		auto start = clock_type::now();
		auto deadline = start + std::chrono::duration_cast<clock_type::duration>(
		                            std::chrono::duration<double>(o_.seconds));
		std::vector<std::thread> ts;
		for (unsigned t = 0; t < o_.threads; ++t)
			ts.emplace_back([this, t, deadline] { worker(t, deadline); });
		progress(start, deadline);
		for (auto &t : ts)
			t.join();
		double secs = std::chrono::duration<double>(clock_type::now() - start).count();

		fmt::print(
		    "rpmem-soak: {} operations, {} ranges, {:.1f} MiB acknowledged in {:.1f} s "
		    "({:.0f} ops/s, {:.1f} MiB/s)\n",
		    t_.ops.load(), t_.ranges.load(), double(t_.bytes.load()) / (1 << 20), secs,
		    double(t_.ops.load()) / secs, double(t_.bytes.load()) / (1 << 20) / secs);
		for (int k = 1; k < 6; ++k)
			fmt::print("  {:<16} {:>12} operations\n", kind_names[k],
			           t_.per_kind[k].load());
		if (!failure_.empty()) {
			fmt::print(stderr, "rpmem-soak: FAILED: {}\n", failure_);
			return 1;
		}

		std::vector<std::uint8_t> replica(o_.pool_size - header);
		const std::size_t chunk = 4 << 20;
		for (std::size_t off = header; off < o_.pool_size; off += chunk)
			pool_->read(replica.data() + (off - header), off,
			            std::min(chunk, o_.pool_size - off), 0);
		auto via_pool = verify(replica.data(), "read back through the pool");
		auto local = verify(mem_ + header, "local pool (self-check of rpmem-soak)");
		pool_->close();
		pool_.reset();
		bool bad = via_pool.mismatched_bytes || via_pool.checksum_mismatches ||
		           local.mismatched_bytes;
		if (!o_.replica_file.empty()) {
			auto file = read_part(o_.replica_file);
			auto r = verify(file.data(), "replica part file " + o_.replica_file);
			bad = bad || r.mismatched_bytes || r.checksum_mismatches;
		}
		if (!o_.keep) {
			try {
				remote_pool::remove(o_.target, o_.poolset,
				                    rpmem::client::remove_force);
			} catch (const rpmem::error &e) {
				fmt::print(stderr,
				           "rpmem-soak: removing the pool afterwards failed: {}\n",
				           e.what());
			}
		}
		fmt::print("rpmem-soak: {}: bytes {} operations {} mismatches {}\n",
		           bad ? "FAILED" : "PASSED", t_.bytes.load(), t_.ops.load(),
		           via_pool.mismatched_bytes + via_pool.checksum_mismatches);
		return bad ? 1 : 0;
	}

private:
	void make_slices()
	{
		unsigned n = o_.threads * o_.lanes;
		std::uint64_t usable = o_.pool_size - header;
		std::uint64_t each = usable / n / 8 * 8;
		if (each < 64)
			throw rpmem::error(EINVAL, "pool too small for that many lanes: raise "
			                           "--pool-size or lower --threads/--lanes");
		for (unsigned i = 0; i < n; ++i) {
			std::uint64_t b = header + i * each;
			std::uint64_t e = i + 1 == n ? o_.pool_size : b + each;
			slices_.push_back(slice{b, e, i, {}, {}});
		}
	}

	/** Operation 0 writes the whole pool past the header, so every byte has an expected value.
	 */
	void initial_fill()
	{
		const std::size_t chunk = 4 << 20;
		for (auto &s : slices_) {
			content_.fill(mem_ + s.begin, 0, s.begin, s.end - s.begin);
			for (std::uint64_t off = s.begin; off < s.end; off += chunk) {
				std::uint64_t len = std::min<std::uint64_t>(chunk, s.end - off);
				pool_->persist(off, len, s.lane, 0);
				s.map.record(off, len,
				             writer{0, 0, off, len, checksum(mem_ + off, len),
				                    s.lane, kind::initial});
			}
		}
	}

	void progress(clock_type::time_point start, clock_type::time_point deadline)
	{
		auto next = start + std::chrono::seconds(30);
		while (clock_type::now() < deadline && !stop_.load()) {
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
			if (clock_type::now() >= next) {
				fmt::print("rpmem-soak: {:.0f} s: {} operations, {:.1f} MiB\n",
				           std::chrono::duration<double>(clock_type::now() - start)
				               .count(),
				           t_.ops.load(), double(t_.bytes.load()) / (1 << 20));
				std::fflush(stdout);
				next += std::chrono::seconds(30);
			}
		}
	}

	void worker(unsigned t, clock_type::time_point deadline)
	{
		std::mt19937_64 rng(mix(o_.seed + t + 1));
		std::string lines;
		struct pending {
			slice *s;
			std::uint64_t op, off, len, sum;
		};
		std::vector<pending> batch;
		auto pick_range = [&](slice &s) {
			std::uint64_t span = s.end - s.begin;
			// Log-uniform lengths: as many tiny (inline) writes as large (RDMA) ones.
			double lg = std::uniform_real_distribution<double>(
			    0, std::log2(double(std::min<std::uint64_t>(o_.max_range, span))))(rng);
			std::uint64_t len =
			    std::max<std::uint64_t>(1, std::uint64_t(std::exp2(lg)));
			std::uint64_t off = s.begin + rng() % (span - len + 1);
			return std::pair{off, len};
		};
		try {
			while (clock_type::now() < deadline &&
			       !stop_.load(std::memory_order_relaxed)) {
				auto r = rng() % 5;
				kind k = r == 0   ? kind::persist
				         : r == 1 ? kind::persist_relaxed
				         : r == 2 ? kind::flush
				         : r == 3 ? kind::deep_persist
				                  : kind::drain;
				batch.clear();
				auto n = k == kind::drain ? 1 + rng() % o_.max_batch : 1;
				unsigned lane_mask = 0;
				for (std::uint64_t i = 0; i < n; ++i) {
					auto l = static_cast<unsigned>(rng() % o_.lanes);
					slice &s = slices_[t * o_.lanes + l];
					auto [off, len] = pick_range(s);
					std::uint64_t op = next_op_.fetch_add(1) + 1;
					content_.fill(mem_ + off, op, off, len);
					batch.push_back(
					    {&s, op, off, len, checksum(mem_ + off, len)});
					switch (k) {
					case kind::persist:
						pool_->persist(off, len, s.lane, 0);
						break;
					case kind::persist_relaxed:
						pool_->persist(off, len, s.lane,
						               rpmem::client::persist_relaxed);
						break;
					case kind::flush:
						pool_->flush(off, len, s.lane, 0);
						break;
					case kind::deep_persist:
						pool_->deep_persist(off, len, s.lane);
						break;
					default:
						// Now and then a plain persist between relaxed
						// flushes of the same lane, before their drain.
						if (rng() % 8 == 0)
							pool_->persist(off, len, s.lane, 0);
						else
							pool_->flush(off, len, s.lane,
							             rpmem::client::flush_relaxed);
						lane_mask |= 1U << l;
					}
				}
				for (unsigned l = 0; l < o_.lanes; ++l)
					if (lane_mask & (1U << l))
						pool_->drain(slices_[t * o_.lanes + l].lane, 0);
				// Acknowledged: log and record, in operation order.
				for (const auto &p : batch) {
					p.s->map.record(
					    p.off, p.len,
					    writer{0, p.op, p.off, p.len, p.sum, p.s->lane, k});
					p.s->history.push_back(
					    writer{0, p.op, p.off, p.len, p.sum, p.s->lane, k});
					if (p.s->history.size() > history_size)
						p.s->history.pop_front();
					t_.bytes += p.len;
					if (log_.enabled())
						lines +=
						    fmt::format("{} {} {} {} {} {} {:016x}\n", p.op,
						                t, p.s->lane, kind_names[int(k)],
						                p.off, p.len, p.sum);
				}
				t_.ranges += batch.size();
				++t_.ops;
				++t_.per_kind[int(k)];
				if (lines.size() > (1 << 20)) {
					log_.write(lines);
					lines.clear();
				}
			}
		} catch (const std::exception &e) {
			std::lock_guard lk(fail_mutex_);
			if (failure_.empty())
				failure_ = fmt::format("thread {}: {}", t, e.what());
			stop_ = true;
		}
		if (log_.enabled())
			log_.write(lines);
	}

	verify_result verify(const std::uint8_t *replica, const std::string &what)
	{
		verify_result r;
		unsigned shown = 0;
		for (const auto &s : slices_) {
			std::uint64_t expect_at = s.begin;
			for (const auto &[start, w] : s.map.pieces()) {
				if (start != expect_at)
					throw rpmem::error(EFAULT,
					                   fmt::format("rpmem-soak bug: slice of "
					                               "lane {} has a gap at {}",
					                               s.lane, expect_at));
				expect_at = w.end;
				const std::uint8_t *p = replica + (start - header);
				std::uint64_t len = w.end - start;
				++r.pieces;
				r.bytes += len;
				std::uint64_t at = content_.first_mismatch(p, w.op, start, len);
				bool whole = start == w.range_off && len == w.range_len;
				bool sum_bad = false;
				if (whole) {
					++r.checksummed;
					sum_bad = checksum(p, len) != w.sum;
					r.checksum_mismatches += sum_bad;
				}
				if (at == len && !sum_bad)
					continue;
				++r.mismatched_pieces;
				std::uint64_t bad = 0;
				for (std::uint64_t i = at; i < len;) {
					std::uint8_t buf[4096];
					std::uint64_t n =
					    std::min<std::uint64_t>(sizeof buf, len - i);
					content_.fill(buf, w.op, start + i, n);
					for (std::uint64_t j = 0; j < n; ++j)
						bad += buf[j] != p[i + j];
					i += n;
				}
				r.mismatched_bytes += bad;
				if (shown++ < 10)
					fmt::print(
					    stderr,
					    "rpmem-soak: {}: MISMATCH at pool offset {}: {} of {} "
					    "bytes differ from operation {} ({} on lane {}, range "
					    "[{}, +{})){}\n",
					    what, start + at, bad, len, w.op, kind_names[int(w.k)],
					    w.lane, w.range_off, w.range_len,
					    sum_bad ? ", checksum differs from the log" : "");
				if (shown <= 10)
					explain(s, p + at, start + at, len - at, what);
			}
			if (expect_at != s.end)
				throw rpmem::error(EFAULT,
				                   "rpmem-soak bug: slice not covered to its end");
		}
		fmt::print(
		    "rpmem-soak: verified {}: {} bytes in {} ranges ({} whole ranges against "
		    "their logged checksum): {} mismatched bytes in {} ranges, {} checksum "
		    "mismatches\n",
		    what, r.bytes, r.pieces, r.checksummed, r.mismatched_bytes, r.mismatched_pieces,
		    r.checksum_mismatches);
		return r;
	}

	/** Which recent operation's data the replica holds at a mismatching byte run: the one
	 * whose content matches the most bytes from there (at least 4). */
	void explain(const slice &s, const std::uint8_t *p, std::uint64_t off, std::uint64_t left,
	             const std::string &what)
	{
		const writer *best = nullptr;
		std::uint64_t best_len = 3;
		for (auto it = s.history.rbegin(); it != s.history.rend(); ++it) {
			if (off < it->range_off || off >= it->range_off + it->range_len)
				continue;
			std::uint64_t n = std::min(left, it->range_off + it->range_len - off);
			std::uint64_t m = content_.first_mismatch(p, it->op, off, n);
			if (m > best_len) {
				best = &*it;
				best_len = m;
			}
		}
		if (best)
			fmt::print(
			    stderr,
			    "rpmem-soak: {}: the {} bytes at {} hold the data of the EARLIER "
			    "operation {} ({} on lane {}, range [{}, +{}))\n",
			    what, best_len, off, best->op, kind_names[int(best->k)], best->lane,
			    best->range_off, best->range_len);
		else
			fmt::print(
			    stderr,
			    "rpmem-soak: {}: the bytes at {} hold data of none of the last {} "
			    "operations on lane {}\n",
			    what, off, s.history.size(), s.lane);
	}

	/** The pool's bytes past the header from a single-part replica file (pool offset = file
	 * offset for part 0). */
	std::vector<std::uint8_t> read_part(const std::string &path)
	{
		int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			throw rpmem::error(errno,
			                   fmt::format("cannot open the replica part file {}: "
			                               "check --replica-file",
			                               path));
		std::vector<std::uint8_t> out(o_.pool_size - header);
		std::size_t done = 0;
		while (done < out.size()) {
			ssize_t n = ::pread(fd, out.data() + done, out.size() - done,
			                    static_cast<off_t>(header + done));
			if (n <= 0) {
				int e = n < 0 ? errno : EIO;
				::close(fd);
				throw rpmem::error(
				    e, fmt::format("reading {} at {} failed or hit its end "
				                   "(a single-part pool of at least {} "
				                   "bytes is needed for --replica-file)",
				                   path, header + done, o_.pool_size));
			}
			done += static_cast<std::size_t>(n);
		}
		::close(fd);
		return out;
	}

	const options &o_;
	content content_;
	checksum_log log_;
	std::uint8_t *mem_ = nullptr;
	std::unique_ptr<remote_pool> pool_;
	std::vector<slice> slices_;
	totals t_;
	std::atomic<std::uint64_t> next_op_{0};
	std::atomic<bool> stop_{false};
	std::mutex fail_mutex_;
	std::string failure_;
};

} // namespace

int main(int argc, char **argv)
{
	options o;
	CLI::App app{"rpmem-soak: T threads × L lanes persisting random ranges with a checksum log "
	             "for a given time, then a byte-exact check of the replica"};
	app.add_option("target", o.target, "[user@]host[:port] running rpmemd over ssh")
	    ->required();
	app.add_option("poolset", o.poolset, "pool set descriptor on the target")->required();
	app.add_option("-t,--threads", o.threads, "client threads")->check(CLI::Range(1, 64));
	app.add_option("-l,--lanes", o.lanes, "lanes per thread")->check(CLI::Range(1, 16));
	app.add_option("-d,--seconds", o.seconds, "how long to write")->check(CLI::PositiveNumber);
	app.add_option("--pool-size", o.pool_size, "bytes of the pool (≤ the remote pool's size)");
	app.add_option("--max-range", o.max_range, "largest range in bytes")
	    ->check(CLI::Range(std::size_t(1), std::size_t(1) << 30));
	app.add_option("--max-batch", o.max_batch, "relaxed flushes before a drain, at most")
	    ->check(CLI::Range(1, 1024));
	app.add_option("--seed", o.seed, "random seed (default: from the clock)");
	app.add_option("--replica-file", o.replica_file,
	               "the remote pool's single part file, to verify after close (same machine)");
	app.add_option("--log", o.log, "checksum log: one line per acknowledged range");
	app.add_flag("--keep", o.keep, "do not remove the pool afterwards");
	CLI11_PARSE(app, argc, argv);
	if (o.seed == 0)
		o.seed = static_cast<std::uint64_t>(clock_type::now().time_since_epoch().count());
	if (o.pool_size < 2 * header || o.pool_size % 4096)
		return fmt::print(stderr, "rpmem-soak: --pool-size must be a multiple of 4096 and "
		                          "at least 8192\n"),
		       2;
	try {
		soak s(o);
		return s.run();
	} catch (const std::exception &e) {
		fmt::print(stderr, "rpmem-soak: FAILED: {}\n", e.what());
		return 1;
	}
}
