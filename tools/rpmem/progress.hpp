// SPDX-License-Identifier: BSD-3-Clause
// Progress of a long copy on stderr: a bar redrawn in place on a terminal, plain lines every
// 10 % otherwise (logs, CI), or nothing; both with the rate and the time left.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rpmem::tool
{

class progress
{
public:
	enum class style { bar, lines, none };
	/** "auto": bar when stderr is a terminal, else lines; or "bar", "lines", "none". */
	static style parse_style(const std::string &name);

	progress(std::string label, std::uint64_t total, style s);
	void update(std::uint64_t done);
	/** Ends the bar with a newline (and a final 100 % line). */
	void finish();

private:
	std::string label_;
	std::uint64_t total_;
	style style_;
	int last_ = -1; // last percent (bar) or decile (lines) printed
	std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
	/** ", 812 MiB/s, 3 s left" once something was done; empty before. */
	std::string rate(std::uint64_t done) const;
};

} // namespace rpmem::tool
