// SPDX-License-Identifier: BSD-3-Clause
// rpmem: create, inspect, verify, check, synchronize and promote remote pool replicas (rpmem(1)).
//
//   rpmem create|open-check|info|attr|rm TARGET DESC    one remote pool (rpmem_create & co.)
//   rpmem verify POOLSET                                master vs each remote replica
//   rpmem sync POOLSET                                  rebuild stale remote replicas
//   rpmem check POOLSET [--repair]                      is the pool set whole
//   rpmem status [--json]                               sessions rpmemd serves here
//   rpmem promote REPLICA_POOLSET [--output FILE]       make a replica the master
//   rpmem bench ARGS...                                 rpmem-bench
//
// Remote access as for librpmem: RPMEM_CMD, RPMEM_SSH, RPMEM_SSH_*, RPMEM_ENABLE_* ...
#include "tool.hpp"

#include "rpmem/error.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>

using namespace rpmem::tool;

namespace
{

void add_remote(CLI::App *cmd, remote_args &r, bool size_required)
{
	cmd->add_option("TARGET", r.target, "[user@]host[:port] of the replica node (ssh)")
	    ->required();
	cmd->add_option("DESC", r.descriptor,
	                "pool set file name relative to rpmemd's poolset directory")
	    ->required();
	auto *size =
	    cmd->add_option("-s,--size", r.size,
	                    size_required ? "the pool's size; suffixes K, M, G, KiB..."
	                                  : "how much of the pool to map for this command "
	                                    "(nothing is written); suffixes K, M, G, KiB...");
	if (size_required)
		size->required();
	else
		size->capture_default_str();
	cmd->add_option("-l,--lanes", r.lanes, "lanes to ask for")->capture_default_str();
}

void add_attrs(CLI::App *cmd, attr_options &a)
{
	cmd->add_option("--signature", a.signature, "pool signature (up to 8 characters)");
	cmd->add_option("--major", a.major, "pool format major version");
	cmd->add_option("--compat", a.compat, "compat feature flags");
	cmd->add_option("--incompat", a.incompat, "incompat feature flags");
	cmd->add_option("--ro-compat", a.ro_compat, "read-only compat feature flags");
	cmd->add_option("--poolset-uuid", a.poolset_uuid, "pool set UUID");
	cmd->add_option("--uuid", a.uuid, "this replica's UUID");
	cmd->add_option("--next-uuid", a.next_uuid, "next replica's UUID");
	cmd->add_option("--prev-uuid", a.prev_uuid, "previous replica's UUID");
}

} // namespace

int main(int argc, char **argv)
{
	CLI::App app{"rpmem: create, inspect, verify, check, synchronize and promote remote "
	             "persistent-memory pool replicas (see rpmem(1))",
	             "rpmem"};
	app.set_version_flag("--version", std::string("rpmem ") + RPMEM_TOOL_VERSION);
	app.require_subcommand(1);
	app.fallthrough(false);

	remote_args r;
	attr_options attrs;
	bool no_headers = false, force = false, pool_set = false;
	auto *create = app.add_subcommand("create", "create a remote pool");
	add_remote(create, r, true);
	add_attrs(create, attrs);
	create->add_flag("--no-headers", no_headers,
	                 "a pool without headers (the remote pool set says OPTION NOHDRS)");
	auto *open_check = app.add_subcommand("open-check", "check that a remote pool opens and "
	                                                    "its data path works");
	add_remote(open_check, r, false);
	auto *info = app.add_subcommand("info", "print a remote pool's size, how it is "
	                                        "persisted and its attributes");
	add_remote(info, r, false);
	auto *attr = app.add_subcommand("attr", "set (or, without options, print) a remote "
	                                        "pool's attributes");
	add_remote(attr, r, false);
	add_attrs(attr, attrs);
	for (auto *cmd : {info, attr})
		cmd->add_flag("--json", r.json, "print one JSON object (rpmem(1): JSON OUTPUT)");
	auto *rm = app.add_subcommand("rm", "remove a remote pool's parts");
	add_remote(rm, r, false);
	rm->add_flag("-f,--force", force, "ignore missing parts and pool set files");
	rm->add_flag("--pool-set", pool_set, "also remove the pool set file");

	replicate_args rep;
	auto *verify = app.add_subcommand(
	    "verify", "compare the master with each remote replica, range by range");
	auto *sync = app.add_subcommand("sync", "rebuild remote replicas from the master");
	for (auto *cmd : {verify, sync}) {
		cmd->add_option("POOLSET", rep.poolset, "the pool set file the application opens")
		    ->required()
		    ->check(CLI::ExistingFile);
		cmd->add_option("-r,--replica", rep.replicas,
		                "only this replica (numbered from 0, the master; repeatable)");
	}
	verify->add_option("--max-ranges", rep.max_ranges, "differing ranges printed per replica")
	    ->capture_default_str();
	verify->add_flag("--json", rep.json, "print one JSON object (rpmem(1): JSON OUTPUT)");
	sync->add_option("--progress", rep.progress,
	                 "auto (a bar on a terminal, lines otherwise), bar, lines or none")
	    ->capture_default_str();
	sync->add_flag("-n,--dry-run", rep.dry_run,
	               "compare by block checksums and report what would move; write nothing");
	sync->add_flag("--full", rep.full, "copy the whole pool (no block checksums)");
	sync->add_option("--block-size", rep.block_size_text,
	                 "bytes per block checksum: a power of two from 4KiB to 64MiB")
	    ->capture_default_str();
	sync->add_flag("--json", rep.json, "print one JSON object (rpmem(1): JSON OUTPUT)");
	sync->add_option("--from", rep.from,
	                 "rebuild the master from this remote replica (only what differs)")
	    ->check(CLI::Range(1, 1 << 20));
	sync->add_flag("--force", rep.force,
	               "with --from: rebuild from a replica marked possibly behind");

	check_args ca;
	auto *check = app.add_subcommand(
	    "check", "check that the pool set is whole: local parts, headers, links, remote "
	             "replicas' sizes and attributes (--repair fixes what it safely can)");
	check->add_option("POOLSET", ca.poolset, "the pool set file the application opens")
	    ->required()
	    ->check(CLI::ExistingFile);
	check->add_flag("--repair", ca.repair,
	                "rebuild damaged part headers from sound ones and bring mislinked, "
	                "missing or behind remote replicas in line with a sound master");
	check->add_flag("--json", ca.json, "print one JSON object (rpmem(1): JSON OUTPUT)");

	status_args sa;
	auto *status = app.add_subcommand(
	    "status", "on a replica node: the pools this user's rpmemd sessions serve now");
	status->add_option("--dir", sa.dir,
	                   "the status directory rpmemd records sessions in (rpmemd "
	                   "--status-dir; default /run/user/UID/rpmemd, else /tmp/rpmemd-UID)");
	status->add_flag("--prune", sa.prune,
	                 "remove the records of sessions whose rpmemd is gone");
	status->add_flag("--json", sa.json, "print one JSON object (rpmem(1): JSON OUTPUT)");

	promote_args pa;
	auto *promote = app.add_subcommand(
	    "promote", "make a replica the master on its own host after the master is lost");
	promote->add_option("POOLSET", pa.poolset, "the replica's pool set file on this host")
	    ->required()
	    ->check(CLI::ExistingFile);
	promote->add_option("-o,--output", pa.output,
	                    "write a local pool set file for the "
	                    "promoted pool");
	promote->add_flag("-n,--dry-run", pa.dry_run, "check the headers, write nothing");
	promote->add_flag("--json", pa.json, "print one JSON object (rpmem(1): JSON OUTPUT)");
	promote->add_flag("-f,--force", pa.force,
	                  "promote a replica marked possibly behind its master (an "
	                  "asynchronous writer did not close cleanly), and rewrite the "
	                  "links even if they already point at the replica itself");

	std::vector<std::string> bench_args;
	auto *bench = app.add_subcommand("bench", "run rpmem-bench (all arguments are its own)");
	bench->prefix_command();
	bench->set_help_flag();
	bench->allow_extras();

	// `rpmem help [COMMAND]`, and a word that is no command, said as such (CLI11 would say
	// "A subcommand is required" or complain about the command's own arguments).
	if (argc >= 2 && argv[1][0] != '-') {
		auto commands = app.get_subcommands([](CLI::App *) { return true; });
		auto find = [&](const std::string &name) -> CLI::App * {
			for (auto *c : commands)
				if (c->get_name() == name)
					return c;
			return nullptr;
		};
		const std::string first = argv[1];
		if (first == "help") {
			CLI::App *which = argc >= 3 ? find(argv[2]) : &app;
			if (!which) {
				fmt::print(stderr,
				           "rpmem help: unknown command '{}' (rpmem --help lists "
				           "them)\n",
				           argv[2]);
				return exit_usage;
			}
			fmt::print("{}", which->help());
			return exit_ok;
		}
		if (!find(first)) {
			std::string names;
			for (auto *c : commands)
				names += (names.empty() ? "" : ", ") + c->get_name();
			fmt::print(stderr,
			           "rpmem: unknown command '{}'; the commands are {} (rpmem help "
			           "COMMAND says more)\n",
			           first, names);
			return exit_usage;
		}
	}
	try {
		app.parse(argc, argv);
	} catch (const CLI::ParseError &e) {
		int code = app.exit(e);
		return code == 0 ? exit_ok : exit_usage;
	}

	CLI::App *cmd = app.get_subcommands().front();
	try {
		if (cmd == create)
			return cmd_create(r, attrs, no_headers);
		if (cmd == open_check)
			return cmd_open_check(r);
		if (cmd == info)
			return cmd_info(r);
		if (cmd == attr)
			return cmd_attr(r, attrs);
		if (cmd == rm)
			return cmd_rm(r, force, pool_set);
		if (cmd == verify)
			return cmd_verify(rep);
		if (cmd == sync)
			return cmd_sync(rep);
		if (cmd == check)
			return cmd_check(ca);
		if (cmd == status)
			return cmd_status(sa);
		if (cmd == promote)
			return cmd_promote(pa);
		if (cmd == bench)
			return cmd_bench(bench->remaining());
	} catch (const failure &f) {
		std::fflush(stdout);
		fmt::print(stderr, "rpmem {}: {}\n", cmd->get_name(), f.what());
		return f.code();
	} catch (const rpmem::error &e) {
		std::fflush(stdout);
		fmt::print(stderr, "rpmem {}: {}\n", cmd->get_name(), rpmem::describe(e));
		return cmd == verify || cmd == check ? exit_usage : exit_failed;
	} catch (const std::exception &e) {
		std::fflush(stdout);
		fmt::print(stderr, "rpmem {}: {}\n", cmd->get_name(), e.what());
		return cmd == verify || cmd == check ? exit_usage : exit_failed;
	}
	return exit_usage;
}
