// SPDX-License-Identifier: BSD-3-Clause
// The configuration as a whole: the command line, then config files, then the checks of the
// result ($HOME substituted, poolset-dir absolute, RPMEM_MR_MODE from the environment).
#include "config_settings.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

namespace rpmemd
{

using namespace detail;

namespace
{

/** Where poolset-dir came from, for the error that rejects it. */
std::string origin_of_poolset_dir(const cmdline_mask &given, const std::vector<std::string> &read)
{
	if (given.has(setting::poolset_dir))
		return "--poolset-dir";
	if (read.empty())
		return "the default";
	std::string files;
	for (const auto &f : read)
		files += fmt::format("{}{}", files.empty() ? "" : " or ", f);
	return fmt::format("the default or {}", files);
}

void finish(config &cfg, const cmdline_mask &given, const std::vector<std::string> &read,
            const environment &env)
{
	auto dir = substitute_home(cfg.poolset_dir, env.home);
	if (env.home.empty() && dir != cfg.poolset_dir)
		throw config_error(fmt::format(
		    "rpmemd: poolset-dir '{}' (from {}) uses $HOME but the home directory is "
		    "unknown (HOME unset, no passwd entry); set poolset-dir to an absolute path",
		    cfg.poolset_dir, origin_of_poolset_dir(given, read)));
	if (dir.empty() || dir.front() != '/') {
		auto shown_dir = dir == cfg.poolset_dir
		                     ? fmt::format("'{}'", dir)
		                     : fmt::format("'{}' ('{}')", dir, cfg.poolset_dir);
		throw config_error(fmt::format(
		    "rpmemd: poolset-dir {} (from {}) is not an absolute path; set "
		    "--poolset-dir or the poolset-dir config key to an absolute directory",
		    shown_dir, origin_of_poolset_dir(given, read)));
	}
	cfg.poolset_dir = std::move(dir);
	if (!cfg.mr_mode && env.mr_mode) {
		cfg.mr_mode = rpmem::fabric::parse_mr_mode(*env.mr_mode);
		if (!cfg.mr_mode)
			throw config_error(fmt::format(
			    "rpmemd: RPMEM_MR_MODE='{}' in rpmemd's environment is not auto, basic "
			    "or scalable; fix or unset it, or give --mr-mode",
			    shown(*env.mr_mode)));
	}
}

/** Whether the command line asks for --check-config: known before it parses, so that a check
 *  whose own command line is wrong still answers as a check. */
bool asks_check(int argc, char **argv)
{
	for (int i = 1; i < argc; ++i)
		if (argv[i] && std::string_view(argv[i]) == "--check-config")
			return true;
	return false;
}

} // namespace

environment environment::from_process()
{
	environment env;
	if (const char *mr = std::getenv("RPMEM_MR_MODE"); mr && *mr)
		env.mr_mode = mr;
	if (const char *home = std::getenv("HOME"); home && *home) {
		env.home = home;
		return env;
	}
	std::vector<char> buf(16384);
	passwd pw{};
	passwd *found = nullptr;
	if (getpwuid_r(getuid(), &pw, buf.data(), buf.size(), &found) == 0 && found &&
	    found->pw_dir)
		env.home = found->pw_dir;
	return env;
}

std::string substitute_home(std::string_view path, std::string_view home)
{
	constexpr std::string_view var = "$HOME";
	for (auto pos = path.find(var); pos != std::string_view::npos;
	     pos = path.find(var, pos + 1)) {
		auto after = pos + var.size();
		char next = after < path.size() ? path[after] : '\0';
		bool alnum = (next >= '0' && next <= '9') || (next >= 'a' && next <= 'z') ||
		             (next >= 'A' && next <= 'Z');
		if (!alnum)
			return fmt::format("{}{}{}", path.substr(0, pos), home, path.substr(after));
	}
	return std::string(path);
}

std::optional<port_range> parse_port_range(std::string_view text)
{
	auto port = [](std::string_view s) -> std::optional<std::uint16_t> {
		try {
			return static_cast<std::uint16_t>(number_value(s, 1, 65535));
		} catch (const value_error &) {
			return std::nullopt;
		}
	};
	const auto dash = text.find('-');
	auto first = port(text.substr(0, dash));
	auto last = dash == std::string_view::npos ? first : port(text.substr(dash + 1));
	if (!first || !last || *first > *last)
		return std::nullopt;
	return port_range{*first, *last};
}

std::string check_config(const config &cfg, const std::vector<std::string> &files_read)
{
	std::error_code ec;
	if (!std::filesystem::is_directory(cfg.poolset_dir, ec))
		throw config_error(
		    fmt::format("rpmemd: poolset-dir {} is not a directory{}{}: create "
		                "it or set poolset-dir",
		                cfg.poolset_dir, ec ? ": " : "", ec ? ec.message() : ""));
	if (!cfg.use_syslog) {
		int fd =
		    ::open(cfg.log_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
		if (fd < 0)
			throw config_error(
			    fmt::format("rpmemd: cannot open log file '{}': {}; fix "
			                "log-file or its directory's permissions, or "
			                "set use-syslog = yes",
			                cfg.log_file, std::strerror(errno)));
		::close(fd);
	}
	std::string out = "# rpmemd: the configuration is valid; ";
	if (files_read.empty()) {
		out += "no config file read\n";
	} else {
		out += "read";
		for (const auto &f : files_read)
			out += " " + f;
		out += "\n";
	}
	for (const auto &s : settings) {
		if (auto v = value_text(cfg, s.id))
			out += fmt::format("{} = {}\n", s.key, *v);
		else
			out += fmt::format("#{} = (rpmemd's choice, rpmemd(1))\n", s.key);
	}
	out += fmt::format("# command line only: nthreads = {}\n", cfg.nthreads);
	return out;
}

config load(int argc, char **argv, const environment &env)
{
	cmdline_mask given;
	config cfg;
	try {
		cfg = parse_command_line(argc, argv, &given);
		if (cfg.help || cfg.version)
			return cfg;
		auto read = read_config_files(cfg, given, env);
		finish(cfg, given, read, env);
		if (!cfg.check_config)
			return cfg;
		// Here, not in main(): a check prints nothing a client would read, and exits.
		std::fputs(check_config(cfg, read).c_str(), stdout);
		std::exit(0);
	} catch (const config_error &e) {
		if (!cfg.check_config && !asks_check(argc, argv))
			throw;
		const std::string_view what = e.what();
		std::fprintf(stderr, "%s%s\n",
		             what.starts_with("rpmemd:") ? "" : "rpmemd: ", e.what());
		std::exit(255);
	}
}

} // namespace rpmemd
