// SPDX-License-Identifier: BSD-3-Clause
// The replicas of a replicated pool: create() and open() as named steps. Load the pool set;
// give a new pool set its ring of UUIDs; create or open the local replicas (headers checked
// against the master); connect the remote replicas in parallel; roll back what was made when
// a step fails.
#include "replication/replicated_pool_impl.hpp"

#include "client/env.hpp"
#include "client/log.hpp"
#include "cpp/options.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <thread>
#include <unistd.h>

namespace rpmem
{

using namespace replication;

namespace
{

poolset::poolset load(const std::string &path)
{
	poolset::poolset ps;
	try {
		ps = poolset::parse_file(path);
	} catch (const poolset::parse_error &e) {
		throw rpmem::error(EINVAL, e.what());
	}
	if (ps.opts.single_header || ps.opts.no_headers)
		throw rpmem::error(ENOTSUP,
		                   fmt::format("{}: OPTION {} is not supported by "
		                               "rpmem::replicated_pool: remove the line",
		                               path, ps.opts.no_headers ? "NOHDRS" : "SINGLEHDR"));
	if (ps.replicas.empty() || ps.replicas[0].is_remote())
		throw rpmem::error(EINVAL,
		                   fmt::format("{}: the first replica (the master) must be "
		                               "local: list its parts before any REPLICA line",
		                               path));
	return ps;
}

/** Each remote replica's connection options, RPMEM_CMD entries taken in replica order. */
client::pool_options remote_options(const replicated_pool::options &o, std::size_t index,
                                    const poolset::replica &r)
{
	connect_options c = o.remote_for ? o.remote_for(index, r.target, r.descriptor) : o.remote;
	auto out = cpp::to_client(c);
	if (out.command.empty())
		out.command = client::next_command();
	return out;
}

/** Starts fn(i) for every i on its own thread (connecting replicas costs an SSH handshake
 * each) and rethrows the first failure once all are done. */
void for_each_parallel(std::size_t n, const std::function<void(std::size_t)> &fn,
                       std::vector<std::exception_ptr> &errors)
{
	errors.assign(n, nullptr);
	std::vector<std::thread> t;
	for (std::size_t i = 0; i < n; ++i)
		t.emplace_back([&, i] {
			try {
				fn(i);
			} catch (...) {
				errors[i] = std::current_exception();
			}
		});
	for (auto &th : t)
		th.join();
}

} // namespace

namespace
{

/** A new pool set's UUIDs (one for the set; one per part of each replica, a remote replica's
 * part 0 only) and the header fields they give each part: parts and replicas linked in rings. */
class uuid_ring
{
public:
	uuid_ring(const poolset::poolset &ps, const replicated_pool::options &opts)
	    : opts_(opts), poolset_(generate_uuid()), parts_(ps.replicas.size()),
	      arch_(pmdk::host_arch_bytes())
	{
		for (std::size_t r = 0; r < ps.replicas.size(); ++r) {
			std::size_t n =
			    ps.replicas[r].is_remote() ? 1 : ps.replicas[r].parts.size();
			for (std::size_t i = 0; i < n; ++i)
				parts_[r].push_back(generate_uuid());
		}
	}

	header_fields fields(std::size_t r, std::size_t part) const
	{
		const std::size_t nrep = parts_.size();
		header_fields h;
		h.signature = opts_.signature;
		h.major = opts_.major;
		h.incompat = pmdk::feat_incompat_cksum_2k;
		h.links =
		    pmdk::ring_links(parts_[r], part, poolset_, parts_[(r + nrep - 1) % nrep][0],
		                     parts_[(r + 1) % nrep][0]);
		h.crtime = static_cast<std::uint64_t>(time(nullptr));
		h.arch = arch_;
		return h;
	}

	/** The attributes rpmemd writes into remote replica r's header. */
	control::pool_attr remote_attr(std::size_t r) const { return pmdk::to_attr(fields(r, 0)); }

private:
	const replicated_pool::options &opts_;
	uuid poolset_;
	std::vector<std::vector<uuid>> parts_;
	std::array<std::uint8_t, 16> arch_;
};

/** A remote replica as the pool set names it, not connected yet. */
remote_replica describe_remote(const replicated_pool::options &opts, std::size_t r,
                               const poolset::replica &rep)
{
	remote_replica rr;
	rr.index = r;
	rr.target = rep.target;
	rr.descriptor = rep.descriptor;
	rr.conn = remote_options(opts, r, rep);
	return rr;
}

/** create: every local replica's parts (the files created are added to `created`) with their
 * headers; the master first. */
void create_locals(replicated_pool::impl &p, const uuid_ring &ring, const std::string &path,
                   std::vector<std::string> &created)
{
	const auto &ps = p.ps;
	const std::size_t size = ps.pool_size(0);
	for (std::size_t r = 0; r < ps.replicas.size(); ++r) {
		const auto &rep = ps.replicas[r];
		if (rep.is_remote())
			continue;
		if (r > 0 && ps.pool_size(r) < size)
			throw rpmem::error(EINVAL,
			                   fmt::format("{}:{}: replica {} holds {} bytes, less "
			                               "than the master's {}: make its parts "
			                               "larger",
			                               path, rep.line, r, ps.pool_size(r), size));
		for (const auto &part : rep.parts)
			if (access(part.path.c_str(), F_OK) != 0)
				created.push_back(part.path);
		auto m = local_map::create(rep, size);
		for (std::size_t i = 0; i < m->parts(); ++i)
			m->write_header(i, ring.fields(r, i));
		if (r == 0)
			p.master = std::move(m);
		else
			p.locals.push_back({r, std::move(m)});
	}
}

/** create: every remote replica's pool set, in parallel. If one fails, those created are
 * removed (a half-created pool set is none) and the failure is thrown. */
void create_remotes(replicated_pool::impl &p, const uuid_ring &ring, const std::string &path)
{
	const auto &ps = p.ps;
	for (std::size_t r = 1; r < ps.replicas.size(); ++r)
		if (ps.replicas[r].is_remote()) {
			p.remotes.push_back(describe_remote(p.opts, r, ps.replicas[r]));
			p.remotes.back().attr = ring.remote_attr(r);
		}
	std::vector<std::exception_ptr> errors;
	for_each_parallel(
	    p.remotes.size(),
	    [&](std::size_t i) {
		    auto &rr = p.remotes[i];
		    rr.lanes = lanes_per_replica;
		    // Written asynchronously, a replica is marked possibly behind until a clean
		    // close.
		    const auto attr = with_behind_mark(rr.attr, p.may_fall_behind());
		    rr.rp = client::remote_pool::create(rr.target, rr.descriptor, p.master->base(),
		                                        ps.pool_size(0), &rr.lanes, &attr, rr.conn);
	    },
	    errors);
	for (std::size_t i = 0; i < errors.size(); ++i) {
		if (!errors[i])
			continue;
		std::string msg;
		int err = errnum_of(errors[i], &msg);
		for (auto &rr : p.remotes) {
			if (!rr.rp)
				continue;
			rr.rp.reset();
			try {
				client::remote_pool::remove(rr.target, rr.descriptor, 0, rr.conn);
			} catch (const std::exception &) {
			}
		}
		throw rpmem::error(err,
		                   fmt::format("{}: cannot create remote replica {} ({}): {}", path,
		                               p.remotes[i].index, p.where(p.remotes[i]), msg));
	}
}

/** open: what every replica's header must say to belong to this pool set. */
class header_check
{
public:
	header_check(const replicated_pool::options &opts, const header_fields &master)
	    : opts_(opts), master_(master)
	{
	}

	void operator()(const header_fields &h, const std::string &what) const
	{
		if (h.signature != opts_.signature)
			throw rpmem::error(
			    EINVAL, fmt::format("{}: its pool signature '{}' is not '{}': it is "
			                        "not a pool of this application (check "
			                        "options::signature)",
			                        what,
			                        std::string(h.signature.data(),
			                                    strnlen(h.signature.data(), 8)),
			                        std::string(opts_.signature.data(),
			                                    strnlen(opts_.signature.data(), 8))));
		if (h.major != opts_.major)
			throw rpmem::error(EINVAL,
			                   fmt::format("{}: pool format version {} is not the "
			                               "expected {} (options::major)",
			                               what, h.major, opts_.major));
		if (h.links.poolset != master_.links.poolset)
			throw rpmem::error(
			    EINVAL, fmt::format("{}: its pool set UUID {} differs from the "
			                        "master's {}: it belongs to another pool set",
			                        what, uuid_string(h.links.poolset),
			                        uuid_string(master_.links.poolset)));
		if (h.incompat & pmdk::feat_incompat_singlehdr)
			throw rpmem::error(ENOTSUP, fmt::format("{}: the SINGLEHDR feature is not "
			                                        "supported",
			                                        what));
	}

private:
	const replicated_pool::options &opts_;
	header_fields master_;
};

/** open: every local replica after the master, headers checked; the remote ones described. */
void open_locals(replicated_pool::impl &p, const header_check &check, const std::string &path)
{
	const auto &ps = p.ps;
	const std::size_t size = ps.pool_size(0);
	for (std::size_t r = 1; r < ps.replicas.size(); ++r) {
		const auto &rep = ps.replicas[r];
		if (rep.is_remote()) {
			p.remotes.push_back(describe_remote(p.opts, r, rep));
			continue;
		}
		if (ps.pool_size(r) < size)
			throw rpmem::error(EINVAL,
			                   fmt::format("{}:{}: replica {} is smaller than the "
			                               "master",
			                               path, rep.line, r));
		auto m = local_map::open(rep, size);
		for (std::size_t i = 0; i < m->parts(); ++i)
			check(m->read_header(i), "pool part " + m->path(i));
		p.locals.push_back({r, std::move(m)});
	}
}

/** open: connects one remote replica and checks its header; marks it behind when written
 * asynchronously. */
void open_remote(replicated_pool::impl &p, const header_check &check, remote_replica &rr)
{
	rr.lanes = lanes_per_replica;
	control::pool_attr a;
	rr.rp = client::remote_pool::open(rr.target, rr.descriptor, p.master->base(),
	                                  p.ps.pool_size(0), &rr.lanes, &a, rr.conn);
	if (a.is_zero())
		throw rpmem::error(EINVAL, "the remote pool has no header (OPTION "
		                           "NOHDRS?): it is not a replica of this pool");
	if (pmdk::marked_rebuilding(a))
		throw rpmem::error(ESTALE, "it was being caught up from the master when its "
		                           "asynchronous writer stopped: its blocks come from "
		                           "different moments, so it holds no consistent pool (its "
		                           "pool header is marked so); resync it from the master");
	check(pmdk::from_attr(a), "remote replica " + p.where(rr));
	if (pmdk::marked_behind(a))
		throw rpmem::error(ESTALE, "it may be behind the master: its writer could leave it "
		                           "behind (asynchronous replication, or "
		                           "failure_policy::degrade) and did not close the pool "
		                           "cleanly, so it can lack the master's last persists "
		                           "(its pool header is marked so)");
	if (rr.unmarked)
		throw rpmem::error(ESTALE,
		                   fmt::format("it may be behind the master: a writer went on "
		                               "without it under failure_policy::degrade "
		                               "while it was unreachable, so it can lack "
		                               "acknowledged writes (the master's record {} "
		                               "lists it; its own header cannot say so)",
		                               p.record->path()));
	rr.attr = a;
	if (p.may_fall_behind()) {
		const auto behind = with_behind_mark(a, true);
		rr.rp->set_attr(&behind);
	}
}

/** open: every remote replica, in parallel; one that fails is lost (degrade) or fails open.
 *  The master's record of replicas behind is read first (a replica it lists is taken as
 *  marked) and rewritten, durably, before open returns: it lists every replica lost here, whose
 *  own header could not be marked. */
void open_remotes(replicated_pool::impl &p, const header_check &check, const std::string &path)
{
	p.record = std::make_unique<pmdk::behind_record>(p.ps);
	const auto listed = p.record->read();
	for (auto &rr : p.remotes)
		rr.unmarked = listed.count(pmdk::behind_record::key(p.ps.replicas[rr.index])) > 0;
	std::vector<std::exception_ptr> errors;
	for_each_parallel(
	    p.remotes.size(), [&](std::size_t i) { open_remote(p, check, p.remotes[i]); }, errors);
	for (std::size_t i = 0; i < errors.size(); ++i) {
		if (!errors[i])
			continue;
		std::string msg;
		int err = errnum_of(errors[i], &msg);
		auto &rr = p.remotes[i];
		if (p.opts.on_failure == replicated_pool::failure_policy::degrade) {
			// Keep going without it; the healer brings it back (compared by block
			// checksums: what it lacks is not known), re-creating it if it is gone.
			rr.rp.reset();
			rr.attr = {};
			rr.compare = true;
			p.mark_lost(rr.index, errors[i], false); // said below
			// Its header cannot be marked possibly behind from here: until the healer
			// reaches it (and marks it before the first byte moves), only the master's
			// record says it is behind. Say so where the operator looks.
			if (err == ESTALE && !rr.unmarked) {
				// Marked on its host: it says so itself.
				client::log(1,
				            "{}: going on without remote replica {} ({}): {}; the "
				            "healer catches it up",
				            path, rr.index, p.where(rr), msg);
				continue;
			}
			rr.unmarked = true;
			client::log(
			    1,
			    "{}: going on without remote replica {} ({}), unreachable at open "
			    "({}): it is behind from the first persist and NOT marked so on its "
			    "host until it is caught up (the master's record {} says so); do not "
			    "promote it meanwhile",
			    path, rr.index, p.where(rr), msg, p.record->path());
			continue;
		}
		throw rpmem::error(err, fmt::format("{}: cannot open remote replica {} ({}): {} "
		                                    "(open with failure_policy::degrade to go on "
		                                    "without it, then resync({}))",
		                                    path, rr.index, p.where(rr), msg, rr.index));
	}
	// Before any write is acknowledged: a replica left behind unmarked is on record.
	p.write_record();
}

} // namespace

void replicated_pool::impl::write_record()
{
	std::lock_guard g(record_mu);
	std::set<std::string> keys;
	for (const auto &rr : remotes)
		if (rr.unmarked)
			keys.insert(pmdk::behind_record::key(ps.replicas[rr.index]));
	record->write(keys);
}

replicated_pool replicated_pool::create(const std::string &poolset_path)
{
	return create(poolset_path, options{});
}

replicated_pool replicated_pool::open(const std::string &poolset_path)
{
	return open(poolset_path, options{});
}

replicated_pool replicated_pool::create(const std::string &poolset_path, const options &opts)
{
	auto p = std::make_unique<impl>();
	p->ps = load(poolset_path);
	p->opts = opts;
	p->choose_mode();
	const uuid_ring ring(p->ps, p->opts);
	std::vector<std::string> created; // local part files: removed if create fails
	try {
		create_locals(*p, ring, poolset_path, created);
		// A new pool: what a record beside an earlier one said is void.
		p->record = std::make_unique<pmdk::behind_record>(p->ps);
		p->write_record();
		create_remotes(*p, ring, poolset_path);
	} catch (...) {
		p->master.reset();
		p->locals.clear();
		for (const auto &f : created)
			unlink(f.c_str());
		throw;
	}
	p->count_lanes();
	p->start_export();
	p->start_healer();
	return replicated_pool(std::move(p));
}

replicated_pool replicated_pool::open(const std::string &poolset_path, const options &opts)
{
	auto p = std::make_unique<impl>();
	p->ps = load(poolset_path);
	p->opts = opts;
	p->choose_mode();
	p->master = local_map::open(p->ps.replicas[0], p->ps.pool_size(0));
	const header_check check(p->opts, p->master->read_header(0));
	for (std::size_t i = 0; i < p->master->parts(); ++i)
		check(p->master->read_header(i), "pool part " + p->master->path(i));
	open_locals(*p, check, poolset_path);
	open_remotes(*p, check, poolset_path);
	p->count_lanes();
	p->start_export();
	p->notify_lost();
	p->start_healer();
	return replicated_pool(std::move(p));
}

} // namespace rpmem
