// SPDX-License-Identifier: BSD-3-Clause
#include "config.hpp"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <unistd.h>

namespace rpmemd
{

namespace
{

constexpr std::string_view help_hint = "run 'rpmemd --help' for the list of options";

/** A value that does not parse; the caller adds where it came from. */
struct value_error {
	std::string why;
};

struct setting_info {
	setting id;
	std::string_view key; // long option name == config file key
};

constexpr std::array<setting_info, static_cast<std::size_t>(setting::count_)> settings = {{
    {setting::log_file, "log-file"},
    {setting::poolset_dir, "poolset-dir"},
    {setting::persist_apm, "persist-apm"},
    {setting::persist_general, "persist-general"},
    {setting::use_syslog, "use-syslog"},
    {setting::log_level, "log-level"},
    {setting::heartbeat_timeout, "heartbeat-timeout"},
    {setting::wait, "wait"},
    {setting::persist_commit, "persist-commit"},
    {setting::mr_mode, "mr-mode"},
    {setting::auth_timeout, "auth-timeout"},
    {setting::block_checksums, "block-checksums"},
    {setting::status_dir, "status-dir"},
}};

std::string valid_keys()
{
	std::string keys;
	for (const auto &s : settings)
		keys += fmt::format("{}{}", keys.empty() ? "" : ", ", s.key);
	return keys;
}

/** Config text as it may appear in a message: bounded (a line may be any length) and with
 * control bytes shown as '?'. */
std::string shown(std::string_view s)
{
	constexpr std::size_t max = 64;
	std::string out(s.substr(0, max));
	for (char &c : out)
		if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
			c = '?';
	return s.size() <= max ? out : out + "...";
}

std::string path_value(std::string_view value)
{
	if (value.empty())
		throw value_error{"the path is empty; give a path"};
	if (value.find('\0') != std::string_view::npos)
		throw value_error{"the path contains a NUL byte"};
	return std::string(value);
}

bool bool_value(std::string_view value)
{
	if (value == "yes")
		return true;
	if (value == "no")
		return false;
	throw value_error{fmt::format("'{}' is not a boolean; use yes or no", shown(value))};
}

/** Digits only (no sign, no spaces): strtoul's leniency turned "-1" into a huge count. */
unsigned long long number_value(std::string_view value, unsigned long long min,
                                unsigned long long max)
{
	unsigned long long n = 0;
	auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
	if (value.empty() || ec != std::errc() || end != value.data() + value.size() ||
	    value.front() == '+' || n < min || n > max)
		throw value_error{fmt::format("'{}' is not a whole number from {} to {}",
		                              shown(value), min, max)};
	return n;
}

/** Parses `value` with parse (an optional), or says what it is not and what to use. */
template <class Parse>
auto parsed(std::string_view value, Parse parse, std::string_view what, std::string_view use)
{
	auto v = parse(value);
	if (!v)
		throw value_error{fmt::format("'{}' is not {}; use {}", shown(value), what, use)};
	return *v;
}

bool &bool_field(config &cfg, setting s)
{
	switch (s) {
	case setting::persist_apm:
		return cfg.persist_apm;
	case setting::persist_general:
		return cfg.persist_general;
	case setting::persist_commit:
		return cfg.persist_commit;
	case setting::block_checksums:
		return cfg.block_checksums;
	default:
		return cfg.use_syslog;
	}
}

/** Sets `s` from its text form, unless `keep` says the command line set it already (the
 * value is still checked: a broken config file line is reported either way). */
void apply(config &cfg, setting s, std::string_view value, const cmdline_mask &keep)
{
	const bool assign = !keep.has(s);
	auto set = [assign](auto &field, auto v) {
		if (assign)
			field = std::move(v);
	};
	switch (s) {
	case setting::log_file:
		set(cfg.log_file, path_value(value));
		// PMDK: a log file turns syslog off, unless the command line chose syslog.
		if (assign && !keep.has(setting::use_syslog))
			cfg.use_syslog = false;
		return;
	case setting::poolset_dir:
		return set(cfg.poolset_dir, path_value(value));
	case setting::status_dir:
		return set(cfg.status_dir,
		           value == "none" ? std::string("none") : path_value(value));
	case setting::persist_apm:
	case setting::persist_general:
	case setting::persist_commit:
	case setting::use_syslog:
	case setting::block_checksums:
		return set(bool_field(cfg, s), bool_value(value));
	case setting::wait:
		return set(cfg.wait, parsed(value, rpmem::fabric::parse_wait_mode, "a way to wait",
		                            "adaptive, block or spin"));
	case setting::mr_mode:
		return set(cfg.mr_mode,
		           parsed(value, rpmem::fabric::parse_mr_mode, "a memory registration mode",
		                  "auto, basic or scalable"));
	case setting::log_level:
		return set(cfg.level, parsed(value, parse_log_level, "a log level",
		                             "err, warn, notice, info or debug"));
	case setting::heartbeat_timeout:
		// At least 1 ms: "never" would let a dead client hold the pool forever.
		return set(cfg.heartbeat_timeout,
		           std::chrono::milliseconds(number_value(value, 1, max_heartbeat_ms)));
	case setting::auth_timeout:
		// At least 10 ms: an honest client sends its request as soon as TCP connects.
		return set(cfg.auth_timeout,
		           std::chrono::milliseconds(number_value(value, 10, max_auth_timeout_ms)));
	case setting::count_:
		break;
	}
	throw value_error{"internal error: unknown setting"};
}

// ---- command line --------------------------------------------------------------------------

// getopt_long values of the long-only options: setting index + 256, past every short option.
constexpr int long_only(setting s)
{
	return 256 + static_cast<int>(s);
}

const option long_options[] = {
    {"config", required_argument, nullptr, 'c'},
    {"help", no_argument, nullptr, 'h'},
    {"version", no_argument, nullptr, 'V'},
    {"remove", required_argument, nullptr, 'r'},
    {"force", no_argument, nullptr, 'f'},
    {"pool-set", no_argument, nullptr, 's'},
    {"nthreads", required_argument, nullptr, 't'},
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

// ---- config files --------------------------------------------------------------------------

constexpr std::string_view blanks = " \t\r\f\v";

std::string_view trim(std::string_view s)
{
	auto first = s.find_first_not_of(blanks);
	if (first == std::string_view::npos)
		return {};
	return s.substr(first, s.find_last_not_of(blanks) - first + 1);
}

[[noreturn]] void bad_line(const std::string &file, std::size_t n, const std::string &what)
{
	throw config_error(fmt::format("Invalid config file line at {}:{}: {}", file, n, what));
}

void parse_line(config &cfg, std::string_view line, const std::string &file, std::size_t n,
                const cmdline_mask &given)
{
	line = trim(line.substr(0, line.find('#')));
	if (line.empty())
		return;
	auto eq = line.find('=');
	if (eq == std::string_view::npos)
		bad_line(file, n, fmt::format("no '=' in '{}'; write key = value", shown(line)));
	auto key = trim(line.substr(0, eq));
	auto value = trim(line.substr(eq + 1));
	if (key.empty())
		bad_line(file, n, "the key before '=' is empty; write key = value");
	if (value.empty())
		bad_line(file, n,
		         fmt::format("no value after '{} ='; give a value or delete the line",
		                     shown(key)));
	for (const auto &s : settings) {
		if (s.key != key)
			continue;
		try {
			apply(cfg, s.id, value, given);
		} catch (const value_error &e) {
			bad_line(file, n, fmt::format("bad value for {}: {}", s.key, e.why));
		}
		return;
	}
	bad_line(file, n,
	         fmt::format("unknown key '{}'; valid keys are {}", shown(key), valid_keys()));
}

/** The file's contents; nullopt if it does not exist and !must_exist. */
std::optional<std::string> read_file(const std::string &path, bool must_exist,
                                     std::string_view hint)
{
	int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && !must_exist)
		return std::nullopt;
	std::string text;
	if (fd >= 0) {
		char buf[4096];
		ssize_t n;
		while ((n = ::read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
			if (n > 0)
				text.append(buf, static_cast<std::size_t>(n));
		int err = errno;
		::close(fd);
		if (n == 0)
			return text;
		errno = err;
	}
	throw config_error(fmt::format("rpmemd: cannot read config file '{}': {}; {}", path,
	                               std::strerror(errno), hint));
}

void apply_file(config &cfg, const std::string &path, bool must_exist, const cmdline_mask &given,
                std::vector<std::string> &read)
{
	auto hint = must_exist ? "check the --config path" : "fix its permissions or remove it";
	if (auto text = read_file(path, must_exist, hint)) {
		parse_config_text(cfg, *text, path, given);
		read.push_back(path);
	}
}

/** Applies the config files load_config_files() documents; returns those that existed. */
std::vector<std::string> read_config_files(config &cfg, const cmdline_mask &given,
                                           const environment &env)
{
	std::vector<std::string> read;
	if (cfg.config_file) {
		apply_file(cfg, *cfg.config_file, true, given, read);
		return read;
	}
	apply_file(cfg, env.etc_config, false, given, read);
	if (!env.home.empty())
		apply_file(cfg, env.home + "/.rpmemd.conf", false, given, read);
	return read;
}

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

void parse_config_text(config &cfg, std::string_view text, const std::string &file,
                       const cmdline_mask &given)
{
	std::size_t n = 1;
	for (;; ++n) {
		auto end = text.find('\n');
		parse_line(cfg, text.substr(0, end), file, n, given);
		if (end == std::string_view::npos)
			return;
		text.remove_prefix(end + 1);
	}
}

void load_config_files(config &cfg, const cmdline_mask &given, const environment &env)
{
	read_config_files(cfg, given, env);
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

config load(int argc, char **argv, const environment &env)
{
	cmdline_mask given;
	config cfg = parse_command_line(argc, argv, &given);
	if (cfg.help || cfg.version)
		return cfg;
	auto read = read_config_files(cfg, given, env);
	finish(cfg, given, read, env);
	return cfg;
}

} // namespace rpmemd
