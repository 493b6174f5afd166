// SPDX-License-Identifier: BSD-3-Clause
#include "top_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

namespace rpmem::tool
{

namespace
{

constexpr sort_key sort_order[] = {sort_key::state, sort_key::pool, sort_key::rate,
                                   sort_key::behind, sort_key::errors};
constexpr std::size_t max_events = 64;

/** Worst first: what an operator must look at leads the default order. */
int severity(const top_view::row &r)
{
	const auto &s = r.pool.state;
	if (s == "failed")
		return 0;
	if (s == "lost")
		return 1;
	if (s == "reconnecting")
		return 2;
	if (s == "catching_up")
		return 3;
	if (r.stale)
		return 4;
	if (s == "connected")
		return 5;
	if (s == "closed")
		return 7;
	return 6;
}

const char *state_color(const std::string &s)
{
	if (s == "connected")
		return "\x1b[32m";
	if (s == "reconnecting" || s == "catching_up")
		return "\x1b[33;1m";
	if (s == "lost" || s == "failed")
		return "\x1b[31;1m";
	return "\x1b[2m";
}

std::string clock_text(double when)
{
	const auto t = static_cast<std::time_t>(when);
	std::tm tm{};
	gmtime_r(&t, &tm);
	char buf[16];
	std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
	return buf;
}

/** s cut or padded to exactly w columns (the text is ASCII but for what the files say). */
std::string fit(std::string s, std::size_t w, bool right = false)
{
	if (s.size() > w)
		s = w ? s.substr(0, w - 1) + "~" : "";
	const std::string pad(w - s.size(), ' ');
	return right ? pad + s : s + pad;
}

std::string opt_text(const std::optional<double> &v, std::string (*f)(double))
{
	return v ? f(*v) : "-";
}

std::string per_second_bytes(double b)
{
	return bytes_text(b) + "/s";
}

/** The async lag against its bounds: the larger of the byte and time fractions. */
std::optional<double> lag_fraction(const pool_sample &p)
{
	std::optional<double> f;
	if (p.lag_bytes && p.lag_bound_bytes && *p.lag_bound_bytes > 0)
		f = *p.lag_bytes / *p.lag_bound_bytes;
	if (p.lag_seconds && p.lag_bound_seconds && *p.lag_bound_seconds > 0)
		f = std::max(f.value_or(0), *p.lag_seconds / *p.lag_bound_seconds);
	return f;
}

std::string lag_text(const pool_sample &p)
{
	if (!p.lag_bytes)
		return "-";
	const auto f = lag_fraction(p);
	return f ? fmt::format("{} {:.0f}%", bytes_text(*p.lag_bytes), *f * 100)
	         : bytes_text(*p.lag_bytes);
}

std::string bar(double fraction, std::size_t width)
{
	fraction = std::clamp(fraction, 0.0, 1.0);
	const auto done = static_cast<std::size_t>(std::lround(fraction * double(width)));
	return "[" + std::string(done, '#') + std::string(width - done, '-') + "]";
}

/** What the row's state means, under it; nothing for a pool in sync. */
std::string explanation(const top_view::row &r)
{
	const auto &p = r.pool;
	const double to_go = p.bytes_to_go.value_or(0);
	if (p.state == "catching_up") {
		const double total = std::max(r.behind_peak, to_go);
		const double fraction = total > 0 ? (total - to_go) / total : 1;
		std::string estimate = "estimating the time left";
		if (r.idle_seconds >= 10)
			estimate = fmt::format("no progress for {}", duration_text(r.idle_seconds));
		else if (r.eta_seconds)
			estimate = fmt::format("about {} left", duration_text(*r.eta_seconds));
		return fmt::format("catch-up {} {:3.0f}%  {} to go of {}, {}", bar(fraction, 20),
		                   fraction * 100, bytes_text(to_go), bytes_text(total), estimate);
	}
	if (p.state == "lost")
		return fmt::format("lost: the writer goes on without it, {} to go; it catches up "
		                   "once back (or: rpmem sync)",
		                   bytes_text(to_go));
	if (p.state == "reconnecting")
		return "reconnecting: calls wait until it is back or RPMEM_RECONNECT_TIMEOUT "
		       "passes";
	if (p.state == "failed")
		return "failed: a call failed on its connection; the writer must reopen the pool";
	if (r.stale)
		return fmt::format("stale: its file was last written {} ago (is its writer stuck "
		                   "or gone?)",
		                   duration_text(r.age));
	if (const auto f = lag_fraction(p); f && *f >= 0.8)
		return fmt::format(
		    "async lag at {:.0f}% of its bound: persists wait for the replica", *f * 100);
	return {};
}

} // namespace

const char *to_string(sort_key k)
{
	switch (k) {
	case sort_key::state:
		return "state";
	case sort_key::pool:
		return "pool";
	case sort_key::rate:
		return "rate";
	case sort_key::behind:
		return "behind";
	case sort_key::errors:
		return "errors";
	}
	return "state";
}

std::optional<sort_key> parse_sort_key(const std::string &name)
{
	for (auto k : sort_order)
		if (name == to_string(k))
			return k;
	return std::nullopt;
}

std::string bytes_text(double bytes)
{
	const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = bytes;
	std::size_t u = 0;
	while (std::fabs(v) >= 1024 && u + 1 < std::size(units)) {
		v /= 1024;
		++u;
	}
	return u == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string latency_text(double seconds)
{
	if (seconds < 1e-3)
		return fmt::format("{:.0f}us", seconds * 1e6);
	if (seconds < 1)
		return fmt::format("{:.1f}ms", seconds * 1e3);
	return fmt::format("{:.1f}s", seconds);
}

std::string count_text(double n)
{
	if (n < 10000)
		return fmt::format("{:.0f}", n);
	if (n < 1e6)
		return fmt::format("{:.1f}k", n / 1e3);
	return fmt::format("{:.1f}M", n / 1e6);
}

std::string duration_text(double seconds)
{
	if (seconds < 120)
		return fmt::format("{:.0f} s", std::max(0.0, seconds));
	if (seconds < 7200)
		return fmt::format("{:.0f} min", seconds / 60);
	return fmt::format("{:.0f} h", seconds / 3600);
}

top_view::key top_view::key_of(const row &r)
{
	return {r.source.path, r.pool.target, r.pool.descriptor, r.pool.replica};
}

std::string top_view::pool_name(const row &r) const
{
	auto name = r.pool.target + " " + r.pool.descriptor;
	if (r.pool.replica)
		name += fmt::format(" #{}", *r.pool.replica);
	return name;
}

void top_view::note(double when, const row &r, const std::string &from)
{
	std::string what =
	    fmt::format("{} {}: {} -> {}", clock_text(when), pool_name(r), from, r.pool.state);
	if (r.pool.bytes_to_go && *r.pool.bytes_to_go > 0)
		what += fmt::format(" ({} to go)", bytes_text(*r.pool.bytes_to_go));
	events_.push_back(std::move(what));
	if (events_.size() > max_events)
		events_.pop_front();
}

void top_view::update(const snapshot &s)
{
	rows_.clear();
	std::map<key, history> seen;
	for (const auto &f : s.files) {
		if (!f.metrics)
			continue;
		for (const auto &p : f.metrics->pools) {
			row r;
			r.source = f.source;
			r.pool = p;
			r.written = f.metrics->written;
			r.age = std::max(0.0, s.now - r.written);
			r.stale = r.age > f.source.stale_after && p.state != "closed";
			const auto k = key_of(r);
			auto found = history_.find(k);
			history h = found != history_.end() ? found->second : history{};
			if (r.written != h.written) {
				if (h.written > 0 && r.written > h.written) {
					const double dt = r.written - h.written;
					const double dp = p.persists - h.last.persists;
					const double db =
					    p.bytes_persisted - h.last.bytes_persisted;
					h.persists_per_s =
					    dp >= 0 ? std::optional(dp / dt) : std::nullopt;
					h.bytes_per_s =
					    db >= 0 ? std::optional(db / dt) : std::nullopt;
				}
				if (h.written > 0 && h.last.state != p.state)
					note(r.written, r, h.last.state);
				const double to_go = p.bytes_to_go.value_or(0);
				if (p.state == "connected" || p.state == "closed")
					h.behind_peak = 0;
				else
					h.behind_peak = std::max(h.behind_peak, to_go);
				if (p.state != "catching_up") {
					h.catching = false;
					h.eta.reset();
				} else if (!h.catching) {
					h.catching = true;
					h.catch_start = h.last_fall = r.written;
					h.catch_start_to_go = to_go;
					h.eta.reset();
				} else {
					if (to_go < h.last.bytes_to_go.value_or(to_go))
						h.last_fall = r.written;
					const double done = h.catch_start_to_go - to_go;
					const double elapsed = r.written - h.catch_start;
					h.eta = done > 0 && elapsed > 0
					            ? std::optional(to_go / (done / elapsed))
					            : std::nullopt;
				}
				h.written = r.written;
				h.last = p;
			}
			r.persists_per_s = h.persists_per_s;
			r.bytes_per_s = h.bytes_per_s;
			r.behind_peak = h.behind_peak;
			r.eta_seconds = h.eta;
			r.idle_seconds = h.catching ? std::max(0.0, s.now - h.last_fall) : 0;
			seen[k] = h;
			rows_.push_back(std::move(r));
		}
	}
	history_ = std::move(seen);
	last_ = s;
	order();
}

void top_view::order()
{
	auto by = [this](const row &a, const row &b) {
		auto rate = [](const row &r) { return r.persists_per_s.value_or(-1); };
		switch (sort_) {
		case sort_key::state:
			if (severity(a) != severity(b))
				return severity(a) < severity(b);
			break;
		case sort_key::pool:
			break;
		case sort_key::rate:
			if (rate(a) != rate(b))
				return rate(a) > rate(b);
			break;
		case sort_key::behind:
			if (a.pool.bytes_to_go.value_or(0) != b.pool.bytes_to_go.value_or(0))
				return a.pool.bytes_to_go.value_or(0) >
				       b.pool.bytes_to_go.value_or(0);
			break;
		case sort_key::errors:
			if (a.pool.errors != b.pool.errors)
				return a.pool.errors > b.pool.errors;
			break;
		}
		return key_of(a) < key_of(b);
	};
	std::stable_sort(rows_.begin(), rows_.end(), by);
	const bool kept = selected_ && std::any_of(rows_.begin(), rows_.end(), [&](const row &r) {
		                  return key_of(r) == *selected_;
	                  });
	if (!kept)
		selected_ = rows_.empty() ? std::nullopt : std::optional(key_of(rows_.front()));
	if (rows_.empty())
		details_ = false;
}

void top_view::next_sort()
{
	const auto *at = std::find(std::begin(sort_order), std::end(sort_order), sort_);
	sort_ = ++at == std::end(sort_order) ? sort_order[0] : *at;
	order();
}

void top_view::select(int delta)
{
	if (rows_.empty())
		return;
	long at = 0;
	for (std::size_t i = 0; i < rows_.size(); ++i)
		if (selected_ && key_of(rows_[i]) == *selected_)
			at = long(i);
	at = std::clamp(at + delta, 0L, long(rows_.size()) - 1);
	selected_ = key_of(rows_[std::size_t(at)]);
}

std::vector<std::string> top_view::render(const render_options &o) const
{
	std::vector<std::string> out;
	auto line = [&](std::string s) {
		if (o.width && s.size() > o.width)
			s.resize(o.width);
		out.push_back(std::move(s));
	};

	// The summary.
	std::map<std::string, int> states;
	std::size_t stale = 0;
	for (const auto &r : rows_) {
		++states[r.pool.state];
		stale += r.stale;
	}
	std::string summary;
	for (const auto &[state, n] : states)
		summary += fmt::format("{}{} {}", summary.empty() ? ": " : ", ", n, state);
	if (stale)
		summary += fmt::format(", {} stale", stale);
	std::size_t serving = 0;
	for (const auto &s : last_.sessions)
		serving += s.alive;
	line(fmt::format("rpmem top  {} UTC  {} pool(s){}  rpmemd sessions here: {}  sort: {}",
	                 clock_text(last_.now), rows_.size(), summary, serving, to_string(sort_)));
	if (o.interactive)
		line("keys: q quit  s sort  j/k or arrows select  enter details");
	line("");

	// The pools.
	constexpr std::size_t fixed = 7 + 12 + 5 + 9 + 12 + 7 + 7 + 14 + 6 + 6 + 10; // + spaces
	std::size_t name_w = 16;
	for (const auto &r : rows_)
		name_w = std::max(name_w, pool_name(r).size());
	if (o.width)
		name_w = o.width > fixed + 16 ? std::min(name_w, o.width - fixed) : 16;
	line(fmt::format("{} {} {} {} {} {} {} {} {} {} {}", fit("PID", 7, true),
	                 fit("POOL", name_w), fit("STATE", 12), fit("MODE", 5),
	                 fit("PERSIST/s", 9, true), fit("BYTES/s", 12, true), fit("P50", 7, true),
	                 fit("P99", 7, true), fit("ASYNC LAG", 14, true), fit("ERR", 6, true),
	                 fit("AGE", 6, true)));
	if (rows_.empty())
		line(last_.files.empty()
		         ? "  no metrics file found: run the writers with RPMEM_STATS_FILE set, or "
		           "name the files or their directory (rpmem(1), top)"
		         : "  no pool in the metrics files read");
	// Each row's lines (the row, and what its state means); windowed to the height left.
	std::vector<std::vector<std::string>> blocks;
	std::size_t selected_block = 0;
	for (const auto &r : rows_) {
		const bool is_selected = o.interactive && selected_ && key_of(r) == *selected_;
		if (is_selected)
			selected_block = blocks.size();
		const auto pid = r.source.pid ? std::to_string(r.source.pid) : std::string("-");
		const auto age = fmt::format("{:.0f}s{}", r.age, r.stale ? "!" : "");
		const std::string before =
		    fmt::format("{} {} ", fit(pid, 7, true), fit(pool_name(r), name_w));
		const std::string state = fit(r.pool.state, 12);
		const std::string after =
		    fmt::format(" {} {} {} {} {} {} {} {}", fit(r.pool.mode, 5),
		                fit(opt_text(r.persists_per_s, count_text), 9, true),
		                fit(opt_text(r.bytes_per_s, per_second_bytes), 12, true),
		                fit(opt_text(r.pool.p50, latency_text), 7, true),
		                fit(opt_text(r.pool.p99, latency_text), 7, true),
		                fit(lag_text(r.pool), 14, true),
		                fit(count_text(r.pool.errors), 6, true), fit(age, 6, true));
		std::string text = before + state + after;
		if (o.width && text.size() > o.width)
			text.resize(o.width);
		else if (is_selected && o.color)
			text = "\x1b[7m" + text + "\x1b[0m";
		else if (o.color)
			text = before + state_color(r.pool.state) + state + "\x1b[0m" + after;
		else if (o.interactive)
			text[0] = is_selected ? '>' : text[0];
		std::vector<std::string> block{text};
		if (auto e = std::string(8, ' ') + explanation(r); e.size() > 8)
			block.push_back(o.width && e.size() > o.width ? e.substr(0, o.width) : e);
		blocks.push_back(std::move(block));
	}

	// What follows the pools: details, rpmemd's sessions, files that could not be read, the
	// state changes seen.
	std::vector<std::string> tail;
	if (o.interactive && details_ && selected_) {
		for (const auto &r : rows_) {
			if (key_of(r) != *selected_)
				continue;
			const auto &p = r.pool;
			tail.push_back("");
			tail.push_back("details: " + pool_name(r));
			tail.push_back(fmt::format(
			    "  metrics file {}, written {} ago{}", r.source.path,
			    duration_text(r.age),
			    r.source.pid
			        ? fmt::format(" by pid {} ({})", r.source.pid, r.source.command)
			        : std::string()));
			tail.push_back(fmt::format(
			    "  provider {}, persist method {}, mode {}, {:.0f} lane(s), state {}",
			    p.provider, p.method, p.mode, p.lanes, p.state));
			tail.push_back(fmt::format(
			    "  {:.0f} persist, {:.0f} flush, {:.0f} drain, {:.0f} read, {:.0f} "
			    "deep_persist; {} persisted, {} read; {:.0f} round trips",
			    p.persists, p.flushes, p.drains, p.reads, p.deep_persists,
			    bytes_text(p.bytes_persisted), bytes_text(p.bytes_read),
			    p.round_trips));
			tail.push_back(fmt::format(
			    "  round-trip latency p50 {}, p90 {}, p99 {}, p99.9 {}",
			    opt_text(p.p50, latency_text), opt_text(p.p90, latency_text),
			    opt_text(p.p99, latency_text), opt_text(p.p999, latency_text)));
			tail.push_back(fmt::format(
			    "  {:.0f} error(s); last persist {}", p.errors,
			    p.last_persist > 0 ? duration_text(last_.now - p.last_persist) + " ago"
			                       : std::string("none yet")));
			if (p.lag_bytes)
				tail.push_back(
				    fmt::format("  async lag {} (bound {}), {} (bound {}); {:.0f} "
				                "persist(s) waited",
				                bytes_text(*p.lag_bytes),
				                opt_text(p.lag_bound_bytes, bytes_text),
				                opt_text(p.lag_seconds, latency_text),
				                opt_text(p.lag_bound_seconds, latency_text),
				                p.throttled.value_or(0)));
			for (const auto &s : last_.sessions)
				if (s.record.descriptor == p.descriptor)
					tail.push_back(fmt::format(
					    "  rpmemd on this host: pid {} {} for {}{}",
					    s.record.pid,
					    s.alive ? "serves " + s.record.poolset
					            : std::string("is gone"),
					    s.record.peer,
					    s.behind ? ", marked possibly behind" : ""));
		}
	}
	tail.push_back("");
	tail.push_back(fmt::format("rpmemd sessions here ({}): {}", last_.sessions_dir,
	                           last_.sessions.empty() ? std::string("none")
	                                                  : std::to_string(serving) + " serving"));
	if (!last_.sessions_problem.empty())
		tail.push_back("  " + last_.sessions_problem);
	if (!last_.sessions.empty()) {
		std::size_t pool_w = 12;
		for (const auto &s : last_.sessions)
			pool_w = std::max(pool_w, s.record.descriptor.size());
		tail.push_back(fmt::format("{} {} {} {} {} {} {} {}", fit("PID", 7),
		                           fit("POOL", pool_w), fit("PEER", 22), fit("SINCE", 8),
		                           fit("SIZE", 10), fit("PROVIDER", 8), fit("METHOD", 7),
		                           "STATE"));
		for (const auto &s : last_.sessions) {
			const auto &r = s.record;
			tail.push_back(fmt::format(
			    "{} {} {} {} {} {} {} {}{}", fit(std::to_string(r.pid), 7),
			    fit(r.descriptor, pool_w), fit(r.peer, 22),
			    fit(duration_text(last_.now - double(r.since)), 8),
			    fit(bytes_text(double(r.pool_size)), 10), fit(r.provider, 8),
			    fit(r.method, 7), s.alive ? "serving" : "gone (killed?)",
			    s.alive && s.behind ? ", marked possibly behind" : ""));
		}
	}
	for (const auto &f : last_.files)
		if (!f.metrics)
			tail.push_back(
			    fmt::format("metrics file {}: {}", f.source.path, f.problem));
	if (!events_.empty()) {
		tail.push_back("");
		tail.push_back("state changes seen (UTC):");
		const std::size_t room =
		    o.height ? std::min<std::size_t>(events_.size(), 8) : events_.size();
		for (auto it = events_.end() - long(room); it != events_.end(); ++it)
			tail.push_back("  " + *it);
	}

	// Windowed to the height: the pools as far as they fit around the selection.
	std::size_t room = SIZE_MAX;
	if (o.height)
		room = o.height > out.size() + tail.size() + 3 ? o.height - out.size() - tail.size()
		                                               : 3;
	std::size_t first = 0, used = 0;
	for (std::size_t b = 0; b < blocks.size(); ++b)
		used += blocks[b].size();
	if (used > room) {
		// Start far enough back that the selected block ends inside the room.
		std::size_t lines = 0;
		first = selected_block;
		for (std::size_t b = selected_block + 1; b-- > 0;) {
			if (lines + blocks[b].size() > room)
				break;
			lines += blocks[b].size();
			first = b;
		}
	}
	std::size_t shown = 0;
	for (std::size_t b = first; b < blocks.size(); ++b)
		for (const auto &l : blocks[b])
			if (shown++ < room)
				out.push_back(l); // already fitted to the width
	for (auto &t : tail)
		line(std::move(t));
	if (o.height && out.size() > o.height)
		out.resize(o.height);
	return out;
}

} // namespace rpmem::tool
