// SPDX-License-Identifier: BSD-3-Clause
#include "config_settings.hpp"

#include <fmt/format.h>

#include <charconv>

namespace rpmemd::detail
{

namespace
{

bool bool_value(std::string_view value)
{
	if (value == "yes")
		return true;
	if (value == "no")
		return false;
	throw value_error{fmt::format("'{}' is not a boolean; use yes or no", shown(value))};
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

/** The boolean field of a yes/no setting. */
bool config::*bool_field(setting s)
{
	switch (s) {
	case setting::persist_apm:
		return &config::persist_apm;
	case setting::persist_general:
		return &config::persist_general;
	case setting::persist_commit:
		return &config::persist_commit;
	case setting::block_checksums:
		return &config::block_checksums;
	case setting::nic_writes_durable:
		return &config::nic_writes_durable;
	default:
		return &config::use_syslog;
	}
}

} // namespace

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
	case setting::nic_writes_durable:
		return set(cfg.*bool_field(s), bool_value(value));
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
	case setting::port_range:
		return set(cfg.ports, parsed(value, parse_port_range, "a port range",
		                             "first-last or one port, from 1 to 65535"));
	case setting::resident:
		// Seconds of idleness; "yes" the default idle time, "no" none at all.
		return set(cfg.resident,
		           std::chrono::seconds(value == "no" ? 0
		                                : value == "yes"
		                                    ? default_resident_s
		                                    : number_value(value, 1, max_resident_s)));
	case setting::count_:
		break;
	}
	throw value_error{"internal error: unknown setting"};
}

std::optional<std::string> value_text(const config &cfg, setting s)
{
	auto yes_no = [](bool b) -> std::string { return b ? "yes" : "no"; };
	auto ms = [](std::chrono::milliseconds d) { return std::to_string(d.count()); };
	switch (s) {
	case setting::log_file:
		return cfg.log_file;
	case setting::poolset_dir:
		return cfg.poolset_dir;
	case setting::status_dir:
		if (cfg.status_dir.empty())
			return std::nullopt;
		return cfg.status_dir;
	case setting::persist_apm:
	case setting::persist_general:
	case setting::persist_commit:
	case setting::use_syslog:
	case setting::block_checksums:
	case setting::nic_writes_durable:
		return yes_no(cfg.*bool_field(s));
	case setting::wait:
		return rpmem::fabric::to_string(cfg.wait);
	case setting::mr_mode:
		if (!cfg.mr_mode)
			return std::nullopt;
		return rpmem::fabric::to_string(*cfg.mr_mode);
	case setting::log_level:
		return std::string(to_string(cfg.level));
	case setting::heartbeat_timeout:
		return ms(cfg.heartbeat_timeout);
	case setting::auth_timeout:
		return ms(cfg.auth_timeout);
	case setting::port_range:
		if (!cfg.ports)
			return std::nullopt;
		return cfg.ports->first == cfg.ports->last
		           ? std::to_string(cfg.ports->first)
		           : fmt::format("{}-{}", cfg.ports->first, cfg.ports->last);
	case setting::resident:
		return cfg.resident.count() ? std::to_string(cfg.resident.count()) : "no";
	case setting::count_:
		break;
	}
	return std::nullopt;
}

} // namespace rpmemd::detail
