// SPDX-License-Identifier: BSD-3-Clause
// rpmem create | open-check | info | attr | rm TARGET DESC: one remote pool, through the same
// client core as librpmem (lib/client/remote_pool), so what works here works for applications.
#include "replicas.hpp"
#include "tool.hpp"

#include "json/json.hpp"

#include "client/remote_pool.hpp"
#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <memory>
#include <sys/mman.h>
#include <unistd.h>

namespace rpmem::tool
{

namespace
{

using client::remote_pool;

struct opened {
	std::unique_ptr<scratch> mem;
	std::unique_ptr<remote_pool> pool;
	control::pool_attr attr{};
	unsigned lanes = 0;
};

opened open_pool(const remote_args &r)
{
	opened o;
	o.mem = std::make_unique<scratch>(parse_size_arg(r.size, "--size"));
	o.lanes = r.lanes;
	o.pool = remote_pool::open(r.target, r.descriptor, o.mem->data(), o.mem->size(), &o.lanes,
	                           &o.attr);
	return o;
}

void print_session(const remote_args &r, const opened &o)
{
	fmt::print("Target            : {}\n", r.target);
	fmt::print("Pool set          : {}\n", r.descriptor);
	fmt::print("Pool size         : {} ({} bytes)\n", size_text(o.pool->remote_size()),
	           o.pool->remote_size());
	fmt::print("Made durable by   : {}\n",
	           o.pool->remote_is_pmem() ? "pmem_persist (persistent memory)" : "msync");
	fmt::print("Provider          : {}\n", o.pool->fabric().provider);
	fmt::print("Persist method    : {}\n", control::describe(o.pool->method()));
	fmt::print("Lanes             : {}\n", o.lanes);
}

/** The same as one JSON object: the session, then the attributes (tests/docs: rpmem(1)). */
void print_json(const remote_args &r, const opened &o, const control::pool_attr &a)
{
	json j;
	j.begin_object()
	    .member("target", r.target)
	    .member("descriptor", r.descriptor)
	    .member("pool_size", o.pool->remote_size())
	    .member("is_pmem", o.pool->remote_is_pmem())
	    .member("provider", o.pool->fabric().provider)
	    .member("persist_method", control::to_string(o.pool->method()))
	    .member("lanes", o.lanes)
	    .key("attributes")
	    .begin_object();
	json_attr(j, a);
	j.end_object().end_object();
	fmt::print("{}\n", j.str());
}

} // namespace

int cmd_create(const remote_args &r, const attr_options &attrs, bool no_headers)
{
	if (no_headers && attrs.any())
		throw failure("--no-headers creates a pool without attributes: drop the attribute "
		              "options or --no-headers",
		              exit_usage);
	scratch mem(parse_size_arg(r.size, "--size"));
	control::pool_attr a{};
	if (!no_headers) {
		// A new single-replica pool: its own UUID, and replica links pointing at itself
		// (what libpmemobj writes for a pool set without replicas).
		std::memcpy(a.signature.data(), "RPMEM", 5);
		a.major = 1;
		a.poolset_uuid = random_uuid();
		a.uuid = random_uuid();
		attrs.apply(a);
		if (a.next_uuid == decltype(a.next_uuid){})
			a.next_uuid = a.uuid;
		if (a.prev_uuid == decltype(a.prev_uuid){})
			a.prev_uuid = a.uuid;
	}
	unsigned lanes = r.lanes;
	auto pool = remote_pool::create(r.target, r.descriptor, mem.data(), mem.size(), &lanes,
	                                no_headers ? nullptr : &a);
	pool->close();
	fmt::print("created {} on {}: {} ({}), {}\n", r.descriptor, r.target, size_text(mem.size()),
	           no_headers ? "no headers" : signature_text(a.signature),
	           no_headers ? "" : "UUID " + uuid_text(a.uuid));
	return exit_ok;
}

int cmd_open_check(const remote_args &r)
{
	auto o = open_pool(r);
	// Prove the data path, not only the control session: read the first page back.
	std::uint64_t n = std::min<std::uint64_t>(o.mem->size(), 4096);
	o.pool->read(o.mem->data(), 0, n, 0);
	auto provider = o.pool->fabric().provider;
	auto method = o.pool->method();
	o.pool->close();
	fmt::print("{} on {}: opens: {} lane(s) over {}, {}, {} read back\n", r.descriptor,
	           r.target, o.lanes, provider, control::to_string(method), size_text(n));
	return exit_ok;
}

int cmd_info(const remote_args &r)
{
	auto o = open_pool(r);
	o.pool->close();
	if (r.json) {
		print_json(r, o, o.attr);
		return exit_ok;
	}
	print_session(r, o);
	print_attr(o.attr);
	return exit_ok;
}

int cmd_attr(const remote_args &r, const attr_options &attrs)
{
	auto o = open_pool(r);
	if (!attrs.any()) {
		o.pool->close();
		if (r.json)
			print_json(r, o, o.attr);
		else
			print_attr(o.attr);
		return exit_ok;
	}
	if (o.attr.is_zero())
		throw failure(fmt::format("{} on {} has no headers (OPTION NOHDRS): it has no "
		                          "attributes to set",
		                          r.descriptor, r.target));
	control::pool_attr a = o.attr;
	attrs.apply(a);
	o.pool->set_attr(&a);
	o.pool->close();
	if (r.json) {
		print_json(r, o, a);
		return exit_ok;
	}
	fmt::print("attributes of {} on {} set:\n", r.descriptor, r.target);
	print_attr(a);
	return exit_ok;
}

int cmd_rm(const remote_args &r, bool force, bool pool_set)
{
	int flags = (force ? static_cast<int>(client::remove_force) : 0) |
	            (pool_set ? static_cast<int>(client::remove_pool_set) : 0);
	remote_pool::remove(r.target, r.descriptor, flags);
	fmt::print("removed {} on {}{}\n", r.descriptor, r.target,
	           pool_set ? " (parts and pool set file)" : " (parts)");
	return exit_ok;
}

} // namespace rpmem::tool
