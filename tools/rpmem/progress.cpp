// SPDX-License-Identifier: BSD-3-Clause
#include "progress.hpp"

#include "tool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <unistd.h>

namespace rpmem::tool
{

progress::style progress::parse_style(const std::string &name)
{
	if (name == "auto")
		return isatty(STDERR_FILENO) ? style::bar : style::lines;
	if (name == "bar")
		return style::bar;
	if (name == "lines")
		return style::lines;
	if (name == "none")
		return style::none;
	throw failure(fmt::format("invalid --progress '{}': give auto, bar, lines or none", name),
	              exit_usage);
}

progress::progress(std::string label, std::uint64_t total, style s)
    : label_(std::move(label)), total_(total), style_(s)
{
	update(0);
}

std::string progress::rate(std::uint64_t done) const
{
	const double secs =
	    std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
	if (done == 0 || secs <= 0)
		return "";
	const double per_s = static_cast<double>(done) / secs;
	const double left = static_cast<double>(total_ - std::min(done, total_)) / per_s;
	return fmt::format(", {}/s, {:.0f} s left", size_text(static_cast<std::uint64_t>(per_s)),
	                   left);
}

void progress::update(std::uint64_t done)
{
	int pct = total_ ? static_cast<int>(done * 100 / total_) : 100;
	if (style_ == style::bar) {
		if (pct == last_)
			return;
		last_ = pct;
		constexpr int width = 30;
		int fill = pct * width / 100;
		fmt::print(stderr, "\r{} [{}{}] {:3}% {} of {}{}\x1b[K", label_,
		           std::string(fill, '#'), std::string(width - fill, '.'), pct,
		           size_text(done), size_text(total_), rate(done));
		std::fflush(stderr);
	} else if (style_ == style::lines) {
		int decile = pct / 10;
		if (decile == last_)
			return;
		last_ = decile;
		fmt::print(stderr, "{}: {}% ({} of {}{})\n", label_, decile * 10, size_text(done),
		           size_text(total_), rate(done));
		std::fflush(stderr);
	}
}

void progress::finish()
{
	update(total_);
	if (style_ == style::bar)
		fmt::print(stderr, "\n");
}

} // namespace rpmem::tool
