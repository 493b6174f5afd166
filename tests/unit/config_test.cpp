// SPDX-License-Identifier: BSD-3-Clause
// rpmemd command line, config files and logger (daemon/config.*, daemon/log.*).
#include "config.hpp"
#include "log.hpp"

#include "../support/syslog_probe.hpp"

#include <rpmem/error.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

using namespace rpmemd;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace
{

/** argv for getopt_long, which permutes it: owned, mutable copies. */
class args
{
public:
	args(std::initializer_list<std::string> words) : words_(words)
	{
		words_.insert(words_.begin(), "rpmemd");
		for (auto &w : words_)
			ptrs_.push_back(w.data());
		ptrs_.push_back(nullptr);
	}
	int argc() const { return static_cast<int>(words_.size()); }
	char **argv() { return ptrs_.data(); }

private:
	std::vector<std::string> words_;
	std::vector<char *> ptrs_;
};

config parse(std::initializer_list<std::string> words, cmdline_mask *given = nullptr)
{
	args a(words);
	return parse_command_line(a.argc(), a.argv(), given);
}

/** what() of the config_error `f` throws; fails the test if it throws nothing. */
std::string error_of(const std::function<void()> &f)
{
	try {
		f();
	} catch (const config_error &e) {
		return e.what();
	}
	FAIL("no config_error thrown");
	return {};
}

std::string parse_error(std::initializer_list<std::string> words)
{
	return error_of([&] { parse(words); });
}

std::string text_error(std::string_view text)
{
	return error_of([&] {
		config cfg;
		parse_config_text(cfg, text, "test.conf", cmdline_mask{});
	});
}

config from_text(std::string_view text, const cmdline_mask &given = {})
{
	config cfg;
	parse_config_text(cfg, text, "test.conf", given);
	return cfg;
}

struct temp_dir {
	fs::path path;
	temp_dir()
	{
		std::string tmpl = (fs::temp_directory_path() / "rpmemd-config-XXXXXX").string();
		REQUIRE(mkdtemp(tmpl.data()) != nullptr);
		path = tmpl;
	}
	~temp_dir() { fs::remove_all(path); }
	std::string write(const std::string &name, std::string_view text) const
	{
		auto p = path / name;
		std::ofstream(p) << text;
		return p.string();
	}
};

std::string slurp(const std::string &path)
{
	std::ifstream in(path);
	std::stringstream ss;
	ss << in.rdbuf();
	return ss.str();
}

std::vector<std::string> lines_of(const std::string &text)
{
	std::vector<std::string> lines;
	std::istringstream in(text);
	for (std::string l; std::getline(in, l);)
		lines.push_back(l);
	return lines;
}

/** Logs to a fresh file in `dir` at `level`; restores stderr logging when destroyed. */
struct file_logging {
	std::string path;
	file_logging(const temp_dir &dir, log_level level)
	{
		path = (dir.path / "rpmemd.log").string();
		config cfg;
		cfg.use_syslog = false;
		cfg.log_file = path;
		cfg.level = level;
		logger::instance().init(cfg);
	}
	~file_logging() { logger::instance().init_stderr(); }
};

} // namespace

// ---- command line --------------------------------------------------------------------------

TEST_CASE("no options gives PMDK's defaults, but sessions are logged", "[cmdline]")
{
	cmdline_mask given;
	auto cfg = parse({}, &given);
	CHECK(cfg.log_file == "/var/log/rpmemd.log");
	CHECK(cfg.poolset_dir == "$HOME");
	CHECK_FALSE(cfg.persist_apm);
	CHECK(cfg.persist_general);
	CHECK(cfg.use_syslog);
	CHECK(cfg.level == log_level::notice); // PMDK: err, which logged no session
	CHECK(cfg.nthreads == 0);
	CHECK_FALSE(cfg.config_file);
	CHECK_FALSE(cfg.remove_desc);
	CHECK_FALSE(cfg.force);
	CHECK_FALSE(cfg.remove_poolset);
	CHECK_FALSE(cfg.help);
	CHECK_FALSE(cfg.version);
	CHECK(cfg.heartbeat_timeout == std::chrono::milliseconds(5000));
	CHECK(cfg.wait == rpmem::fabric::wait_mode::adaptive);
	CHECK_FALSE(cfg.persist_commit);
	CHECK_FALSE(cfg.mr_mode);
	CHECK(cfg.auth_timeout == std::chrono::milliseconds(1000));
	for (int s = 0; s < static_cast<int>(setting::count_); ++s)
		CHECK_FALSE(given.has(static_cast<setting>(s)));
}

TEST_CASE("options with a value accept -x v, --opt v and --opt=v", "[cmdline]")
{
	for (auto cfg : {parse({"-c", "/c.conf"}), parse({"--config", "/c.conf"}),
	                 parse({"--config=/c.conf"}), parse({"-c/c.conf"})})
		CHECK(cfg.config_file == "/c.conf");
	for (auto cfg : {parse({"-r", "a/p.set"}), parse({"--remove", "a/p.set"}),
	                 parse({"--remove=a/p.set"})})
		CHECK(cfg.remove_desc == "a/p.set");
	for (auto cfg : {parse({"-t", "7"}), parse({"--nthreads", "7"}), parse({"--nthreads=7"})})
		CHECK(cfg.nthreads == 7);
	for (auto cfg : {parse({"--log-file", "/l"}), parse({"--log-file=/l"})})
		CHECK(cfg.log_file == "/l");
	for (auto cfg : {parse({"--poolset-dir", "/p"}), parse({"--poolset-dir=/p"})})
		CHECK(cfg.poolset_dir == "/p");
	for (auto cfg : {parse({"--log-level", "notice"}), parse({"--log-level=notice"})})
		CHECK(cfg.level == log_level::notice);
	for (auto cfg : {parse({"--heartbeat-timeout", "250"}), parse({"--heartbeat-timeout=250"})})
		CHECK(cfg.heartbeat_timeout == std::chrono::milliseconds(250));
	for (auto cfg : {parse({"--wait", "spin"}), parse({"--wait=spin"})})
		CHECK(cfg.wait == rpmem::fabric::wait_mode::spin);
	CHECK(parse({"--wait=block"}).wait == rpmem::fabric::wait_mode::block);
	for (auto cfg : {parse({"--mr-mode", "basic"}), parse({"--mr-mode=basic"})})
		CHECK(cfg.mr_mode == rpmem::fabric::mr_mode::basic);
	CHECK(parse({"--mr-mode=scalable"}).mr_mode == rpmem::fabric::mr_mode::scalable);
	CHECK(parse({"--mr-mode=auto"}).mr_mode == rpmem::fabric::mr_mode::automatic);
	for (auto cfg : {parse({"--auth-timeout", "250"}), parse({"--auth-timeout=250"})})
		CHECK(cfg.auth_timeout == std::chrono::milliseconds(250));
	CHECK(parse({}).block_checksums);
	for (auto cfg : {parse({"--block-checksums", "no"}), parse({"--block-checksums=no"})})
		CHECK_FALSE(cfg.block_checksums);
	CHECK(parse({"--block-checksums=yes"}).block_checksums);
	CHECK(parse({}).status_dir.empty()); // the default directory, chosen at run time
	CHECK(parse({"--status-dir=/srv/rpmemd-status"}).status_dir == "/srv/rpmemd-status");
	CHECK(parse({"--status-dir", "none"}).status_dir == "none");
	// The operator's word that RDMA NIC writes are durable here: never assumed.
	CHECK_FALSE(parse({}).nic_writes_durable);
	CHECK(parse({"--nic-writes-durable"}).nic_writes_durable);
}

TEST_CASE("bad wait and memory registration modes", "[cmdline]")
{
	CHECK_THAT(parse_error({"--wait=poll"}),
	           Contains("invalid --wait: 'poll' is not a way to wait; use adaptive, block or "
	                    "spin"));
	CHECK_THAT(parse_error({"--persist-commit=yes"}), Contains("takes no value"));
	CHECK_THAT(parse_error({"--mr-mode=virt"}),
	           Contains("invalid --mr-mode: 'virt' is not a memory registration mode; use "
	                    "auto, basic or scalable"));
}

TEST_CASE("flags", "[cmdline]")
{
	CHECK(parse({"-f"}).force);
	CHECK(parse({"--force"}).force);
	CHECK(parse({"-s"}).remove_poolset);
	CHECK(parse({"--pool-set"}).remove_poolset);
	CHECK(parse({"--persist-apm"}).persist_apm);
	CHECK(parse({"--persist-general"}).persist_general);
	CHECK(parse({"--persist-commit"}).persist_commit);
	CHECK(parse({"--log-file=/l", "--use-syslog"}).use_syslog);

	auto clustered = parse({"-fs"});
	CHECK(clustered.force);
	CHECK(clustered.remove_poolset);
}

TEST_CASE("libpmempool's and PMDK test harness's command lines parse", "[cmdline]")
{
	auto remove = parse({"--remove", "dir/pool.set", "--force", "--pool-set"});
	CHECK(remove.remove_desc == "dir/pool.set");
	CHECK(remove.force);
	CHECK(remove.remove_poolset);

	cmdline_mask given;
	auto harness = parse({"--log-file=/tmp/r.log", "--log-level=info", "--poolset-dir=/pools",
	                      "--config=/tmp/r.conf", "--persist-apm"},
	                     &given);
	CHECK(harness.log_file == "/tmp/r.log");
	CHECK_FALSE(harness.use_syslog);
	CHECK(harness.level == log_level::info);
	CHECK(harness.poolset_dir == "/pools");
	CHECK(harness.config_file == "/tmp/r.conf");
	CHECK(harness.persist_apm);
	for (auto s : {setting::log_file, setting::use_syslog, setting::log_level,
	               setting::poolset_dir, setting::persist_apm})
		CHECK(given.has(s));
	CHECK_FALSE(given.has(setting::persist_general));
}

TEST_CASE("non-option arguments are ignored, as PMDK did", "[cmdline]")
{
	auto cfg = parse({"stray", "--force", "another"});
	CHECK(cfg.force);
}

TEST_CASE("help and version options stop parsing", "[cmdline]")
{
	CHECK(parse({"-h"}).help);
	CHECK(parse({"--help"}).help);
	CHECK(parse({"-V"}).version);
	CHECK(parse({"--version"}).version);
	// What follows is not even looked at: --help works whatever else is on the line.
	CHECK(parse({"--help", "--bogus", "--log-level=loud"}).help);
	CHECK(parse({"-V", "-t", "x"}).version);
}

TEST_CASE("unknown options are rejected with a usage hint", "[cmdline]")
{
	auto short_opt = parse_error({"-x"});
	CHECK_THAT(short_opt, Contains("unknown option '-x'"));
	CHECK_THAT(short_opt, Contains("rpmemd --help"));

	auto long_opt = parse_error({"--bogus=1"});
	CHECK_THAT(long_opt, Contains("'--bogus'"));
	CHECK_THAT(long_opt, Contains("rpmemd --help"));

	// An ambiguous abbreviation: --persist-apm or --persist-general?
	CHECK_THAT(parse_error({"--persist"}), Contains("'--persist'"));
	// Config-file-only spelling is not an option.
	CHECK_THAT(parse_error({"--max-lanes=3"}), Contains("'--max-lanes'"));
}

TEST_CASE("port-range: first-last or one port, from 1 to 65535, on the command line or in a "
          "file",
          "[cmdline][config-file]")
{
	CHECK_FALSE(parse({}).ports); // an ephemeral port
	for (auto cfg : {parse({"--port-range", "7000-7010"}), parse({"--port-range=7000-7010"})})
		CHECK(cfg.ports == port_range{7000, 7010});
	CHECK(parse({"--port-range=7001"}).ports == port_range{7001, 7001});
	CHECK(parse({"--port-range=1-65535"}).ports == port_range{1, 65535});
	for (auto bad : {"0-10", "10-5", "65536", "7000-70000", "a-b", "7000-", "-7000",
	                 "7000--7001", "+7000", " 7000", "7000-7001-7002", ""}) {
		INFO("'" << bad << "'");
		CHECK_FALSE(parse_port_range(bad));
		CHECK_THAT(parse_error({std::string("--port-range=") + bad}),
		           Contains("invalid --port-range") && Contains("is not a port range") &&
		               Contains("first-last or one port, from 1 to 65535"));
	}
	CHECK(from_text("port-range = 9000").ports == port_range{9000, 9000});
	// The command line wins over a file.
	config cfg = parse({"--port-range=8000-8001"});
	cmdline_mask given;
	given.set(setting::port_range);
	parse_config_text(cfg, "port-range = 9000-9001\n", "test.conf", given);
	CHECK(cfg.ports == port_range{8000, 8001});
}

TEST_CASE("check_config: every key with its effective value, as a config file would set it",
          "[check-config]")
{
	temp_dir dir;
	config cfg = parse({"--check-config", "--port-range=7000-7009", "--log-level=info"});
	CHECK(cfg.check_config);
	cfg.poolset_dir = dir.path.string();
	const auto text = check_config(cfg, {"/etc/rpmemd/rpmemd.conf", "/root/.rpmemd.conf"});
	INFO(text);
	CHECK_THAT(text, Contains("# rpmemd: the configuration is valid; read "
	                          "/etc/rpmemd/rpmemd.conf /root/.rpmemd.conf\n"));
	CHECK_THAT(text, Contains("\npoolset-dir = " + dir.path.string() + "\n"));
	CHECK_THAT(text, Contains("\nport-range = 7000-7009\n"));
	CHECK_THAT(text, Contains("\nlog-level = info\n"));
	CHECK_THAT(text, Contains("\npersist-apm = no\n"));
	CHECK_THAT(text, Contains("\n#status-dir = (rpmemd's choice, rpmemd(1))\n"));
	CHECK_THAT(text, Contains("\n# command line only: nthreads = 0\n"));
	// Every key once, at the start of a line: the text is a config file rpmemd reads back to
	// the same configuration.
	for (auto key :
	     {"log-file", "poolset-dir", "persist-apm", "persist-general", "use-syslog",
	      "log-level", "heartbeat-timeout", "wait", "persist-commit", "mr-mode", "auth-timeout",
	      "block-checksums", "status-dir", "nic-writes-durable", "port-range"}) {
		INFO(key);
		std::regex line("(^|\n)#?" + std::string(key) + " = ");
		CHECK(std::distance(std::sregex_iterator(text.begin(), text.end(), line),
		                    std::sregex_iterator()) == 1);
	}
	auto back = from_text(text);
	CHECK(back.poolset_dir == cfg.poolset_dir);
	CHECK(back.ports == cfg.ports);
	CHECK(back.level == cfg.level);
	CHECK(back.use_syslog == cfg.use_syslog);
	CHECK(back.log_file == cfg.log_file);
	CHECK(check_config(cfg, {}).starts_with("# rpmemd: the configuration is valid; no config "
	                                        "file read\n"));
}

TEST_CASE("check_config: what would stop a session although the syntax is right", "[check-config]")
{
	temp_dir dir;
	config cfg;
	cfg.poolset_dir = (dir.path / "missing").string();
	CHECK_THAT(error_of([&] { check_config(cfg, {}); }),
	           Contains("poolset-dir " + cfg.poolset_dir + " is not a directory") &&
	               Contains("create it or set poolset-dir"));
	cfg.poolset_dir = dir.path.string();
	cfg.use_syslog = false;
	cfg.log_file = (dir.path / "no-such-dir" / "rpmemd.log").string();
	CHECK_THAT(error_of([&] { check_config(cfg, {}); }),
	           Contains("cannot open log file '" + cfg.log_file +
	                    "': No such file or directory; fix log-file"));
	// A log file that can be opened is created, as rpmemd would.
	cfg.log_file = (dir.path / "rpmemd.log").string();
	CHECK_THAT(check_config(cfg, {}), Contains("\nuse-syslog = no\n"));
	CHECK(fs::exists(cfg.log_file));
}

TEST_CASE("missing and surplus values are rejected", "[cmdline]")
{
	CHECK_THAT(parse_error({"--log-level"}), Contains("--log-level needs a value"));
	CHECK_THAT(parse_error({"-t"}), Contains("-t/--nthreads needs a value"));
	CHECK_THAT(parse_error({"-c"}), Contains("-c/--config needs a value"));
	CHECK_THAT(parse_error({"--help=yes"}), Contains("-h/--help takes no value"));
	CHECK_THAT(parse_error({"--persist-apm=yes"}), Contains("--persist-apm takes no value"));
	CHECK_THAT(parse_error({"--log-file="}), Contains("the path is empty"));
	CHECK_THAT(parse_error({"--poolset-dir="}), Contains("--poolset-dir"));
}

TEST_CASE("bad log level", "[cmdline]")
{
	auto e = parse_error({"--log-level=loud"});
	CHECK_THAT(e, Contains("invalid --log-level: 'loud' is not a log level"));
	CHECK_THAT(e, Contains("err, warn, notice, info or debug"));
	CHECK_THAT(e, Contains("rpmemd --help"));
	CHECK_THAT(parse_error({"--log-level=ERR"}), Contains("'ERR'"));
}

TEST_CASE("bad nthreads", "[cmdline]")
{
	for (auto bad : {"abc", "-1", "+4", "4x", " 4", "", "1025", "99999999999999999999999"}) {
		INFO("nthreads '" << bad << "'");
		auto e = parse_error({"--nthreads", bad});
		CHECK_THAT(e, Contains("invalid -t/--nthreads"));
		CHECK_THAT(e, Contains("whole number from 0 to 1024"));
	}
	CHECK(parse({"-t", "0"}).nthreads == 0);
	CHECK(parse({"-t", "1024"}).nthreads == 1024);
}

TEST_CASE("bad heartbeat timeout", "[cmdline]")
{
	CHECK_THAT(parse_error({"--heartbeat-timeout=0"}),
	           Contains("'0' is not a whole number from 1 to 3600000"));
	CHECK_THAT(parse_error({"--heartbeat-timeout=5s"}), Contains("whole number"));
	CHECK_THAT(parse_error({"--heartbeat-timeout=3600001"}), Contains("whole number"));
}

TEST_CASE("bad auth timeout", "[cmdline]")
{
	CHECK_THAT(parse_error({"--auth-timeout=9"}),
	           Contains("'9' is not a whole number from 10 to 60000"));
	CHECK_THAT(parse_error({"--auth-timeout=1s"}), Contains("whole number"));
	CHECK_THAT(parse_error({"--auth-timeout=60001"}), Contains("whole number"));
}

TEST_CASE("the parser can run twice in one process", "[cmdline]")
{
	CHECK(parse({"-t", "3"}).nthreads == 3);
	CHECK(parse({"-t", "5"}).nthreads == 5);
	CHECK_FALSE(parse({}).force);
}

TEST_CASE("usage and version", "[cmdline]")
{
	auto text = usage("/usr/bin/rpmemd");
	CHECK_THAT(text, Contains("usage: /usr/bin/rpmemd"));
	for (auto opt : {"--config",
	                 "--check-config",
	                 "--help",
	                 "--version",
	                 "--remove",
	                 "--force",
	                 "--pool-set",
	                 "--nthreads",
	                 "--log-file",
	                 "--poolset-dir",
	                 "--persist-apm",
	                 "--persist-general",
	                 "--use-syslog",
	                 "--log-level",
	                 "--heartbeat-timeout",
	                 "--wait",
	                 "--persist-commit",
	                 "--mr-mode",
	                 "--auth-timeout",
	                 "--nic-writes-durable",
	                 "--port-range"})
		CHECK_THAT(text, Contains(opt));
	CHECK(version_string() == std::string("rpmemd version ") + RPMEMD_VERSION);
}

// ---- config file syntax --------------------------------------------------------------------

TEST_CASE("every config key", "[config-file]")
{
	auto cfg = from_text("log-file = /var/tmp/r.log\n"
	                     "poolset-dir = /pools\n"
	                     "persist-apm = yes\n"
	                     "persist-general = no\n"
	                     "log-level = debug\n"
	                     "heartbeat-timeout = 1500\n"
	                     "wait = block\n"
	                     "persist-commit = yes\n"
	                     "mr-mode = basic\n"
	                     "auth-timeout = 300\n"
	                     "block-checksums = no\n"
	                     "status-dir = /run/rpmemd-status\n"
	                     "nic-writes-durable = yes\n"
	                     "port-range = 50000-50099\n");
	CHECK(cfg.log_file == "/var/tmp/r.log");
	CHECK_FALSE(cfg.use_syslog); // a log file turns syslog off
	CHECK(cfg.poolset_dir == "/pools");
	CHECK(cfg.persist_apm);
	CHECK_FALSE(cfg.persist_general);
	CHECK(cfg.level == log_level::debug);
	CHECK(cfg.heartbeat_timeout == std::chrono::milliseconds(1500));
	CHECK(cfg.wait == rpmem::fabric::wait_mode::block);
	CHECK(cfg.persist_commit);
	CHECK(cfg.mr_mode == rpmem::fabric::mr_mode::basic);
	CHECK(cfg.auth_timeout == std::chrono::milliseconds(300));
	CHECK(cfg.status_dir == "/run/rpmemd-status");
	CHECK_FALSE(cfg.block_checksums);
	CHECK(cfg.nic_writes_durable);
	CHECK(cfg.ports == port_range{50000, 50099});

	CHECK(from_text("log-file = /l\nuse-syslog = yes").use_syslog);
	CHECK_FALSE(from_text("use-syslog = no").use_syslog);
}

TEST_CASE("comments, blank lines and whitespace", "[config-file]")
{
	auto cfg = from_text("# rpmemd configuration\n"
	                     "\n"
	                     "   \t\n"
	                     "   # indented comment\n"
	                     "\tlog-level\t=\tinfo   # trailing comment\r\n"
	                     "poolset-dir=/a=b#no space before the comment\n"
	                     "persist-apm = yes # = no\n"
	                     "# log-level = debug\n"
	                     "\n"); // no final newline either way
	CHECK(cfg.level == log_level::info);
	CHECK(cfg.poolset_dir == "/a=b"); // split at the first '='
	CHECK(cfg.persist_apm);

	CHECK(from_text("").level == log_level::notice);
	CHECK(from_text("log-level = warn").level == log_level::warn); // no newline at the end
}

TEST_CASE("config syntax errors name the file and line", "[config-file]")
{
	using namespace std::string_view_literals;
	struct {
		std::string_view text;
		const char *message;
	} cases[] = {
	    {"log-level = info\n\njust words\n", "test.conf:3: no '=' in 'just words'"},
	    {"# c\n = /x\n", "test.conf:2: the key before '=' is empty"},
	    {"poolset-dir =   # nothing\n", "test.conf:1: no value after 'poolset-dir ='"},
	    {"\n\n\n\nfoo = bar\n", "test.conf:5: unknown key 'foo'; valid keys are log-file, "},
	    {"nthreads = 4\n", "test.conf:1: unknown key 'nthreads'"},
	    {"config = /c\n", "test.conf:1: unknown key 'config'"},
	    {"persist-apm = true\n", "test.conf:1: bad value for persist-apm: 'true' is not a "
	                             "boolean; use yes or no"},
	    {"use-syslog = YES\n", "test.conf:1: bad value for use-syslog: 'YES'"},
	    {"log-level = verbose\n", "test.conf:1: bad value for log-level: 'verbose'"},
	    {"heartbeat-timeout = -5\n", "test.conf:1: bad value for heartbeat-timeout"},
	    {"wait = busy\n", "test.conf:1: bad value for wait: 'busy' is not a way to wait"},
	    {"persist-commit = 1\n", "test.conf:1: bad value for persist-commit: '1' is not a "
	                             "boolean"},
	    {"port-range = 9000-8000\n", "test.conf:1: bad value for port-range: '9000-8000' is "
	                                 "not a port range; use first-last or one port"},
	    {"use-syslog = a\x01"
	     "b\n",
	     "test.conf:1: bad value for use-syslog: 'a?b'"},
	    {"\x1b[2Jkey = 1\n", "test.conf:1: unknown key '?[2Jkey'"},
	    {"log-file = /a\0b\n"sv,
	     "test.conf:1: bad value for log-file: the path contains a NUL"},
	};
	for (const auto &c : cases) {
		INFO(std::string(c.text));
		auto e = text_error(c.text);
		CHECK_THAT(e, Contains("Invalid config file line at "));
		CHECK_THAT(e, Contains(c.message));
	}
}

TEST_CASE("a very long line is fine, and quoted only in part", "[config-file]")
{
	std::string dir = "/" + std::string(100000, 'd');
	CHECK(from_text("poolset-dir = " + dir).poolset_dir == dir);
	auto e = text_error(std::string(100000, 'k') + " = 1");
	CHECK_THAT(e, Contains("unknown key 'kkkk"));
	CHECK(e.size() < 400);
}

TEST_CASE("config files do not change what the command line set", "[config-file]")
{
	cmdline_mask given;
	auto cfg = parse({"--log-level=debug", "--poolset-dir=/cmd"}, &given);
	parse_config_text(cfg, "log-level = info\npoolset-dir = /file\npersist-apm = yes\n",
	                  "test.conf", given);
	CHECK(cfg.level == log_level::debug);
	CHECK(cfg.poolset_dir == "/cmd");
	CHECK(cfg.persist_apm);
	// ... but their lines are still checked.
	CHECK_THROWS_AS(parse_config_text(cfg, "log-level = loud", "test.conf", given),
	                config_error);
}

TEST_CASE("a command-line --log-file keeps syslog off (PMDK quirk fixed)", "[config-file]")
{
	cmdline_mask given;
	auto cfg = parse({"--log-file=/l"}, &given);
	parse_config_text(cfg, "use-syslog = yes\n", "test.conf", given);
	CHECK_FALSE(cfg.use_syslog);
	CHECK(cfg.log_file == "/l");

	// --use-syslog on the command line: a config file's log-file does not turn it off.
	cmdline_mask given2;
	auto cfg2 = parse({"--use-syslog"}, &given2);
	parse_config_text(cfg2, "log-file = /f\n", "test.conf", given2);
	CHECK(cfg2.use_syslog);
	CHECK(cfg2.log_file == "/f");
}

// ---- load(): files, precedence, $HOME, validation ----------------------------------------

TEST_CASE("command line beats ~/.rpmemd.conf beats /etc/rpmemd/rpmemd.conf", "[load]")
{
	temp_dir dir;
	environment env;
	env.home = dir.path.string();
	env.etc_config = dir.write("etc.conf", "log-level = info\n"
	                                       "poolset-dir = /from-etc\n"
	                                       "persist-apm = yes\n"
	                                       "heartbeat-timeout = 100\n");
	dir.write(".rpmemd.conf", "log-level = notice\nheartbeat-timeout = 200\n");

	args a({"--heartbeat-timeout=300"});
	auto cfg = load(a.argc(), a.argv(), env);
	CHECK(cfg.heartbeat_timeout == std::chrono::milliseconds(300)); // command line
	CHECK(cfg.level == log_level::notice);                          // home file
	CHECK(cfg.poolset_dir == "/from-etc");                          // /etc file
	CHECK(cfg.persist_apm);
}

TEST_CASE("RPMEM_MR_MODE gives mr-mode when no option or config key does", "[load]")
{
	temp_dir dir;
	environment env;
	env.home = dir.path.string();
	env.etc_config = (dir.path / "none").string();
	env.mr_mode = "basic";
	args none({});
	CHECK(load(none.argc(), none.argv(), env).mr_mode == rpmem::fabric::mr_mode::basic);
	args option({"--mr-mode=scalable"});
	CHECK(load(option.argc(), option.argv(), env).mr_mode == rpmem::fabric::mr_mode::scalable);
	dir.write(".rpmemd.conf", "mr-mode = auto\n");
	CHECK(load(none.argc(), none.argv(), env).mr_mode == rpmem::fabric::mr_mode::automatic);
	fs::remove(dir.path / ".rpmemd.conf");
	env.mr_mode = "fast";
	CHECK_THAT(error_of([&] { load(none.argc(), none.argv(), env); }),
	           Contains("RPMEM_MR_MODE='fast' in rpmemd's environment is not auto, basic or "
	                    "scalable"));
	// An option still wins over a bad variable: it is never read then.
	CHECK(load(option.argc(), option.argv(), env).mr_mode == rpmem::fabric::mr_mode::scalable);
}

TEST_CASE("missing optional config files are fine", "[load]")
{
	temp_dir dir;
	environment env{dir.path.string(), (dir.path / "no-such.conf").string()};
	args a({});
	auto cfg = load(a.argc(), a.argv(), env);
	CHECK(cfg.poolset_dir == dir.path.string());
	CHECK(cfg.level == log_level::notice);
}

TEST_CASE("an unreadable optional config file is an error", "[load]")
{
	temp_dir dir;
	environment env{dir.path.string(), dir.path.string()}; // a directory: read() fails
	args a({});
	auto e = error_of([&] { load(a.argc(), a.argv(), env); });
	CHECK_THAT(e, Contains("cannot read config file '" + dir.path.string() + "'"));
}

TEST_CASE("a --config file must exist and replaces the other files", "[load]")
{
	temp_dir dir;
	environment env;
	env.home = dir.path.string();
	env.etc_config = dir.write("etc.conf", "log-level = info\n");
	dir.write(".rpmemd.conf", "persist-apm = yes\n");

	auto missing = (dir.path / "missing.conf").string();
	args bad({"--config", missing});
	auto e = error_of([&] { load(bad.argc(), bad.argv(), env); });
	CHECK_THAT(e, Contains("cannot read config file '" + missing + "'"));
	CHECK_THAT(e, Contains("No such file or directory"));
	CHECK_THAT(e, Contains("--config"));

	auto own = dir.write("own.conf", "log-level = warn\n");
	args good({"-c", own});
	auto cfg = load(good.argc(), good.argv(), env);
	CHECK(cfg.level == log_level::warn);
	CHECK_FALSE(cfg.persist_apm);
}

TEST_CASE("a config file error from load() names the file", "[load]")
{
	temp_dir dir;
	environment env{dir.path.string(), dir.write("etc.conf", "\n\nbogus\n")};
	args a({});
	CHECK_THAT(error_of([&] { load(a.argc(), a.argv(), env); }),
	           Contains("Invalid config file line at " + env.etc_config + ":3:"));
}

TEST_CASE("help skips the config files", "[load]")
{
	temp_dir dir;
	environment env{dir.path.string(), dir.write("etc.conf", "broken\n")};
	args a({"--help"});
	CHECK(load(a.argc(), a.argv(), env).help);
}

TEST_CASE("$HOME substitution", "[load]")
{
	CHECK(substitute_home("$HOME", "/home/u") == "/home/u");
	CHECK(substitute_home("$HOME/pools", "/home/u") == "/home/u/pools");
	CHECK(substitute_home("/srv/$HOME/x", "/home/u") == "/srv//home/u/x");
	CHECK(substitute_home("$HOMEX/p", "/home/u") == "$HOMEX/p");
	CHECK(substitute_home("$HOME1/p", "/home/u") == "$HOME1/p");
	CHECK(substitute_home("$HOME_x", "/home/u") == "/home/u_x");
	CHECK(substitute_home("$HOMEX/$HOME/a", "/h") == "$HOMEX//h/a"); // first eligible one
	CHECK(substitute_home("$HOME/$HOME", "/h") == "/h/$HOME");       // only the first
	CHECK(substitute_home("/plain", "/h") == "/plain");

	temp_dir dir;
	environment env{"/home/someone", (dir.path / "none").string()};
	args a({"--poolset-dir=$HOME/pools"});
	CHECK(load(a.argc(), a.argv(), env).poolset_dir == "/home/someone/pools");
	args d({});
	CHECK(load(d.argc(), d.argv(), env).poolset_dir == "/home/someone");

	args x({"--poolset-dir=$HOMEX/pools"});
	auto e = error_of([&] { load(x.argc(), x.argv(), env); });
	CHECK_THAT(e, Contains("'$HOMEX/pools'"));
	CHECK_THAT(e, Contains("not an absolute path"));
}

TEST_CASE("relative poolset-dir is rejected", "[load]")
{
	temp_dir dir;
	environment env{"/home/u", (dir.path / "none").string()};
	args a({"--poolset-dir=pools"});
	auto e = error_of([&] { load(a.argc(), a.argv(), env); });
	CHECK_THAT(e, Contains("poolset-dir 'pools' (from --poolset-dir) is not an absolute path"));

	env.etc_config = dir.write("etc.conf", "poolset-dir = rel/dir\n");
	args b({});
	CHECK_THAT(error_of([&] { load(b.argc(), b.argv(), env); }),
	           Contains("'rel/dir' (from the default or " + env.etc_config + ")"));

	environment relative_home{"home/u", (dir.path / "none").string()};
	CHECK_THAT(error_of([&] { load(b.argc(), b.argv(), relative_home); }),
	           Contains("'home/u' ('$HOME')"));
}

TEST_CASE("$HOME without a home directory is an error", "[load]")
{
	temp_dir dir;
	environment env{"", (dir.path / "none").string()};
	args a({});
	CHECK_THAT(error_of([&] { load(a.argc(), a.argv(), env); }),
	           Contains("uses $HOME but the home directory is unknown"));
	args b({"--poolset-dir=/abs"});
	CHECK(load(b.argc(), b.argv(), env).poolset_dir == "/abs");
}

TEST_CASE("environment::from_process reads HOME", "[load]")
{
	const char *home = std::getenv("HOME");
	auto env = environment::from_process();
	if (home && *home)
		CHECK(env.home == home);
	CHECK(env.etc_config == "/etc/rpmemd/rpmemd.conf");
}

// ---- logging -------------------------------------------------------------------------------

TEST_CASE("log levels parse", "[log]")
{
	for (auto l : {log_level::err, log_level::warn, log_level::notice, log_level::info,
	               log_level::debug})
		CHECK(parse_log_level(to_string(l)) == l);
	CHECK_FALSE(parse_log_level("error"));
	CHECK_FALSE(parse_log_level(""));
}

TEST_CASE("the log file gets one line per message, with time, pid and level", "[log]")
{
	temp_dir dir;
	auto old_mask = umask(022);
	{
		file_logging logging(dir, log_level::info);
		log_err("pool {} failed: {}", "a.set", 42);
		log_info("second");
	}
	umask(old_mask);
	auto path = (dir.path / "rpmemd.log").string();
	auto lines = lines_of(slurp(path));
	REQUIRE(lines.size() == 2);
	std::regex format(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z rpmemd\[(\d+)\]: (\w+): (.*))");
	std::smatch m;
	REQUIRE(std::regex_match(lines[0], m, format));
	CHECK(m[1] == std::to_string(getpid()));
	CHECK(m[2] == "err");
	CHECK(m[3] == "pool a.set failed: 42");
	REQUIRE(std::regex_match(lines[1], m, format));
	CHECK(m[2] == "info");

	struct stat st {
	};
	REQUIRE(stat(path.c_str(), &st) == 0);
	CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("the log file is appended to, not truncated", "[log]")
{
	temp_dir dir;
	auto path = dir.write("rpmemd.log", "earlier line\n");
	{
		file_logging logging(dir, log_level::err);
		log_err("later");
	}
	auto lines = lines_of(slurp(path));
	REQUIRE(lines.size() == 2);
	CHECK(lines[0] == "earlier line");
	CHECK_THAT(lines[1], Contains("err: later"));
}

TEST_CASE("log level filtering", "[log]")
{
	temp_dir dir;
	{
		file_logging logging(dir, log_level::warn);
		CHECK(logger::instance().enabled(log_level::err));
		CHECK(logger::instance().enabled(log_level::warn));
		CHECK_FALSE(logger::instance().enabled(log_level::notice));
		log_debug("d");
		log_info("i");
		log_notice("n");
		log_warn("w");
		log_err("e");
	}
	auto lines = lines_of(slurp((dir.path / "rpmemd.log").string()));
	REQUIRE(lines.size() == 2);
	CHECK_THAT(lines[0], Contains(": warn: w"));
	CHECK_THAT(lines[1], Contains(": err: e"));
}

TEST_CASE("control characters cannot forge log lines", "[log]")
{
	temp_dir dir;
	{
		file_logging logging(dir, log_level::err);
		log_err("bad name '{}'", "x\nrpmemd[1]: err: forged\r");
	}
	auto lines = lines_of(slurp((dir.path / "rpmemd.log").string()));
	REQUIRE(lines.size() == 1);
	CHECK_THAT(lines[0], Contains("bad name 'x\\x0arpmemd[1]: err: forged\\x0d'"));
}

TEST_CASE("concurrent messages never interleave", "[log]")
{
	temp_dir dir;
	constexpr int threads = 4, per_thread = 250;
	{
		file_logging logging(dir, log_level::err);
		std::vector<std::thread> pool;
		for (int t = 0; t < threads; ++t)
			pool.emplace_back([t] {
				for (int i = 0; i < per_thread; ++i)
					log_err("thread {} message {} {}", t, i,
					        std::string(200, 'x'));
			});
		for (auto &th : pool)
			th.join();
	}
	auto lines = lines_of(slurp((dir.path / "rpmemd.log").string()));
	REQUIRE(lines.size() == threads * per_thread);
	std::regex format(R"(\S+ rpmemd\[\d+\]: err: thread \d message \d+ x{200})");
	for (const auto &l : lines)
		REQUIRE(std::regex_match(l, format));
}

TEST_CASE("a log file that cannot be opened leaves logging as it was", "[log]")
{
	temp_dir dir;
	file_logging logging(dir, log_level::err);
	config bad;
	bad.use_syslog = false;
	bad.log_file = (dir.path / "no-dir" / "r.log").string();
	try {
		logger::instance().init(bad);
		FAIL("init did not throw");
	} catch (const rpmem::error &e) {
		CHECK(e.errnum() == ENOENT);
		CHECK_THAT(e.message(), Contains(bad.log_file));
	}
	log_err("still here");
	CHECK_THAT(slurp(logging.path), Contains("err: still here"));
}

TEST_CASE("syslog mode works and can be left again", "[log]")
{
	config cfg; // default: use_syslog = yes
	cfg.level = log_level::debug;
	logger::instance().init(cfg);
	log_err("unit_config: syslog err (test message, ignore)");
	log_debug("unit_config: syslog debug (test message, ignore)");

	temp_dir dir;
	{
		file_logging logging(dir, log_level::err);
		log_err("after syslog");
	}
	CHECK_THAT(slurp((dir.path / "rpmemd.log").string()), Contains("err: after syslog"));
}

namespace
{

/** Points `fd` at a fresh pipe while alive; drained() returns what was written to it. */
class captured_fd
{
public:
	explicit captured_fd(int fd) : fd_(fd), saved_(dup(fd))
	{
		REQUIRE(saved_ >= 0);
		REQUIRE(pipe2(pipe_, O_NONBLOCK | O_CLOEXEC) == 0);
		REQUIRE(dup2(pipe_[1], fd_) == fd_);
	}
	~captured_fd() { restore(); }
	/** Puts the original fd back and returns everything written meanwhile. */
	std::string restore()
	{
		if (saved_ < 0)
			return {};
		dup2(saved_, fd_);
		close(saved_);
		close(pipe_[1]);
		saved_ = -1;
		std::string out;
		char buf[4096];
		ssize_t n;
		while ((n = read(pipe_[0], buf, sizeof(buf))) > 0)
			out.append(buf, static_cast<std::size_t>(n));
		close(pipe_[0]);
		return out;
	}

private:
	int fd_;
	int saved_;
	int pipe_[2] = {-1, -1};
};

void log_every_level()
{
	log_err("e {}", 1);
	log_warn("w {}", 2);
	log_notice("n {}", 3);
	log_info("i {}", 4);
	log_debug("d {}", 5);
}

} // namespace

using rpmem::test::syslog_listens;

TEST_CASE("nothing is ever written to stdout, the protocol channel", "[log]")
{
	temp_dir dir;
	std::string out, err;
	{
		captured_fd stdout_capture(1);
		captured_fd stderr_capture(2);
		logger::instance().init_stderr(log_level::debug);
		log_every_level();

		config cfg;
		cfg.level = log_level::debug;
		logger::instance().init(cfg); // syslog
		log_every_level();

		cfg.use_syslog = false;
		cfg.log_file = (dir.path / "r.log").string();
		logger::instance().init(cfg);
		log_every_level();

		(void)usage("rpmemd");
		(void)version_string();
		try {
			parse({"--bogus"});
		} catch (const config_error &) {
		}
		logger::instance().init_stderr();
		err = stderr_capture.restore();
		out = stdout_capture.restore();
	}
	CHECK(out.empty());
	// stderr mode did write to fd 2, so the capture itself works. Where no syslog daemon
	// listens (these machines), "syslog" mode said so on fd 2 and logged there too.
	const bool syslog = syslog_listens();
	CHECK(lines_of(err).size() == (syslog ? 5 : 11));
	CHECK((err.find("warning: syslog is not reachable") == std::string::npos) == syslog);
	CHECK_THAT(err, Contains(": debug: d 5"));
	CHECK(lines_of(slurp((dir.path / "r.log").string())).size() == 5);
}
