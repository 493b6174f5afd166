// SPDX-License-Identifier: BSD-3-Clause
// rpmem check POOLSET: is the pool set whole? pmempool check's questions, asked of a set with
// remote replicas (which pmempool check refuses): for each local replica, every part is there,
// as large as the pool set says, with a sound header tied into the set (checksum, pool set
// UUID, part links, shared fields) and no unfinished rebuild; for each remote replica, rpmemd
// opens it (a replica it refuses as damaged is inconsistent; one that cannot be reached is
// not checked), it is as large as the master and its attributes link it into the replica
// ring.
// The data itself is compared by `rpmem verify`.
//
// --repair fixes what can be fixed without judgement, from copies known good:
//  - a part header (not part 0's) that is damaged while part 0's and its neighbours' are sound:
//    written anew from part 0's fields and the UUID both neighbours link to;
//  - a remote replica that is missing, mislinked, marked possibly behind, or listed in the
//    master's record of replicas behind (pmdk/behind_record.hpp: a writer went on without it
//    while it could not be marked), when the master is sound: brought in line as `rpmem sync`
//    does (only the differing blocks move), and taken off that record;
//  - a remote replica rpmemd refuses as damaged (control status `damaged`: a part's header
//    is invalid, a part is shorter than its pool set declares, an ADR failure), when the
//    master is sound: its parts removed, re-created and the master copied whole.
// Anything else is reported with what to do; nothing is written without --repair.
#include "replicas.hpp"
#include "tool.hpp"

#include "client/remote_pool.hpp"
#include "pmdk/behind_record.hpp"
#include "pmdk/part_file.hpp"
#include "pmdk/pool_header.hpp"
#include "pmdk/pool_map.hpp"
#include "rpmem/error.hpp"
#include "json/json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <optional>
#include <set>
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
	pmdk::part_file file; // file.fd < 0: missing
	pmdk::pool_hdr hdr{};
	bool header_valid = false;
};

/** Writes a part header durably. Throws failure naming the part. */
void write_durably(const local_part &p, const pmdk::pool_hdr &h)
{
	try {
		pmdk::write_header(p.file, h);
	} catch (const rpmem::error &e) {
		throw failure(e.message());
	}
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
	if (fstat(parts[i].file.fd.get(), &st) == 0)
		fields.crtime =
		    static_cast<std::uint64_t>(st.st_ctime); // as PMDK stamps a new part
	auto h = pmdk::encode(fields);
	write_durably(parts[i], h);
	parts[i].hdr = h;
	parts[i].header_valid = true;
	return std::nullopt;
}

/** Opens the local replica r's parts (missing ones as empty entries, a short or missing part
 *  a problem) and reads the headers; false when it cannot look at all (rep.error says why). */
bool open_parts(const poolset::poolset &ps, std::size_t r, bool repair, replica_report &rep,
                std::vector<local_part> &out)
{
	const auto &parts = ps.replicas[r].parts;
	pmdk::part_rules rules;
	rules.read_only = !repair;
	rules.sizes = pmdk::part_rules::size_rule::any; // a short part is a finding, below
	rules.in_use_remedy = "a pool in use cannot be checked; close it first";
	for (std::size_t i = 0; i < parts.size(); ++i) {
		const auto &p = parts[i];
		local_part lp;
		try {
			lp.file = pmdk::open_part(p.path, p.size, p.line, rules);
		} catch (const rpmem::error &e) {
			if (e.errnum() == EBUSY) {
				rep.error = e.message();
				return false;
			}
			if (e.errnum() != ENOENT) {
				// Not a finding about the set: this command cannot look
				// (permissions...).
				rep.error =
				    fmt::format("{}:{}: part {}: {}{}", ps.file, p.line, i,
				                e.message(), repair ? " (for writing)" : "");
				return false;
			}
			rep.problems.push_back(fmt::format(
			    "{}:{}: part {} ({}): cannot open: {}{}", ps.file, p.line, i, p.path,
			    std::strerror(ENOENT),
			    r == 0 ? " — the master is lost: rebuild it from a replica "
			             "(pmempool sync) or promote one (rpmem promote)"
			           : " — the replica is lost: pmempool sync re-creates it"));
			out.push_back({});
			continue;
		}
		if (lp.file.file_size < p.size)
			rep.problems.push_back(fmt::format(
			    "{}:{}: part {} ({}) is {} bytes, smaller than the {} the pool set "
			    "declares: the pool was not created from this pool set",
			    ps.file, p.line, i, p.path, lp.file.file_size, p.size));
		if (i < ps.header_count(r)) {
			try {
				lp.hdr = pmdk::read_header(lp.file);
				lp.header_valid = !pmdk::check_header_alone(lp.hdr);
			} catch (const rpmem::error &) {
				// A header that cannot be read is reported as such below.
			}
		}
		out.push_back(std::move(lp));
	}
	return true;
}

/** Damaged headers, each on its own; with --repair rebuilt from sound neighbours. */
void check_each_header(std::vector<local_part> &parts, std::size_t nhdrs, bool repair,
                       replica_report &rep)
{
	for (std::size_t i = 0; i < nhdrs; ++i) {
		auto &lp = parts[i];
		if (lp.header_valid)
			continue;
		auto wrong = pmdk::check_header_alone(lp.hdr).value_or("cannot read the header");
		if (repair) {
			auto why_not = rebuild_part_header(parts, i);
			if (!why_not) {
				rep.repairs.push_back(fmt::format(
				    "part {} ({}): header rebuilt from part 0's and its "
				    "neighbours' ({})",
				    i, lp.file.path, wrong));
				continue;
			}
			wrong += "; not repaired: " + *why_not;
		} else if (i > 0) {
			wrong += " (--repair rebuilds it from part 0's and its neighbours')";
		}
		rep.problems.push_back(fmt::format("part {} ({}): {}", i, lp.file.path, wrong));
	}
}

/** How each sound header ties into the set, and what part 0's says of the whole. */
void check_links(const poolset::poolset &ps, const std::vector<local_part> &parts,
                 std::size_t nhdrs, replica_report &rep)
{
	const auto &first = parts[0].hdr;
	for (std::size_t i = 1; i < nhdrs; ++i) {
		auto prev = parts[(i + nhdrs - 1) % nhdrs].hdr.part_uuid;
		auto next = parts[(i + 1) % nhdrs].hdr.part_uuid;
		if (auto wrong = pmdk::check_header(parts[i].hdr, first, prev, next))
			rep.problems.push_back(
			    fmt::format("part {} ({}): {}", i, parts[i].file.path, *wrong));
	}
	if (nhdrs > 1 && (first.prev_part_uuid != parts[nhdrs - 1].hdr.part_uuid ||
	                  first.next_part_uuid != parts[1].hdr.part_uuid))
		rep.problems.push_back(fmt::format("part 0 ({}): its part links do not match the "
		                                   "neighbouring parts: parts were reordered or "
		                                   "replaced",
		                                   parts[0].file.path));
	if (rep.problems.empty())
		rep.part0 = first;
	if (pmdk::marked_rebuilding(first))
		rep.problems.push_back(fmt::format(
		    "marked as not whole: on a master, an interrupted rebuild from a replica "
		    "(finish it with `rpmem sync --from R {}`); on a replica, an asynchronous "
		    "writer's catch-up from its master that did not finish (run `rpmem sync` from "
		    "the master)",
		    ps.file));
	if (pmdk::marked_behind(first))
		rep.notes.push_back("marked possibly behind its master (its writer, which could "
		                    "leave it behind, did not close it cleanly)");
	if ((pmdk::load_le(first.feat.incompat) & pmdk::feat_incompat_sds) && first.sds.dirty)
		rep.notes.push_back("shutdown state dirty: the pool was not closed cleanly; "
		                    "libpmemobj checks the devices on its next open");
}

/** The local replica r: parts, sizes, headers; with --repair, damaged part headers. */
replica_report check_local(const poolset::poolset &ps, std::size_t r, bool repair)
{
	replica_report rep;
	rep.replica = r;
	const auto &parts = ps.replicas[r].parts;
	const std::size_t nhdrs = ps.header_count(r);
	std::vector<local_part> ps_parts;
	if (!open_parts(ps, r, repair, rep, ps_parts))
		return rep;
	for (std::size_t i = 0; i < parts.size(); ++i)
		rep.pool_size += pmdk::part_extent(i, parts[i].size, parts.size(), nhdrs).length;
	if (!rep.problems.empty() || nhdrs == 0)
		return rep; // a missing or short part: the headers say nothing more
	check_each_header(ps_parts, nhdrs, repair, rep);
	if (rep.problems.empty())
		check_links(ps, ps_parts, nhdrs, rep);
	return rep;
}

/** Remote replica r against the (sound) master; with --repair, `rpmem sync` of it. `record`:
 *  the master's record of replicas behind, when it lists this one. */
replica_report check_remote(const poolset::poolset &ps, const master &m, ring &ring, std::size_t r,
                            bool repair, const pmdk::behind_record *record)
{
	replica_report rep;
	rep.replica = r;
	rep.remote = true;
	const auto &where = ps.replicas[r];
	std::string damage; // rpmemd's words for a replica it refused as damaged
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
			if (pmdk::marked_behind(have))
				rep.problems.push_back("marked possibly behind the master (an "
				                       "asynchronous writer or a "
				                       "sync did not finish)");
			if (pmdk::marked_rebuilding(have))
				rep.problems.push_back(
				    "marked as being caught up from the master (an asynchronous "
				    "writer's catch-up after an outage did not finish): no "
				    "consistent pool until a sync");
		} else if (!have.is_zero()) {
			rep.problems.push_back("the replica has a pool header, the master has none "
			                       "(OPTION NOHDRS)");
		}
		if (record)
			rep.problems.push_back(fmt::format(
			    "listed in the master's record of replicas behind ({}): a writer went "
			    "on "
			    "without it while it could not be marked, so it may lack acknowledged "
			    "writes",
			    record->path()));
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
		if (damaged_replica(e)) {
			// rpmemd answers and names the part and the check it failed: a finding,
			// not a replica that could not be looked at.
			damage = e.message();
			rep.problems.push_back("damaged: " + damage); // rpmemd says what to do
		} else if (e.errnum() != ENOENT) {
			rep.error = rpmem::describe(e);
			return rep;
		} else {
			rep.problems.push_back(fmt::format("missing ({})", e.message()));
		}
	}
	const bool fixable = rep.pool_size == 0 || rep.pool_size >= m.size();
	if (rep.problems.empty() || !repair || !fixable)
		return rep;
	try {
		auto did = resync_replica(ps, m, ring, r);
		if (record) {
			// In line with the master now: off its record.
			record->remove({pmdk::behind_record::key(where)});
			did += "; taken off the master's record of replicas behind";
		}
		rep.repairs.push_back(
		    damage.empty() ? did : fmt::format("{} (it was damaged: {})", did, damage));
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

/** Every local replica; a copy must belong to the master's pool set. */
std::vector<replica_report> check_locals(const poolset::poolset &ps, bool repair)
{
	std::vector<replica_report> reports;
	for (std::size_t r = 0; r < ps.replicas.size(); ++r)
		if (!ps.replicas[r].is_remote())
			reports.push_back(check_local(ps, r, repair));
	for (auto &rep : reports)
		if (rep.replica > 0 && rep.part0 && reports.front().part0 &&
		    rep.part0->poolset_uuid != reports.front().part0->poolset_uuid)
			rep.problems.push_back(
			    fmt::format("its pool set UUID {} is not the master's {}: a copy of "
			                "another pool set; "
			                "re-create it from the master (pmempool sync)",
			                uuid_text(rep.part0->poolset_uuid),
			                uuid_text(reports.front().part0->poolset_uuid)));
	return reports;
}

/** Every remote replica, checked against the master, so only when it is sound; the local
 *  checks' files are closed by now (the master takes its own locks). */
void check_remotes(const poolset::poolset &ps, bool repair, std::vector<replica_report> &reports)
{
	const bool master_sound = reports.front().consistent();
	std::unique_ptr<master> m;
	std::string no_master;
	if (!master_sound)
		no_master = "the master is not sound (see replica 0)";
	else
		try {
			m = std::make_unique<master>(ps);
		} catch (const failure &f) {
			no_master = f.what();
		}
	std::unique_ptr<ring> rg;
	std::optional<pmdk::behind_record> record;
	std::set<std::string> listed;
	if (m) {
		rg = std::make_unique<ring>(ps, *m);
		record.emplace(ps);
		try {
			listed = record->read();
		} catch (const rpmem::error &e) {
			m.reset();
			no_master = fmt::format("the master's record of replicas behind cannot be "
			                        "read: {}",
			                        rpmem::describe(e));
		}
	}
	for (std::size_t r = 1; r < ps.replicas.size(); ++r) {
		if (!ps.replicas[r].is_remote())
			continue;
		if (m) {
			const bool behind =
			    listed.count(pmdk::behind_record::key(ps.replicas[r])) > 0;
			reports.push_back(
			    check_remote(ps, *m, *rg, r, repair, behind ? &*record : nullptr));
			continue;
		}
		replica_report rep;
		rep.replica = r;
		rep.remote = true;
		if (master_sound)
			rep.error = no_master; // the master could not be mapped: why is new
		else
			rep.skipped = no_master;
		reports.push_back(rep);
	}
}

/** A definite finding outranks what could not be looked at: 1 if anything is inconsistent,
 *  else 2 if anything could not be checked, else 0. */
int verdict(const std::vector<replica_report> &reports)
{
	int result = exit_ok;
	for (const auto &rep : reports)
		if (!rep.problems.empty())
			result = exit_failed;
	for (const auto &rep : reports)
		if (!rep.error.empty() && result == exit_ok)
			result = exit_usage;
	return result;
}

void print_json(const check_args &a, const poolset::poolset &ps,
                const std::vector<replica_report> &reports, int result)
{
	json j;
	j.begin_object().member("poolset", a.poolset).member("repair", a.repair);
	j.key("replicas").begin_array();
	for (const auto &rep : reports)
		add_json(j, ps, rep);
	j.end_array()
	    .member("consistent", result == exit_ok)
	    .member("exit_status", result)
	    .end_object();
	fmt::print("{}\n", j.str());
}

} // namespace

int cmd_check(const check_args &a)
{
	auto ps = load(a.poolset);
	if (ps.replicas.empty() || ps.replicas[0].is_remote())
		throw failure(
		    fmt::format("{}: the master replica (the first one) must be local", ps.file),
		    exit_usage);
	auto reports = check_locals(ps, a.repair);
	check_remotes(ps, a.repair, reports);
	std::sort(reports.begin(), reports.end(),
	          [](const auto &x, const auto &y) { return x.replica < y.replica; });
	const int result = verdict(reports);
	if (a.json) {
		print_json(a, ps, reports, result);
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
