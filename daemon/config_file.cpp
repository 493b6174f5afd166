// SPDX-License-Identifier: BSD-3-Clause
// Config files: PMDK's "key = value" lines, /etc/rpmemd/rpmemd.conf then ~/.rpmemd.conf, or
// the one --config names.
#include "config_settings.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include <fcntl.h>
#include <unistd.h>

namespace rpmemd
{

using namespace detail;

namespace
{

std::string valid_keys()
{
	std::string keys;
	for (const auto &s : settings)
		keys += fmt::format("{}{}", keys.empty() ? "" : ", ", s.key);
	return keys;
}

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

} // namespace

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

namespace detail
{

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

} // namespace detail

} // namespace rpmemd
