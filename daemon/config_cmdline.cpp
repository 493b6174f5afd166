// SPDX-License-Identifier: BSD-3-Clause
// The command line: PMDK's options (getopt_long) and ours, each applied as it comes.
#include "config_settings.hpp"

#include <fmt/format.h>

#include <getopt.h>

namespace rpmemd
{

using namespace detail;

namespace
{

constexpr std::string_view help_hint = "run 'rpmemd --help' for the list of options";

// getopt_long values of the long-only options: setting index + 256, past every short option;
// the long-only actions past every setting.
constexpr int long_only(setting s)
{
	return 256 + static_cast<int>(s);
}
constexpr int check_config_option = 256 + static_cast<int>(setting::count_);

const option long_options[] = {
    {"config", required_argument, nullptr, 'c'},
    {"help", no_argument, nullptr, 'h'},
    {"version", no_argument, nullptr, 'V'},
    {"remove", required_argument, nullptr, 'r'},
    {"force", no_argument, nullptr, 'f'},
    {"pool-set", no_argument, nullptr, 's'},
    {"nthreads", required_argument, nullptr, 't'},
    {"check-config", no_argument, nullptr, check_config_option},
    {"log-file", required_argument, nullptr, long_only(setting::log_file)},
    {"poolset-dir", required_argument, nullptr, long_only(setting::poolset_dir)},
    {"persist-apm", no_argument, nullptr, long_only(setting::persist_apm)},
    {"persist-general", no_argument, nullptr, long_only(setting::persist_general)},
    {"use-syslog", no_argument, nullptr, long_only(setting::use_syslog)},
    {"log-level", required_argument, nullptr, long_only(setting::log_level)},
    {"heartbeat-timeout", required_argument, nullptr, long_only(setting::heartbeat_timeout)},
    {"wait", required_argument, nullptr, long_only(setting::wait)},
    {"persist-commit", no_argument, nullptr, long_only(setting::persist_commit)},
    {"mr-mode", required_argument, nullptr, long_only(setting::mr_mode)},
    {"auth-timeout", required_argument, nullptr, long_only(setting::auth_timeout)},
    {"block-checksums", required_argument, nullptr, long_only(setting::block_checksums)},
    {"status-dir", required_argument, nullptr, long_only(setting::status_dir)},
    {"nic-writes-durable", no_argument, nullptr, long_only(setting::nic_writes_durable)},
    {"port-range", required_argument, nullptr, long_only(setting::port_range)},
    {"resident", required_argument, nullptr, long_only(setting::resident)},
    {nullptr, 0, nullptr, 0},
};

/** "-c/--config", "--log-file" or "-x" for getopt value `val`. */
std::string option_name(int val)
{
	for (const option *o = long_options; o->name; ++o) {
		if (o->val != val)
			continue;
		if (val < 256)
			return fmt::format("-{}/--{}", static_cast<char>(val), o->name);
		return fmt::format("--{}", o->name);
	}
	return fmt::format("-{}", static_cast<char>(val));
}

bool known_option(int val)
{
	for (const option *o = long_options; o->name; ++o)
		if (o->val == val)
			return true;
	return false;
}

[[noreturn]] void bad_option(const std::string &what)
{
	throw config_error(fmt::format("rpmemd: {}; {}", what, help_hint));
}

/** getopt_long reported '?' (unknown option or a value given to a flag) or ':' (value
 * missing). `element` is the command-line word it complained about, if known. */
[[noreturn]] void getopt_failure(int ret, const char *element)
{
	if (ret == ':')
		bad_option(fmt::format("option {} needs a value", option_name(optopt)));
	if (optopt != 0 && known_option(optopt))
		bad_option(fmt::format("option {} takes no value", option_name(optopt)));
	if (optopt != 0)
		bad_option(fmt::format("unknown option '-{}'", static_cast<char>(optopt)));
	std::string_view word = element ? element : "?";
	bad_option(fmt::format("unknown or ambiguous option '{}'", word.substr(0, word.find('='))));
}

/** Applies one option; false when parsing must stop (-h, -V). */
bool handle_option(config &cfg, cmdline_mask &given, int val, const char *arg)
{
	static const cmdline_mask none;
	try {
		switch (val) {
		case 'c':
			cfg.config_file = path_value(arg);
			return true;
		case 'h':
			cfg.help = true;
			return false;
		case 'V':
			cfg.version = true;
			return false;
		case 'r':
			cfg.remove_desc = path_value(arg);
			return true;
		case 'f':
			cfg.force = true;
			return true;
		case 's':
			cfg.remove_poolset = true;
			return true;
		case 't':
			cfg.nthreads = static_cast<unsigned>(number_value(arg, 0, max_nthreads));
			return true;
		case check_config_option:
			cfg.check_config = true;
			return true;
		default:
			break;
		}
		auto s = static_cast<setting>(val - 256);
		apply(cfg, s, arg ? std::string_view(arg) : "yes", none); // flags carry no value
		given.set(s);
		// Command line wins, as documented: PMDK let a later config-file line
		// "use-syslog = yes" turn syslog back on after --log-file; here --log-file
		// decides syslog too (a later --use-syslog on the command line still can).
		if (s == setting::log_file)
			given.set(setting::use_syslog);
		return true;
	} catch (const value_error &e) {
		bad_option(fmt::format("invalid {}: {}", option_name(val), e.why));
	}
}

} // namespace

config parse_command_line(int argc, char **argv, cmdline_mask *given)
{
	config cfg;
	cmdline_mask local;
	cmdline_mask &mask = given ? *given : local;
	opterr = 0; // we report errors ourselves, with a hint
	optind = 0; // 0, not 1: makes glibc reinitialize, so a second parse works (tests)
	for (;;) {
		int ret = getopt_long(argc, argv, ":c:hVr:fst:", long_options, nullptr);
		if (ret == -1)
			break;
		if (ret == '?' || ret == ':')
			getopt_failure(ret,
			               optind > 0 && optind <= argc ? argv[optind - 1] : nullptr);
		if (!handle_option(cfg, mask, ret, optarg))
			break;
	}
	return cfg;
}

} // namespace rpmemd
