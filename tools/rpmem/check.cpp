// SPDX-License-Identifier: BSD-3-Clause
// rpmem check POOLSET: is the pool set whole? pmempool check's questions, asked of a set with
// remote replicas (which pmempool check refuses): for each local replica, every part is there,
// as large as the pool set says, with a sound header tied into the set (checksum, pool set
// UUID, part links, shared fields) and no unfinished rebuild; for each remote replica, rpmemd
// opens it, it is as large as the master and its attributes link it into the replica ring.
// The data itself is compared by `rpmem verify`.
//
// --repair fixes what can be fixed without judgement, from copies known good:
//  - a part header (not part 0's) that is damaged while part 0's and its neighbours' are sound:
//    written anew from part 0's fields and the UUID both neighbours link to;
//  - a remote replica that is missing, mislinked or marked possibly behind, when the master is
//    sound: brought in line as `rpmem sync` does (only the differing blocks move).
// Anything else is reported with what to do; nothing is written without --repair.
#include "replicas.hpp"
#include "tool.hpp"

#include "client/json.hpp"
#include "client/remote_pool.hpp"
#include "pmdk/part_file.hpp"
#include "pmdk/pool_header.hpp"
#include "pmdk/pool_map.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

namespace rpmem::tool
{

namespace
{

using client::remote_pool;

/** What check found about one replica. */
struct replica_report {
	std::size_t replica = 0;
	bool remote = false;
	std::uint64_t pool_size = 0;         // the pool's size as libpmemobj sees it; 0 if unknown
	std::vector<std::string> problems;   // make the set inconsistent
	std::vector<std::string> notes;      // worth knowing, not inconsistencies
	std::vector<std::string> repairs;    // what --repair did
	std::string error;                   // could not be checked at all
	std::string skipped;                 // not checked, for a reason reported elsewhere
	std::optional<pmdk::pool_hdr> part0; // a local replica's sound part 0 header
	bool consistent() const { return error.empty() && skipped.empty() && problems.empty(); }
};

struct local_part {
	pmdk::unique_fd fd;
	std::string path;
	std::uint64_t file_size = 0;
	pmdk::pool_hdr hdr{};
	bool header_valid = false;
};

/** Writes a part header durably. Throws failure naming the part. */
void write_header(const local_part &p, const pmdk::pool_hdr &h)
{
	auto n = pwrite(p.fd.get(), &h, sizeof(h), 0);
	if (n != static_cast<ssize_t>(sizeof(h)))
		throw failure(fmt::format("cannot write the pool header of {}: {}", p.path,
		                          n < 0 ? std::strerror(errno) : "short write"));
	if (fsync(p.fd.get()) != 0)
		throw failure(fmt::format("cannot make the pool header of {} durable (fsync): {}",
		                          p.path, std::strerror(errno)));
}

/**
 * Part i's header written anew from part 0's shared fields and its neighbours' links, when
 * part 0 and both neighbours are sound and agree on i's UUID. Returns why not, or nullopt
 * after writing it.
 */
std::optional<std::string> rebuild_part_header(std::vector<local_part> &parts, std::size_t i)
{
	const std::size_t n = parts.size();
	auto &prev = parts[(i + n - 1) % n];
	auto &next = parts[(i + 1) % n];
	if (i == 0)
		return "part 0's header holds the pool's shutdown state and is the one the others "
		       "are "
		       "checked against: not rebuilt; if a replica is sound, rebuild the master "
		       "from "
		       "it or promote it";
	if (!parts[0].header_valid || !prev.header_valid || !next.header_valid)
		return "its neighbours' headers are not sound either: nothing to rebuild it from";
	if (prev.hdr.next_part_uuid != next.hdr.prev_part_uuid)
		return "its neighbouring parts do not agree on its UUID: nothing to rebuild it "
		       "from";
	auto fields = pmdk::decode(parts[0].hdr);
	fields.links.self = prev.hdr.next_part_uuid;
	fields.links.prev_part = prev.hdr.part_uuid;
	fields.links.next_part = next.hdr.part_uuid;
	struct stat st {
	};
	if (fstat(parts[i].fd.get(), &st) == 0)
		fields.crtime =
		    static_cast<std::uint64_t>(st.st_ctime); // as PMDK stamps a new part
	auto h = pmdk::encode(fields);
	write_header(parts[i], h);
	parts[i].hdr = h;
	parts[i].header_valid = true;
	return std::nullopt;
}

/** The local replica r: parts, sizes, headers; with --repair, damaged part headers. */
replica_report check_local(const poolset::poolset &ps, std::size_t r, bool repair)
{
	replica_report rep;
	rep.replica = r;
	const auto &parts = ps.replicas[r].parts;
	const std::size_t nhdrs = ps.header_count(r);
	std::vector<local_part> ps_parts;
	for (std::size_t i = 0; i < parts.size(); ++i) {
		const auto &p = parts[i];
		int fd = ::open(p.path.c_str(), (repair ? O_RDWR : O_RDONLY) | O_CLOEXEC);
		if (fd < 0 && errno != ENOENT) {
			// Not a finding about the set: this command cannot look (permissions...).
			rep.error = fmt::format("{}:{}: part {} ({}): cannot open{}: {}", ps.file,
			                        p.line, i, p.path, repair ? " for writing" : "",
			                        std::strerror(errno));
			return rep;
		}
		if (fd < 0) {
			const int e = errno;
			rep.problems.push_back(fmt::format(
			    "{}:{}: part {} ({}): cannot open: {}{}", ps.file, p.line, i, p.path,
			    std::strerror(e),
			    e == ENOENT
			        ? (r == 0 ? " — the master is lost: rebuild it from a replica "
			                    "(pmempool sync) or promote one (rpmem promote)"
			                  : " — the replica is lost: pmempool sync re-creates "
			                    "it")
			        : ""));
			ps_parts.push_back({});
			continue;
		}
		local_part lp{pmdk::unique_fd(fd), p.path, 0, {}, false};
		const int busy = pmdk::try_lock(fd);
		if (busy == EWOULDBLOCK) {
			rep.error = fmt::format("{} is in use{}: a pool in use cannot be checked; "
			                        "close it first",
			                        p.path, pmdk::lock_holder(fd));
			return rep;
		}
		struct stat st {
		};
		if (fstat(fd, &st) == 0)
			lp.file_size = static_cast<std::uint64_t>(st.st_size);
		if (lp.file_size < p.size)
			rep.problems.push_back(fmt::format(
			    "{}:{}: part {} ({}) is {} bytes, smaller than the {} the pool set "
			    "declares: the pool was not created from this pool set",
			    ps.file, p.line, i, p.path, lp.file_size, p.size));
		if (i < nhdrs) {
			if (pread(fd, &lp.hdr, sizeof(lp.hdr), 0) == sizeof(lp.hdr))
				lp.header_valid = !pmdk::check_header_alone(lp.hdr);
		}
		ps_parts.push_back(std::move(lp));
	}
	std::uint64_t size = 0;
	for (std::size_t i = 0; i < parts.size(); ++i)
		size += pmdk::part_extent(i, parts[i].size, parts.size(), nhdrs).length;
	rep.pool_size = size;
	if (!rep.problems.empty() || nhdrs == 0)
		return rep; // a missing or short part: the headers say nothing more

	// Damaged headers first (each on its own), then how each sound one ties into the set.
	for (std::size_t i = 0; i < nhdrs; ++i) {
		auto &lp = ps_parts[i];
		if (lp.header_valid)
			continue;
		auto wrong = pmdk::check_header_alone(lp.hdr).value_or("cannot read the header");
		if (repair) {
			auto why_not = rebuild_part_header(ps_parts, i);
			if (!why_not) {
				rep.repairs.push_back(fmt::format(
				    "part {} ({}): header rebuilt from part 0's and its "
				    "neighbours' ({})",
				    i, lp.path, wrong));
				continue;
			}
			wrong += "; not repaired: " + *why_not;
		} else if (i > 0) {
			wrong += " (--repair rebuilds it from part 0's and its neighbours')";
		}
		rep.problems.push_back(fmt::format("part {} ({}): {}", i, lp.path, wrong));
	}
	if (!rep.problems.empty())
		return rep;
	const auto &first = ps_parts[0].hdr;
	for (std::size_t i = 1; i < nhdrs; ++i) {
		auto prev = ps_parts[(i + nhdrs - 1) % nhdrs].hdr.part_uuid;
		auto next = ps_parts[(i + 1) % nhdrs].hdr.part_uuid;
		if (auto wrong = pmdk::check_header(ps_parts[i].hdr, first, prev, next))
			rep.problems.push_back(
			    fmt::format("part {} ({}): {}", i, ps_parts[i].path, *wrong));
	}
	if (nhdrs > 1 && (first.prev_part_uuid != ps_parts[nhdrs - 1].hdr.part_uuid ||
	                  first.next_part_uuid != ps_parts[1].hdr.part_uuid))
		rep.problems.push_back(fmt::format("part 0 ({}): its part links do not match the "
		                                   "neighbouring parts: parts were reordered or "
		                                   "replaced",
		                                   ps_parts[0].path));
	if (rep.problems.empty())
		rep.part0 = first;
	const auto incompat = pmdk::load_le(first.feat.incompat);
	if (incompat & pmdk::feat_incompat_rpmem_rebuilding)
		rep.problems.push_back(
		    fmt::format("marked as being rebuilt from a replica (an interrupted `rpmem "
		                "sync --from`): finish it with `rpmem sync --from R {}`",
		                ps.file));
	if (pmdk::load_le(first.feat.compat) & pmdk::feat_compat_rpmem_behind)
		rep.notes.push_back("marked possibly behind its master (an asynchronous writer did "
		                    "not close it cleanly)");
	if ((incompat & pmdk::feat_incompat_sds) && first.sds.dirty)
		rep.notes.push_back("shutdown state dirty: the pool was not closed cleanly; "
		                    "libpmemobj checks the devices on its next open");
	return rep;
}

/** Remote replica r against the (sound) master; with --repair, `rpmem sync` of it. */
replica_report check_remote(const poolset::poolset &ps, const master &m, ring &ring, std::size_t r,
                            bool repair)
{
	replica_report rep;
	rep.replica = r;
	rep.remote = true;
	const auto &where = ps.replicas[r];
	try {
		scratch buf(m.size());
		unsigned lanes = 1;
		control::pool_attr have{};
		auto pool = remote_pool::open(where.target, where.descriptor, buf.data(), m.size(),
		                              &lanes, &have);
		rep.pool_size = pool->remote_size();
		pool->close();
		if (rep.pool_size < m.size())
			rep.problems.push_back(fmt::format(
			    "the replica pool is {}, smaller than the master's {}: libpmemobj "
			    "refuses the set; remove it (rpmem rm) and let `rpmem sync` re-create "
			    "it",
			    size_text(rep.pool_size), size_text(m.size())));
		if (m.header()) {
			ring.learn(r, have.uuid, have.prev_uuid, have.next_uuid);
			for (auto &d :
			     attr_differences(expected_attr(m, ring, r, have), have, ring, r))
				rep.problems.push_back("header: " + d);
			if (have.compat_features & pmdk::feat_compat_rpmem_behind)
				rep.problems.push_back("marked possibly behind the master (an "
				                       "asynchronous writer or a "
				                       "sync did not finish)");
		} else if (!have.is_zero()) {
			rep.problems.push_back("the replica has a pool header, the master has none "
			                       "(OPTION NOHDRS)");
		}
	} catch (const rpmem::error &e) {
		if (e.errnum() == EFBIG) {
			// rpmemd refuses to map more than the pool holds: smaller than the master.
			rep.problems.push_back(fmt::format(
			    "the replica pool is smaller than the master's {} ({}): libpmemobj "
			    "refuses the set; remove it (rpmem rm) and let `rpmem sync` re-create "
			    "it",
			    size_text(m.size()), e.message()));
			return rep; // not repaired: removing a replica is the operator's call
		}
		if (e.errnum() != ENOENT) {
			rep.error = rpmem::describe(e);
			return rep;
		}
		rep.problems.push_back(fmt::format("missing ({})", e.message()));
	}
	const bool fixable = rep.pool_size == 0 || rep.pool_size >= m.size();
	if (rep.problems.empty() || !repair || !fixable)
		return rep;
	try {
		rep.repairs.push_back(resync_replica(ps, m, ring, r));
		rep.problems.clear();
	} catch (const std::exception &e) {
		rep.problems.push_back(fmt::format("not repaired: {}", e.what()));
	}
	return rep;
}

std::string status_of(const replica_report &rep)
{
	if (!rep.error.empty())
		return "error";
	if (!rep.skipped.empty())
		return "not_checked";
	if (!rep.problems.empty())
		return "inconsistent";
	return rep.repairs.empty() ? "consistent" : "repaired";
}

void print_text(const poolset::poolset &ps, const replica_report &rep)
{
	const auto name = rep.remote ? replica_name(ps, rep.replica)
	                             : fmt::format("replica {} ({}, local)", rep.replica,
	                                           rep.replica == 0 ? "the master" : "a copy");
	if (!rep.error.empty() || !rep.skipped.empty()) {
		fmt::print("{}: not checked: {}\n", name, rep.error + rep.skipped);
		return;
	}
	for (const auto &x : rep.repairs)
		fmt::print("{}: repaired: {}\n", name, x);
	for (const auto &x : rep.problems)
		fmt::print("{}: {}\n", name, x);
	for (const auto &x : rep.notes)
		fmt::print("{}: note: {}\n", name, x);
	if (rep.consistent())
		fmt::print("{}: consistent{}\n", name,
		           rep.pool_size ? fmt::format(" ({} pool)", size_text(rep.pool_size))
		                         : "");
}

void add_json(json &j, const poolset::poolset &ps, const replica_report &rep)
{
	const auto &where = ps.replicas[rep.replica];
	j.begin_object().member("replica", std::uint64_t{rep.replica}).member("remote", rep.remote);
	if (rep.remote)
		j.member("target", where.target).member("descriptor", where.descriptor);
	j.member("status", status_of(rep));
	if (!rep.error.empty() || !rep.skipped.empty()) {
		j.member(rep.error.empty() ? "reason" : "error", rep.error + rep.skipped)
		    .end_object();
		return;
	}
	j.member("pool_size", rep.pool_size);
	for (auto [key, list] :
	     {std::pair{"problems", &rep.problems}, std::pair{"notes", &rep.notes},
	      std::pair{"repairs", &rep.repairs}}) {
		j.key(key).begin_array();
		for (const auto &x : *list)
			j.value(x);
		j.end_array();
	}
	j.end_object();
}

} // namespace

int cmd_check(const check_args &a)
{
	auto ps = load(a.poolset);
	if (ps.replicas.empty() || ps.replicas[0].is_remote())
		throw failure(
		    fmt::format("{}: the master replica (the first one) must be local", ps.file),
		    exit_usage);
	std::vector<replica_report> reports;
	for (std::size_t r = 0; r < ps.replicas.size(); ++r)
		if (!ps.replicas[r].is_remote())
			reports.push_back(check_local(ps, r, a.repair));
	// A local copy belongs to the master's pool set.
	for (auto &rep : reports)
		if (rep.replica > 0 && rep.part0 && reports.front().part0 &&
		    rep.part0->poolset_uuid != reports.front().part0->poolset_uuid)
			rep.problems.push_back(
			    fmt::format("its pool set UUID {} is not the master's {}: a copy of "
			                "another pool set; "
			                "re-create it from the master (pmempool sync)",
			                uuid_text(rep.part0->poolset_uuid),
			                uuid_text(reports.front().part0->poolset_uuid)));
	// The remote replicas are checked against the master, so only when it is sound; the
	// local checks' files are closed by now (the master takes its own locks).
	const auto &master_report = reports.front();
	std::unique_ptr<master> m;
	std::string no_master;
	if (!master_report.consistent())
		no_master = "the master is not sound (see replica 0)";
	else
		try {
			m = std::make_unique<master>(ps);
		} catch (const failure &f) {
			no_master = f.what();
		}
	std::unique_ptr<ring> rg;
	if (m)
		rg = std::make_unique<ring>(ps, *m);
	for (std::size_t r = 1; r < ps.replicas.size(); ++r) {
		if (!ps.replicas[r].is_remote())
			continue;
		if (!m) {
			replica_report rep;
			rep.replica = r;
			rep.remote = true;
			if (master_report.consistent())
				rep.error = no_master; // the master could not be mapped: why is new
			else
				rep.skipped = no_master;
			reports.push_back(rep);
			continue;
		}
		reports.push_back(check_remote(ps, *m, *rg, r, a.repair));
	}
	std::sort(reports.begin(), reports.end(),
	          [](const auto &x, const auto &y) { return x.replica < y.replica; });

	// A definite finding outranks what could not be looked at: 1 if anything is
	// inconsistent, else 2 if anything could not be checked, else 0.
	int result = exit_ok;
	for (const auto &rep : reports)
		if (!rep.problems.empty())
			result = exit_failed;
	for (const auto &rep : reports)
		if (!rep.error.empty() && result == exit_ok)
			result = exit_usage;
	if (a.json) {
		json j;
		j.begin_object()
		    .member("poolset", a.poolset)
		    .member("repair", a.repair)
		    .key("replicas")
		    .begin_array();
		for (const auto &rep : reports)
			add_json(j, ps, rep);
		j.end_array()
		    .member("consistent", result == exit_ok)
		    .member("exit_status", result)
		    .end_object();
		fmt::print("{}\n", j.str());
		return result;
	}
	for (const auto &rep : reports)
		print_text(ps, rep);
	if (result == exit_failed)
		fmt::print("{}: not consistent{}\n", ps.file,
		           a.repair ? "" : " (--repair fixes what it safely can; see rpmem(1))");
	else if (result == exit_ok)
		fmt::print("{}: consistent; `rpmem verify` compares the data\n", ps.file);
	return result;
}

} // namespace rpmem::tool
