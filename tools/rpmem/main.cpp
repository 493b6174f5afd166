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
#include "tool.hpp"

#include "rpmem/error.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

using namespace rpmem::tool;

namespace
{

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
