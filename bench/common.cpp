// SPDX-License-Identifier: BSD-3-Clause
#include "common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace rpmem::bench
{

stats summarize(std::vector<double> v)
{
	if (v.empty())
		return {};
	std::sort(v.begin(), v.end());
	auto at = [&](double p) {
		return v[std::min(v.size() - 1, static_cast<std::size_t>(p * double(v.size())))];
	};
	return {at(0.5), at(0.99)};
}

std::string size_text(std::size_t n)
{
	if (n >= (1 << 20) && n % (1 << 20) == 0)
		return fmt::format("{}MiB", n >> 20);
	if (n >= 1024 && n % 1024 == 0)
		return fmt::format("{}KiB", n >> 10);
	return fmt::format("{}B", n);
}

std::size_t parse_size(const std::string &text)
{
	std::size_t pos = 0;
	unsigned long long v = std::stoull(text, &pos);
	std::string unit = text.substr(pos);
	std::size_t mul = 1;
	if (unit == "" || unit == "B")
		mul = 1;
	else if (unit == "K" || unit == "KiB" || unit == "k")
		mul = 1024;
	else if (unit == "M" || unit == "MiB")
		mul = 1 << 20;
	else if (unit == "G" || unit == "GiB")
		mul = std::size_t(1) << 30;
	else
		throw std::invalid_argument("unknown size unit '" + unit + "' in '" + text +
		                            "' (use B, K, M or G)");
	return static_cast<std::size_t>(v) * mul;
}

unsigned iterations_for(const options &o, std::size_t size)
{
	std::size_t by_bytes = size ? o.bytes_budget / size : o.iterations;
	return static_cast<unsigned>(
	    std::max<std::size_t>(std::min<std::size_t>(o.iterations, by_bytes),
	                          std::min<std::size_t>(o.iterations, 2 * o.rounds)));
}

} // namespace rpmem::bench
