// SPDX-License-Identifier: BSD-3-Clause
#include "scenarios.hpp"

#include "floor.hpp"

#include "client/data_path.hpp"
#include "client/env.hpp"
#include "control/codec.hpp"
#include "rpmem/error.hpp"
#include "ssh/session.hpp"
#include "ssh/target.hpp"

#include <fmt/format.h>
#include <libpmem.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <sstream>
#include <sys/mman.h>
#include <thread>

namespace rpmem::bench
{

namespace ctl = rpmem::control;
using client::remote_pool;
using namespace std::chrono_literals;

namespace
{

ctl::pool_attr bench_attr()
{
	ctl::pool_attr attr;
	std::memcpy(attr.signature.data(), "RPMEMBEN", 8);
	attr.major = 1;
	attr.uuid[0] = 1;
	return attr;
}

/** Runs `ours` and `floor` alternately in o.rounds batches (after a short warm-up). */
template <class Ours, class Floor>
void alternate(const options &o, unsigned iters, Ours &&ours, Floor &&floor)
{
	unsigned per_round = std::max(1u, iters / std::max(1u, o.rounds));
	for (unsigned i = 0; i < 3; ++i) {
		ours(false);
		floor(false);
	}
	for (unsigned r = 0; r < std::max(1u, o.rounds); ++r) {
		for (unsigned i = 0; i < per_round; ++i)
			ours(true);
		for (unsigned i = 0; i < per_round; ++i)
			floor(true);
	}
}

row floor_row(const std::string &provider, const std::string &name, const std::string &param,
              std::size_t size, const stats &s)
{
	row r;
	r.provider = provider;
	r.method = "-";
	r.scenario = name;
	r.param = param;
	r.size = size;
	r.median_us = s.median;
	r.p99_us = s.p99;
	r.mib_s = size ? mib_per_s(double(size), s.median) : 0;
	return r;
}

/** Single-quotes a word for the remote shell. */
std::string shell_quote(const std::string &word)
{
	std::string out = "'";
	for (char c : word)
		out += c == '\'' ? std::string("'\\''") : std::string(1, c);
	return out + "'";
}

/** All of what a session printed on stdout until it ended. */
std::string read_all(ssh::session &s)
{
	std::string out;
	std::uint8_t c = 0;
	try {
		for (;;) {
			s.read_exact({&c, 1}, 10000ms);
			out += static_cast<char>(c);
		}
	} catch (const rpmem::error &) {
	}
	return out;
}

} // namespace

scenarios::scenarios(const options &o, std::string provider) : o_(o), provider_(std::move(provider))
{
	void *p = mmap(nullptr, o.pool_size, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		throw rpmem::error(errno, fmt::format("mmap of the {}-byte local pool failed: "
		                                      "lower --pool-size",
		                                      o.pool_size));
	mem_ = static_cast<std::uint8_t *>(p);
	std::memset(mem_, 0x5a, o.pool_size);
}

scenarios::~scenarios()
{
	munmap(mem_, o_.pool_size);
}

client::pool_options scenarios::pool_opts(const std::string &method) const
{
	client::pool_options po;
	po.command = client::process_settings().commands.front();
	if (method == "apm")
		po.command += " --persist-apm";
	else if (method == "commit")
		po.command += " --persist-commit";
	if (!o_.mr_mode.empty())
		po.command += " --mr-mode=" + o_.mr_mode;
	po.ssh = ssh::options::from_environment();
	auto s = client::process_settings();
	s.providers = provider_;
	po.tuning = s;
	return po;
}

std::unique_ptr<remote_pool> scenarios::connect(unsigned nlanes, const std::string &method)
{
	auto po = pool_opts(method);
	try {
		remote_pool::remove(o_.target, o_.poolset, client::remove_force, po);
	} catch (const rpmem::error &) {
		// Nothing to remove: the usual case.
	}
	auto attr = bench_attr();
	auto pool =
	    remote_pool::create(o_.target, o_.poolset, mem_, o_.pool_size, &nlanes, &attr, po);
	// Warm up: a fresh replica file's pages are allocated on first touch (12-22 us per 4 KiB
	// page in a VM), which would be charged to whichever persist touches them first while the
	// floor reuses one warm buffer. Real pools in steady state are resident; measure that.
	constexpr std::size_t chunk = 4 << 20;
	for (std::size_t off = client::header_size; off < o_.pool_size; off += chunk)
		pool->persist(off, std::min(chunk, o_.pool_size - off), 0, client::persist_relaxed);
	return pool;
}

row scenarios::base(const std::string &method, const std::string &scenario,
                    const std::string &param) const
{
	row r;
	r.provider = provider_;
	r.method = method;
	r.scenario = scenario;
	r.param = param;
	return r;
}

void scenarios::latency(const std::string &method, floor_link &fl, bool with_floor_rows,
                        std::vector<row> &out)
{
	auto pool = connect(1, method);
	std::string got = ctl::to_string(pool->method());
	if (got != method)
		throw rpmem::error(EINVAL,
		                   fmt::format("asked rpmemd for {} but it chose {}: APM "
		                               "and commit need pmem on the replica "
		                               "(PMEM_IS_PMEM_FORCE=1 in RPMEM_CMD), commit "
		                               "a provider granting FI_RMA_PMEM (tcp), APM a "
		                               "platform where it is durable (rpmemd's log says "
		                               "why not; scripts/bench.sh FAKE_EADR=1 fakes one)",
		                               method, got));
	const bool commit_floor = fl.commit_supported();
	std::vector<std::size_t> sizes = o_.sizes;
	if (sizes.empty())
		sizes = {8, 64, 256, 1024, 4096, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20};
	std::size_t span = o_.pool_size - client::header_size;
	for (std::size_t size : sizes) {
		if (size > span)
			throw rpmem::error(EINVAL,
			                   fmt::format("size {} does not fit the {}-byte pool",
			                               size, o_.pool_size));
		unsigned iters = iterations_for(o_, size);
		std::vector<double> ours, wmr, wr, sr, cw;
		std::size_t i = 0;
		alternate(
		    o_, iters,
		    [&](bool keep) {
			    std::size_t off =
			        client::header_size + (i++ * size) % (span - size + 1);
			    off &= ~std::size_t(7);
			    auto t = clock_type::now();
			    pool->persist(off, size, 0, 0);
			    if (keep)
				    ours.push_back(us_since(t));
		    },
		    [&](bool keep) {
			    double a = fl.write_msg_reply(size);
			    double b = fl.write_read(size);
			    double c = size <= fl.msg_max() ? fl.send_reply(size) : 0;
			    double d = commit_floor ? fl.commit_write(size) : 0;
			    if (keep) {
				    wmr.push_back(a);
				    wr.push_back(b);
				    if (size <= fl.msg_max())
					    sr.push_back(c);
				    if (commit_floor)
					    cw.push_back(d);
			    }
		    });
		auto s_ours = summarize(ours), s_wmr = summarize(wmr), s_wr = summarize(wr),
		     s_cw = summarize(cw);
		if (with_floor_rows) {
			// What the daemon's persist itself costs for this size on this machine
			// (cache-line flushes, as pmem_persist on the replica): not a transport
			// floor, the other half of what GPSPM adds to it.
			std::vector<double> local;
			for (unsigned k = 0; k < std::min(iters, 200u); ++k) {
				std::size_t off =
				    client::header_size + (k * size) % (span - size + 1);
				std::memset(mem_ + off, static_cast<int>(k),
				            std::min<std::size_t>(size, 64));
				auto t = clock_type::now();
				pmem_persist(mem_ + off, size);
				local.push_back(us_since(t));
			}
			out.push_back(floor_row(provider_, "local:pmem_persist", size_text(size),
			                        size, summarize(local)));
			out.push_back(floor_row(provider_, "floor:write+msg+reply", size_text(size),
			                        size, s_wmr));
			out.push_back(
			    floor_row(provider_, "floor:write+read", size_text(size), size, s_wr));
			if (!sr.empty())
				out.push_back(floor_row(provider_, "floor:send+reply",
				                        size_text(size), size, summarize(sr)));
			if (!cw.empty())
				out.push_back(floor_row(provider_, "floor:commit-write",
				                        size_text(size), size, s_cw));
		}
		row r = base(method, "persist", size_text(size));
		r.size = size;
		r.median_us = s_ours.median;
		r.p99_us = s_ours.p99;
		r.mib_s = mib_per_s(double(size), s_ours.median);
		// Each method against the raw operations it cannot beat.
		const auto &fs = method == "apm" ? s_wr : method == "commit" ? s_cw : s_wmr;
		r.floor = method == "apm"      ? "floor:write+read"
		          : method == "commit" ? "floor:commit-write"
		                               : "floor:write+msg+reply";
		r.floor_value = fs.median;
		r.ratio = fs.median > 0 ? s_ours.median / fs.median : 0;
		out.push_back(r);

		if (size >= (64 << 10)) {
			// Bandwidth of one lane's persists against the stream of the same bytes.
			double secs = std::max(0.05, o_.seconds / 2);
			double stream = fl.stream(size, o_.window, secs);
			if (with_floor_rows) {
				row f =
				    floor_row(provider_, "floor:stream", size_text(size), size, {});
				f.mib_s = stream;
				f.param = fmt::format("{} w{}", size_text(size), o_.window);
				out.push_back(f);
			}
			row b = base(method, "persist-bw", size_text(size));
			b.size = size;
			b.mib_s = r.mib_s;
			b.median_us = r.median_us;
			b.floor = "floor:stream";
			b.floor_value = stream;
			b.ratio = stream > 0 ? b.mib_s / stream : 0;
			out.push_back(b);
		}
	}
	// The client's own view of the same run: every round trip, bucketed by powers of two.
	auto st = pool->stats(pool->nlanes());
	row cs = base(method, "client-stats", fmt::format("{} round trips", st.round_trips));
	cs.median_us = double(st.quantile_ns(0.5)) / 1000;
	cs.p99_us = double(st.quantile_ns(0.99)) / 1000;
	cs.note = fmt::format("{} persists, {} MiB persisted; latency upper bounds (power-of-two "
	                      "buckets)",
	                      st.persists, st.bytes_persisted >> 20);
	out.push_back(cs);
	pool->close();
}

void scenarios::flush(floor_link &, std::vector<row> &out)
{
	auto pool = connect(1);
	std::vector<unsigned> counts = o_.flush_counts;
	if (counts.empty())
		counts = {1, 2, 4, 8, 16, 32, 64};
	std::size_t hdr = client::header_size;
	bool first = true;
	for (unsigned n : counts) {
		std::vector<double> one, batch;
		std::size_t i = 0;
		alternate(
		    o_, std::max(1u, o_.iterations / 2),
		    [&](bool keep) {
			    auto t = clock_type::now();
			    for (unsigned k = 0; k < n; ++k)
				    pool->flush(hdr + k * 512, 256, 0, client::flush_relaxed);
			    pool->drain(0, 0);
			    if (keep)
				    batch.push_back(us_since(t));
		    },
		    [&](bool keep) {
			    auto t = clock_type::now();
			    pool->persist(hdr + (i++ % 64) * 256, 256, 0, 0);
			    if (keep)
				    one.push_back(us_since(t));
		    });
		auto s1 = summarize(one), sb = summarize(batch);
		if (first) {
			row p = base("gpspm", "persist", "256B");
			p.size = 256;
			p.median_us = s1.median;
			p.p99_us = s1.p99;
			p.note = "reference of flush+drain";
			first = false;
			out.push_back(p);
		}
		row r = base("gpspm", "flush256B+drain", fmt::format("N={}", n));
		r.size = n;
		r.median_us = sb.median;
		r.p99_us = sb.p99;
		r.floor = "persist 256B";
		r.floor_value = s1.median;
		r.ratio = s1.median > 0 ? sb.median / s1.median : 0;
		out.push_back(r);
	}
	pool->close();
}

void scenarios::throughput(floor_link &fl, std::vector<row> &out)
{
	std::vector<unsigned> threads = o_.threads;
	if (threads.empty())
		threads = {1, 2, 4, 8};
	std::vector<std::size_t> sizes = o_.tp_sizes;
	if (sizes.empty())
		sizes = {4096, 64 << 10, 1 << 20, 4 << 20};
	for (unsigned nt : threads) {
		// One lane per thread, or (--pool-lanes) libpmemobj's pattern: a pool of many
		// lanes (1024) of which each thread uses its own.
		auto pool = connect(o_.pool_lanes ? o_.pool_lanes : nt);
		unsigned lanes = pool->nlanes();
		for (std::size_t size : sizes) {
			std::size_t slice = (o_.pool_size - client::header_size) / nt;
			if (size > slice)
				throw rpmem::error(EINVAL,
				                   fmt::format("{} threads of {}-byte persists "
				                               "need a bigger --pool-size",
				                               nt, size));
			std::atomic<bool> stop{false};
			std::atomic<std::uint64_t> bytes{0}, ops{0};
			std::vector<std::thread> ts;
			std::exception_ptr failure;
			std::mutex failure_mutex;
			for (unsigned t = 0; t < nt; ++t)
				ts.emplace_back([&, t] {
					std::size_t at = client::header_size + t * slice, off = 0;
					std::uint64_t done = 0, n = 0;
					try {
						while (!stop.load(std::memory_order_relaxed)) {
							if (off + size > slice)
								off = 0;
							pool->persist(at + off, size, t % lanes, 0);
							off += size;
							done += size;
							++n;
						}
					} catch (...) {
						std::lock_guard lock(failure_mutex);
						failure = std::current_exception();
						stop = true;
					}
					bytes += done;
					ops += n;
				});
			auto start = clock_type::now();
			std::this_thread::sleep_for(std::chrono::duration<double>(o_.seconds));
			stop = true;
			for (auto &t : ts)
				t.join();
			if (failure)
				std::rethrow_exception(failure);
			double us = us_since(start);
			double stream = fl.stream(size, o_.window, o_.seconds);
			row f = floor_row(provider_, "floor:stream", "", size, {});
			f.param = fmt::format("{} w{}", size_text(size), o_.window);
			f.mib_s = stream;
			f.threads = 1;
			if (nt == threads.front())
				out.push_back(f);
			row r = base("gpspm",
			             o_.pool_lanes ? fmt::format("throughput-{}T/{}L", nt, lanes)
			                           : fmt::format("throughput-{}T", nt),
			             size_text(size));
			r.size = size;
			r.threads = nt;
			r.mib_s = mib_per_s(double(bytes.load()), us);
			r.ops_s = double(ops.load()) / us * 1e6;
			r.floor = "floor:stream";
			r.floor_value = stream;
			r.ratio = stream > 0 ? r.mib_s / stream : 0;
			if (lanes < nt)
				r.note = fmt::format("only {} lanes granted", lanes);
			out.push_back(r);
		}
		pool->close();
	}
}

void scenarios::startup(std::vector<row> &out)
{
	auto po = pool_opts("gpspm");
	auto target = ssh::parse_target(o_.target);
	std::vector<double> c_ssh, c_req, c_fab, c_close, c_tot, o_ssh, o_req, o_fab, o_tot;
	std::vector<double> f_start, f_conn, f_tot;
	const auto &cfg = *po.tuning;
	auto attr = bench_attr();
	try {
		remote_pool::remove(o_.target, o_.poolset, client::remove_force, po);
	} catch (const rpmem::error &) {
	}
	auto one = [&](bool create, std::vector<double> &t_ssh, std::vector<double> &t_req,
	               std::vector<double> &t_fab, std::vector<double> &t_tot) {
		auto t0 = clock_type::now();
		auto s = ssh::session::start(target, po.command, *po.ssh);
		auto h = ctl::expect<ctl::hello>(*s, ctl::msg_type::hello, cfg.control_timeout);
		if (h.st != ctl::status::success)
			throw rpmem::error(EPROTO,
			                   fmt::format("rpmemd failed to start: {}", h.message));
		double a = us_since(t0);
		auto t1 = clock_type::now();
		ctl::pool_request req;
		req.pool_size = o_.pool_size;
		req.nlanes = 1;
		req.provider = provider_;
		req.descriptor = o_.poolset;
		if (create)
			req.attr = attr;
		ctl::send(*s,
		          ctl::encode(req, create ? ctl::msg_type::create : ctl::msg_type::open));
		auto resp = ctl::expect<ctl::pool_response>(
		    *s, create ? ctl::msg_type::create_resp : ctl::msg_type::open_resp,
		    cfg.control_timeout);
		if (resp.st != ctl::status::success)
			throw rpmem::error(EIO, fmt::format("{} of {} failed: {}",
			                                    create ? "create" : "open", o_.poolset,
			                                    resp.message));
		double b = us_since(t1);
		auto t2 = clock_type::now();
		auto dp = std::make_unique<client::data_path>(
		    resp.fabric, target.host, mem_, o_.pool_size, std::min(1u, resp.fabric.nlanes),
		    cfg);
		double c = us_since(t2);
		t_ssh.push_back(a);
		t_req.push_back(b);
		t_fab.push_back(c);
		t_tot.push_back(us_since(t0));
		auto t3 = clock_type::now();
		ctl::send(*s, ctl::encode(ctl::close_request{0}));
		(void)ctl::expect<ctl::status_response>(*s, ctl::msg_type::close_resp,
		                                        cfg.control_timeout);
		dp->shutdown();
		s->close_stdin();
		s->wait_exit(2000ms);
		if (create)
			c_close.push_back(us_since(t3));
	};
	for (unsigned rep = 0; rep < std::max(1u, o_.open_reps); ++rep) {
		one(true, c_ssh, c_req, c_fab, c_tot);
		one(false, o_ssh, o_req, o_fab, o_tot);
		remote_pool::remove(o_.target, o_.poolset, client::remove_force, po);
		auto t = clock_type::now();
		{
			floor_link fl(o_, provider_, 4096, 64);
			f_start.push_back(fl.start_us());
			f_conn.push_back(fl.connect_us());
		}
		f_tot.push_back(us_since(t));
	}
	auto fs = summarize(f_start), fc = summarize(f_conn), ft = summarize(f_tot);
	auto add_floor = [&](const std::string &name, const stats &s) {
		out.push_back(floor_row(provider_, name, "", 0, s));
	};
	add_floor("floor:start", ft);
	add_floor("floor:start.ssh+exec+ready", fs);
	add_floor("floor:start.fabric-connect", fc);
	auto add = [&](const std::string &name, const std::vector<double> &v,
	               const std::string &floor, const stats &f) {
		auto s = summarize(v);
		row r = base("gpspm", name, "");
		r.median_us = s.median;
		r.p99_us = s.p99;
		if (!floor.empty()) {
			r.floor = floor;
			r.floor_value = f.median;
			r.ratio = f.median > 0 ? s.median / f.median : 0;
		}
		out.push_back(r);
	};
	add("create", c_tot, "floor:start", ft);
	add("create.ssh+exec+hello", c_ssh, "floor:start.ssh+exec+ready", fs);
	add("create.create-rtt", c_req, "", {});
	add("create.fabric-connect", c_fab, "floor:start.fabric-connect", fc);
	add("close", c_close, "", {});
	add("open", o_tot, "floor:start", ft);
	add("open.ssh+exec+hello", o_ssh, "floor:start.ssh+exec+ready", fs);
	add("open.open-rtt", o_req, "", {});
	add("open.fabric-connect", o_fab, "floor:start.fabric-connect", fc);
}

void scenarios::fanout(std::vector<row> &out)
{
	constexpr std::size_t size = 4096;
	const std::size_t region = std::min<std::size_t>(o_.pool_size, 64 << 20);
	auto po = pool_opts("gpspm");
	std::vector<std::unique_ptr<remote_pool>> pools;
	std::vector<std::unique_ptr<floor_link>> floors;
	for (const auto &set : o_.fanout_sets) {
		try {
			remote_pool::remove(o_.target, set, client::remove_force, po);
		} catch (const rpmem::error &) {
			// Nothing to remove: the usual case.
		}
		unsigned nlanes = 1;
		auto attr = bench_attr();
		pools.push_back(
		    remote_pool::create(o_.target, set, mem_, region, &nlanes, &attr, po));
		// Warm the pages the persists below touch.
		pools.back()->persist(client::header_size, 64 * size, 0, 0);
		floors.push_back(std::make_unique<floor_link>(o_, provider_, 1 << 20, size));
	}
	double ours1 = 0, floor1 = 0;
	for (std::size_t n = 1; n <= pools.size(); ++n) {
		std::vector<double> ours, fl;
		std::size_t i = 0;
		alternate(
		    o_, o_.iterations,
		    [&](bool keep) {
			    auto off = client::header_size + (i++ % 64) * size;
			    auto t = clock_type::now();
			    for (std::size_t k = 0; k < n; ++k)
				    pools[k]->persist_post(off, size, 0);
			    for (std::size_t k = 0; k < n; ++k)
				    pools[k]->complete(0);
			    if (keep)
				    ours.push_back(us_since(t));
		    },
		    [&](bool keep) {
			    auto t = clock_type::now();
			    for (std::size_t k = 0; k < n; ++k)
				    floors[k]->message_post(size);
			    for (std::size_t k = 0; k < n; ++k)
				    floors[k]->message_wait();
			    if (keep)
				    fl.push_back(us_since(t));
		    });
		auto so = summarize(ours), sf = summarize(fl);
		if (n == 1) {
			ours1 = so.median;
			floor1 = sf.median;
		}
		out.push_back(floor_row(provider_, fmt::format("floor:send+reply x{}", n),
		                        fmt::format("{} peers", n), size, sf));
		row r = base("gpspm", "fanout", fmt::format("{} replicas", n));
		r.size = size;
		r.median_us = so.median;
		r.p99_us = so.p99;
		r.floor = fmt::format("floor:send+reply x{}", n);
		r.floor_value = sf.median;
		r.ratio = sf.median > 0 ? so.median / sf.median : 0;
		out.push_back(r);
		if (n > 1) {
			row v = base("gpspm", "fanout-vs-1", fmt::format("{} replicas", n));
			v.size = size;
			v.median_us = so.median;
			v.floor = "fanout 1 replica";
			v.floor_value = ours1;
			v.ratio = ours1 > 0 ? so.median / ours1 : 0;
			v.note = fmt::format("the floor: {} peers at once cost {:.2f} x one", n,
			                     floor1 > 0 ? sf.median / floor1 : 0);
			out.push_back(v);
		}
	}
	for (auto &p : pools)
		p->close();
}

void scenarios::lanes(std::vector<row> &out)
{
	auto pool = connect(o_.lanes_check);
	unsigned granted = pool->nlanes();
	unsigned conns = pool->fabric().nendpoints;
	// Count the threads of the rpmemd serving us: the one whose command line carries our
	// RPMEM_CMD arguments (its poolset dir), on the replica node, over a second SSH session.
	std::string cmd = pool_opts("gpspm").command, unique;
	{
		std::istringstream in(cmd);
		std::string w;
		bool after = false;
		while (in >> w) {
			if (after)
				unique += (unique.empty() ? "" : " ") + w;
			else if (w.size() >= 6 && w.compare(w.size() - 6, 6, "rpmemd") == 0)
				after = true;
		}
	}
	long threads = -1, cores = -1;
	if (!unique.empty()) {
		std::string script = fmt::format(
		    "n=-1; for p in $(pgrep -x rpmemd); do if tr '\\0' ' ' < /proc/$p/cmdline | "
		    "grep -qF -- {}; then n=$(ls /proc/$p/task | wc -l); fi; done; echo $n "
		    "$(nproc)",
		    shell_quote(unique));
		try {
			auto s = ssh::session::start(ssh::parse_target(o_.target), script,
			                             ssh::options::from_environment());
			std::istringstream res(read_all(*s));
			res >> threads >> cores;
		} catch (const rpmem::error &) {
		}
	}
	row r = base("gpspm", "lanes", fmt::format("{} requested", o_.lanes_check));
	r.floor = "limit:16 connections";
	r.floor_value = 16;
	r.ratio = conns / 16.0;
	r.note = fmt::format("{} lanes granted, {} connections", granted, conns);
	out.push_back(r);
	row t = base("gpspm", "lanes.daemon-threads", fmt::format("{} requested", o_.lanes_check));
	if (threads > 0 && cores > 0) {
		double limit = 2.0 * double(cores) + 4;
		t.floor = fmt::format("limit:2x{}cores+4", cores);
		t.floor_value = limit;
		t.ratio = double(threads) / limit;
		t.note = fmt::format("{} rpmemd threads", threads);
	} else {
		t.note = "rpmemd threads not found (RPMEM_CMD without its arguments?)";
	}
	out.push_back(t);
	pool->close();
}

} // namespace rpmem::bench
