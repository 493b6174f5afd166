// SPDX-License-Identifier: BSD-3-Clause
// rpmemd's settings, shared by the command line (config_cmdline.cpp) and config files
// (config_file.cpp): each setting's name, and its value parsed and applied in one place, so both
// accept the same spellings and refuse the same values with the same words. Private to
// rpmemd_config.
#pragma once

#include "config.hpp"

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rpmemd::detail
{

/** A value that does not parse; the caller adds where it came from. */
struct value_error {
	std::string why;
};

struct setting_info {
	setting id;
	std::string_view key; // long option name == config file key
};

inline constexpr std::array<setting_info, static_cast<std::size_t>(setting::count_)> settings = {{
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
    {setting::nic_writes_durable, "nic-writes-durable"},
    {setting::port_range, "port-range"},
    {setting::resident, "resident"},
}};

/** Config text as it may appear in a message: bounded (a line may be any length) and with
 * control bytes shown as '?'. */
std::string shown(std::string_view s);

/** A path: not empty, no NUL byte. Throws value_error. */
std::string path_value(std::string_view value);

/** Digits only (no sign, no spaces): strtoul's leniency turned "-1" into a huge count. */
unsigned long long number_value(std::string_view value, unsigned long long min,
                                unsigned long long max);

/** Sets `s` from its text form, unless `keep` says the command line set it already (the
 * value is still checked: a broken config file line is reported either way). */
void apply(config &cfg, setting s, std::string_view value, const cmdline_mask &keep);

/** The value of `s` in cfg as a config file line would give it; nullopt where cfg keeps
 *  rpmemd's choice (status-dir and port-range unset, mr-mode left to the environment). */
std::optional<std::string> value_text(const config &cfg, setting s);

/** Applies the config files load_config_files() documents; returns those that existed. */
std::vector<std::string> read_config_files(config &cfg, const cmdline_mask &given,
                                           const environment &env);

} // namespace rpmemd::detail
