// SPDX-License-Identifier: BSD-3-Clause
// The chaos run's one source of randomness: splitmix64, with distributions written out here
// (std::uniform_*_distribution differ between standard libraries), so a seed names the same
// schedule on every build.
#pragma once

#include <cmath>
#include <cstdint>

namespace rpmem::chaos
{

class rng
{
public:
	explicit rng(std::uint64_t seed) : s_(seed) {}

	std::uint64_t next()
	{
		std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		return z ^ (z >> 31);
	}
	/** Uniform in [0, 1). */
	double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
	/** Uniform in [0, n); n > 0. */
	std::uint64_t below(std::uint64_t n)
	{
		return static_cast<std::uint64_t>(unit() * static_cast<double>(n));
	}
	/** Uniform in [lo, hi]. */
	std::int64_t between(std::int64_t lo, std::int64_t hi)
	{
		return lo +
		       static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo + 1)));
	}
	/** Log-uniform in [lo, hi]: short and long values equally likely per decade. */
	std::int64_t log_between(std::int64_t lo, std::int64_t hi)
	{
		const double a = std::log(static_cast<double>(lo)),
		             b = std::log(static_cast<double>(hi));
		return static_cast<std::int64_t>(std::exp(a + unit() * (b - a)));
	}
	/** Exponentially distributed with the given mean (a Poisson process's gaps). */
	std::int64_t exponential(double mean)
	{
		return static_cast<std::int64_t>(-mean * std::log(1.0 - unit()));
	}
	bool chance(double p) { return unit() < p; }

private:
	std::uint64_t s_;
};

} // namespace rpmem::chaos
