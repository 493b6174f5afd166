// SPDX-License-Identifier: BSD-3-Clause
#include "chaos/options.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <random>
#include <sstream>
#include <type_traits>

namespace rpmem::chaos
{

namespace
{

constexpr const char *usage_line =
    "usage: rpmem-chaos [--seed S] [--minutes M | --seconds N] [--hosts 2|3] [--kinds K,...] "
    "[--writers obj,rps,rpa,pool] [--mean-gap MS] [--print-schedule] [--keep]\n";

[[noreturn]] void usage(const std::string &why)
{
	std::fprintf(stderr, "rpmem-chaos: %s\n%s", why.c_str(), usage_line);
	std::exit(2);
}

/** `text` as a number of type T, all of it, not below `min`; else the usage, naming `what`. */
template <typename T> T number(const std::string &what, const std::string &text, T min)
{
	T v{};
	std::size_t used = 0;
	try {
		if constexpr (std::is_floating_point_v<T>)
			v = static_cast<T>(std::stod(text, &used));
		else if (const auto n = std::stoull(text, &used);
		         n <= static_cast<unsigned long long>(std::numeric_limits<T>::max()))
			v = static_cast<T>(n);
		else
			used = 0; // wider than T: not wrapped into a small value
	} catch (const std::exception &) {
		used = 0;
	}
	if (text.empty() || used != text.size() || text.front() == '-' || !(v >= min))
		usage(fmt::format("{}: '{}' is not a number from {}", what, text, min));
	return v;
}

std::vector<std::string> split(const std::string &s)
{
	std::vector<std::string> out;
	std::istringstream in(s);
	for (std::string item; std::getline(in, item, ',');)
		if (!item.empty())
			out.push_back(item);
	return out;
}

} // namespace

options parse(int argc, char **argv)
{
	options o;
	bool seeded = false;
	for (int i = 1; i < argc; ++i) {
		const std::string a = argv[i];
		auto value = [&]() -> std::string {
			if (i + 1 >= argc)
				usage(a + " needs a value");
			return argv[++i];
		};
		if (a == "--seed") {
			o.seed = number<std::uint64_t>(a, value(), 0);
			seeded = true;
		} else if (a == "--minutes") {
			o.seconds = number<double>(a, value(), 0) * 60;
		} else if (a == "--seconds") {
			o.seconds = number<double>(a, value(), 0);
		} else if (a == "--hosts") {
			o.hosts = number<int>(a, value(), 2);
		} else if (a == "--mean-gap") {
			o.mean_gap_ms = number<double>(a, value(), 1);
		} else if (a == "--kinds") {
			for (const auto &k : split(value())) {
				bool found = false;
				for (int f = 0; f < fault_kinds; ++f)
					if (k == name(static_cast<fault>(f))) {
						o.kinds.push_back(static_cast<fault>(f));
						found = true;
					}
				if (!found)
					usage("no fault kind " + k);
			}
		} else if (a == "--writers") {
			o.writers = split(value());
		} else if (a == "--print-schedule") {
			o.print_schedule = true;
		} else if (a == "--keep") {
			o.keep = true;
		} else if (a == "--help" || a == "-h") {
			std::printf("%s", usage_line);
			std::exit(0);
		} else {
			usage("unknown argument " + a);
		}
	}
	if (o.hosts < 2 || o.hosts > 3)
		usage("--hosts: 2 or 3");
	if (!seeded) {
		std::random_device rd;
		o.seed = (std::uint64_t(rd()) << 32 | rd()) % 1000000000000ull;
	}
	return o;
}

std::string replay_command(const options &o)
{
	std::string s;
	if (const char *bug = std::getenv("CHAOS_WRITER_BUG"))
		s += fmt::format("CHAOS_WRITER_BUG={} ", bug);
	s += fmt::format("scripts/chaos.sh --seed {} --seconds {:g} --hosts {} --writers {}",
	                 o.seed, o.seconds, o.hosts, fmt::join(o.writers, ","));
	if (!o.kinds.empty()) {
		std::vector<std::string> k;
		for (auto f : o.kinds)
			k.push_back(name(f));
		s += fmt::format(" --kinds {}", fmt::join(k, ","));
	}
	if (o.mean_gap_ms != 1500)
		s += fmt::format(" --mean-gap {:g}", o.mean_gap_ms);
	return s;
}

std::vector<writer_config> writer_configs(const options &o)
{
	std::vector<int> all;
	for (int h = 0; h < o.hosts; ++h)
		all.push_back(h);
	std::vector<writer_config> out;
	for (const auto &w : o.writers) {
		if (w == "obj")
			out.push_back({"obj", writer_kind::pmemobj, {0, 1}});
		else if (w == "rps")
			out.push_back({"rps", writer_kind::rp_sync, all});
		else if (w == "rpa")
			out.push_back({"rpa", writer_kind::rp_async, all});
		else if (w == "pool")
			out.push_back({"pool", writer_kind::pool, {o.hosts - 1}});
		else
			usage("no writer " + w + " (obj, rps, rpa, pool)");
	}
	return out;
}

std::vector<writer_shape> shapes(const std::vector<writer_config> &ws)
{
	std::vector<writer_shape> out;
	for (const auto &w : ws)
		out.push_back(
		    {w.name, w.hosts, w.kind != writer_kind::pool, w.kind == writer_kind::pmemobj});
	return out;
}

} // namespace rpmem::chaos
