// SPDX-License-Identifier: BSD-3-Clause
// rpmem: create, inspect, verify, check, synchronize, watch and promote remote pool replicas
// (rpmem(1)).
//
//   rpmem create|open-check|info|attr|rm TARGET DESC    one remote pool (rpmem_create & co.)
//   rpmem verify POOLSET                                master vs each remote replica
//   rpmem sync POOLSET                                  rebuild stale remote replicas
//   rpmem check POOLSET [--repair]                      is the pool set whole
//   rpmem status [--json]                               sessions rpmemd serves here
//   rpmem top [FILE|DIR...] [-b] [-n N] [-d SECONDS]    live view of this host's pools
//   rpmem promote REPLICA_POOLSET [--output FILE]       make a replica the master
//   rpmem bench ARGS...                                 rpmem-bench
//
// Remote access as for librpmem: RPMEM_CMD, RPMEM_SSH, RPMEM_SSH_*, RPMEM_ENABLE_* ...
//
// This file is the command line: every command's options and help (CLI11), the table of
// commands, and running the one parsed. What a command does is cmd_NAME in its own file.
#include "tool.hpp"

#include "rpmem/error.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace rpmem::tool;

// Each command's options and help, and what runs it once they are parsed.
namespace rpmem::tool
{
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

void add_json_flag(CLI::App *cmd, bool &json)
{
	cmd->add_flag("--json", json, "print one JSON object (rpmem(1): JSON OUTPUT)");
}

command_run add_create(CLI::App &app)
{
	struct args {
		remote_args r;
		attr_options attrs;
		bool no_headers = false;
	};
	auto a = std::make_shared<args>();
	auto *cmd = app.add_subcommand("create", "create a remote pool");
	add_remote(cmd, a->r, true);
	add_attrs(cmd, a->attrs);
	cmd->add_flag("--no-headers", a->no_headers,
	              "a pool without headers (the remote pool set says OPTION NOHDRS)");
	return [a] { return cmd_create(a->r, a->attrs, a->no_headers); };
}

command_run add_open_check(CLI::App &app)
{
	auto r = std::make_shared<remote_args>();
	add_remote(app.add_subcommand("open-check", "check that a remote pool opens and its data "
	                                            "path works"),
	           *r, false);
	return [r] { return cmd_open_check(*r); };
}

command_run add_info(CLI::App &app)
{
	auto r = std::make_shared<remote_args>();
	auto *cmd = app.add_subcommand("info", "print a remote pool's size, how it is persisted "
	                                       "and its attributes");
	add_remote(cmd, *r, false);
	add_json_flag(cmd, r->json);
	return [r] { return cmd_info(*r); };
}

command_run add_attr(CLI::App &app)
{
	struct args {
		remote_args r;
		attr_options attrs;
	};
	auto a = std::make_shared<args>();
	auto *cmd = app.add_subcommand("attr", "set (or, without options, print) a remote pool's "
	                                       "attributes");
	add_remote(cmd, a->r, false);
	add_attrs(cmd, a->attrs);
	add_json_flag(cmd, a->r.json);
	return [a] { return cmd_attr(a->r, a->attrs); };
}

command_run add_rm(CLI::App &app)
{
	struct args {
		remote_args r;
		bool force = false, pool_set = false;
	};
	auto a = std::make_shared<args>();
	auto *cmd = app.add_subcommand("rm", "remove a remote pool's parts");
	add_remote(cmd, a->r, false);
	cmd->add_flag("-f,--force", a->force, "ignore missing parts and pool set files");
	cmd->add_flag("--pool-set", a->pool_set, "also remove the pool set file");
	return [a] { return cmd_rm(a->r, a->force, a->pool_set); };
}

void add_replica_selection(CLI::App *cmd, replicate_args &a)
{
	cmd->add_option("POOLSET", a.poolset, "the pool set file the application opens")
	    ->required()
	    ->check(CLI::ExistingFile);
	cmd->add_option("-r,--replica", a.replicas,
	                "only this replica (numbered from 0, the master; repeatable)");
	add_json_flag(cmd, a.json);
}

command_run add_verify(CLI::App &app)
{
	auto a = std::make_shared<replicate_args>();
	auto *cmd = app.add_subcommand(
	    "verify", "compare the master with each remote replica, range by range");
	add_replica_selection(cmd, *a);
	cmd->add_option("--max-ranges", a->max_ranges, "differing ranges printed per replica")
	    ->capture_default_str();
	return [a] { return cmd_verify(*a); };
}

command_run add_sync(CLI::App &app)
{
	auto a = std::make_shared<replicate_args>();
	auto *cmd = app.add_subcommand("sync", "rebuild remote replicas from the master");
	add_replica_selection(cmd, *a);
	cmd->add_option("--progress", a->progress,
	                "auto (a bar on a terminal, lines otherwise), bar, lines or none")
	    ->capture_default_str();
	cmd->add_flag("-n,--dry-run", a->dry_run,
	              "compare by block checksums and report what would move; write nothing");
	cmd->add_flag("--full", a->full, "copy the whole pool (no block checksums)");
	cmd->add_option("--block-size", a->block_size_text,
	                "bytes per block checksum: a power of two from 4KiB to 64MiB")
	    ->capture_default_str();
	cmd->add_option("--from", a->from,
	                "rebuild the master from this remote replica (only what differs)")
	    ->check(CLI::Range(1, 1 << 20));
	cmd->add_flag("--force", a->force,
	              "with --from: rebuild from a replica marked possibly behind");
	return [a] { return cmd_sync(*a); };
}

command_run add_check(CLI::App &app)
{
	auto a = std::make_shared<check_args>();
	auto *cmd = app.add_subcommand(
	    "check", "check that the pool set is whole: local parts, headers, links, remote "
	             "replicas' sizes and attributes (--repair fixes what it safely can)");
	cmd->add_option("POOLSET", a->poolset, "the pool set file the application opens")
	    ->required()
	    ->check(CLI::ExistingFile);
	cmd->add_flag("--repair", a->repair,
	              "rebuild damaged part headers from sound ones, bring mislinked, "
	              "missing or behind remote replicas in line with a sound master and "
	              "re-create damaged ones from it");
	add_json_flag(cmd, a->json);
	return [a] { return cmd_check(*a); };
}

command_run add_status(CLI::App &app)
{
	auto a = std::make_shared<status_args>();
	auto *cmd = app.add_subcommand(
	    "status", "on a replica node: the pools this user's rpmemd sessions serve now");
	cmd->add_option("--dir", a->dir,
	                "the status directory rpmemd records sessions in (rpmemd --status-dir; "
	                "default /run/user/UID/rpmemd, else /tmp/rpmemd-UID)");
	cmd->add_flag("--prune", a->prune, "remove the records of sessions whose rpmemd is gone");
	add_json_flag(cmd, a->json);
	return [a] { return cmd_status(*a); };
}

command_run add_top(CLI::App &app)
{
	auto a = std::make_shared<top_args>();
	auto *cmd = app.add_subcommand(
	    "top", "a live view of this host's replicated pools and the rpmemd sessions it serves");
	cmd->add_option("paths", a->paths,
	                "metrics files (RPMEM_STATS_FILE) or directories of them (*.prom, *.json); "
	                "default: those of this user's running processes");
	cmd->add_option("--dir", a->dir,
	                "the status directory rpmemd records sessions in (as rpmem status --dir)");
	cmd->add_option("-d,--delay", a->delay, "seconds between refreshes (default 1)");
	cmd->add_option("-n,--iterations", a->iterations,
	                "refreshes before exiting (default: until q; 1 in batch mode)");
	cmd->add_flag("-b,--batch", a->batch,
	              "print snapshots as plain text (the default when not on a terminal)");
	cmd->add_option("--sort", a->sort, "state (default), pool, rate, behind or errors");
	cmd->add_option("--stale", a->stale,
	                "seconds after which a file's data is stale (default: 3 of its writer's "
	                "RPMEM_STATS_INTERVAL, or 30)");
	return [a] { return cmd_top(*a); };
}

command_run add_promote(CLI::App &app)
{
	auto a = std::make_shared<promote_args>();
	auto *cmd = app.add_subcommand(
	    "promote", "make a replica the master on its own host after the master is lost");
	cmd->add_option("POOLSET", a->poolset, "the replica's pool set file on this host")
	    ->required()
	    ->check(CLI::ExistingFile);
	cmd->add_option("-o,--output", a->output,
	                "write a local pool set file for the promoted pool");
	cmd->add_flag("-n,--dry-run", a->dry_run, "check the headers, write nothing");
	add_json_flag(cmd, a->json);
	cmd->add_flag("-f,--force", a->force,
	              "promote a replica marked possibly behind its master (an asynchronous "
	              "writer did not close cleanly), and rewrite the links even if they "
	              "already point at the replica itself");
	return [a] { return cmd_promote(*a); };
}

command_run add_bench(CLI::App &app)
{
	auto *cmd = app.add_subcommand("bench", "run rpmem-bench (all arguments are its own)");
	cmd->prefix_command();
	cmd->set_help_flag();
	cmd->allow_extras();
	return [cmd] { return cmd_bench(cmd->remaining()); };
}

} // namespace
} // namespace rpmem::tool

namespace
{

/** One rpmem command: `add` adds it (name, options, help) to the command line and returns
 *  what runs it. A failure it does not foresee exits with `unforeseen`. */
struct command {
	command_run (*add)(CLI::App &app);
	int unforeseen;
};

/** The commands, in the order `rpmem --help` lists them. verify and check exit with 2 when
 *  they could not look at all (rpmem(1)); the others with 1. */
constexpr command commands[] = {
    {add_create, exit_failed}, {add_open_check, exit_failed}, {add_info, exit_failed},
    {add_attr, exit_failed},   {add_rm, exit_failed},         {add_verify, exit_usage},
    {add_sync, exit_failed},   {add_check, exit_usage},       {add_status, exit_failed},
    {add_top, exit_failed},    {add_promote, exit_failed},    {add_bench, exit_failed},
};

/**
 * `rpmem help [COMMAND]`, and a first word that is no command, said as such (CLI11 would say
 * "A subcommand is required" or complain about the command's own arguments). Returns the exit
 * status when the command line was answered here.
 */
std::optional<int> answer_help(CLI::App &app, int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-')
		return std::nullopt;
	auto all = app.get_subcommands([](CLI::App *) { return true; });
	auto find = [&](const std::string &name) -> CLI::App * {
		for (auto *c : all)
			if (c->get_name() == name)
				return c;
		return nullptr;
	};
	const std::string first = argv[1];
	if (first == "help") {
		CLI::App *which = argc >= 3 ? find(argv[2]) : &app;
		if (!which) {
			fmt::print(stderr,
			           "rpmem help: unknown command '{}' (rpmem --help lists them)\n",
			           argv[2]);
			return exit_usage;
		}
		fmt::print("{}", which->help());
		return exit_ok;
	}
	if (find(first))
		return std::nullopt;
	std::string names;
	for (auto *c : all)
		names += (names.empty() ? "" : ", ") + c->get_name();
	fmt::print(stderr,
	           "rpmem: unknown command '{}'; the commands are {} (rpmem help COMMAND says "
	           "more)\n",
	           first, names);
	return exit_usage;
}

/** Runs a parsed command: its failures said as "rpmem CMD: ..." with their exit status. */
int run(const std::string &name, const command_run &run_it, int unforeseen)
{
	try {
		return run_it();
	} catch (const failure &f) {
		std::fflush(stdout);
		fmt::print(stderr, "rpmem {}: {}\n", name, f.what());
		return f.code();
	} catch (const rpmem::error &e) {
		std::fflush(stdout);
		fmt::print(stderr, "rpmem {}: {}\n", name, rpmem::describe(e));
		return unforeseen;
	} catch (const std::exception &e) {
		std::fflush(stdout);
		fmt::print(stderr, "rpmem {}: {}\n", name, e.what());
		return unforeseen;
	}
}

} // namespace

int main(int argc, char **argv)
{
	CLI::App app{"rpmem: create, inspect, verify, check, synchronize, watch and promote remote "
	             "persistent-memory pool replicas (see rpmem(1))",
	             "rpmem"};
	app.set_version_flag("--version", std::string("rpmem ") + RPMEM_TOOL_VERSION);
	app.require_subcommand(1);
	app.fallthrough(false);
	std::vector<command_run> runs;
	for (const auto &c : commands)
		runs.push_back(c.add(app));

	if (auto answered = answer_help(app, argc, argv))
		return *answered;
	try {
		app.parse(argc, argv);
	} catch (const CLI::ParseError &e) {
		int code = app.exit(e);
		return code == 0 ? exit_ok : exit_usage;
	}
	CLI::App *cmd = app.get_subcommands().front();
	auto all = app.get_subcommands([](CLI::App *) { return true; });
	for (std::size_t i = 0; i < all.size(); ++i)
		if (all[i] == cmd)
			return run(cmd->get_name(), runs[i], commands[i].unforeseen);
	return exit_usage;
}
