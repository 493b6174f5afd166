// SPDX-License-Identifier: BSD-3-Clause
// rpmem top: a live view of the pools the processes of this host replicate and of the rpmemd
// sessions this host serves, refreshed every second: state (connected, reconnecting, lost,
// catching up, failed, closed), persists and bytes per second, latency, async lag against its
// bound, a catch-up's progress, errors. It reads what is already there: the metrics files
// librpmem writes (RPMEM_STATS_FILE; found through /proc/PID/environ of this user's processes,
// or named) and the records rpmemd keeps (rpmem status). On a terminal it draws with plain
// ANSI escape sequences and reads keys; otherwise it prints snapshots, as top -b does.
#include "tool.hpp"

#include "served_pool.hpp"
#include "top_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <poll.h>
#include <sstream>
#include <sys/ioctl.h>
#include <termios.h>
#include <thread>
#include <unistd.h>

namespace rpmem::tool
{

namespace
{

namespace fs = std::filesystem;

/** A metrics file is never larger than this (a few KiB per pool). */
constexpr std::size_t max_file = 16u << 20;

std::string read_text(const fs::path &p, std::size_t limit, std::string *why = nullptr)
{
	std::ifstream in(p, std::ios::binary);
	if (!in) {
		if (why)
			*why = fmt::format("cannot read it: {}", std::strerror(errno));
		return {};
	}
	std::string text(limit, '\0');
	in.read(text.data(), std::streamsize(limit));
	text.resize(std::size_t(in.gcount()));
	if (why && text.size() == limit)
		*why = fmt::format("larger than {} MiB: not a metrics file", limit >> 20);
	return text;
}

/** When a file's data is stale: --stale, or 3 of its writer's RPMEM_STATS_INTERVAL (librpmem's
 *  default where not known). */
double stale_bound(const top_args &a, double interval_ms = 10000)
{
	return a.stale > 0 ? a.stale : 3 * interval_ms / 1000;
}

/**
 * The metrics files of this user's processes: RPMEM_STATS_FILE (and RPMEM_STATS_INTERVAL) in
 * /proc/PID/environ, a relative path taken from the process's working directory. Other users'
 * environments are not readable (nor needed: their files are not ours to watch); a process
 * that called rpmem::pool::export_stats instead is not seen (name its file).
 */
std::map<std::string, metrics_source> running_writers(const top_args &a)
{
	std::map<std::string, metrics_source> found;
	std::error_code ec;
	for (const auto &e : fs::directory_iterator("/proc", ec)) {
		const auto name = e.path().filename().string();
		if (name.find_first_not_of("0123456789") != std::string::npos)
			continue;
		const std::int64_t pid = std::stoll(name);
		if (pid == ::getpid())
			continue;
		const auto env = read_text(e.path() / "environ", 1u << 20);
		std::string path, interval_text;
		double interval = 10000; // librpmem's default, and what it uses for a wrong value
		for (std::size_t at = 0; at < env.size();) {
			auto end = env.find('\0', at);
			if (end == std::string::npos)
				end = env.size();
			const std::string_view var(env.data() + at, end - at);
			at = end + 1;
			if (var.rfind("RPMEM_STATS_FILE=", 0) == 0)
				path = var.substr(17);
			else if (var.rfind("RPMEM_STATS_INTERVAL=", 0) == 0)
				interval_text = var.substr(21);
		}
		if (path.empty())
			continue;
		if (path[0] != '/') {
			std::error_code cwd_ec;
			const auto cwd = fs::read_symlink(e.path() / "cwd", cwd_ec);
			if (cwd_ec)
				continue;
			path = (cwd / path).string();
		}
		if (const double ms = std::strtod(interval_text.c_str(), nullptr); ms >= 100)
			interval = ms;
		auto command = read_text(e.path() / "comm", 256);
		while (!command.empty() && command.back() == '\n')
			command.pop_back();
		found[fs::weakly_canonical(path, ec).string()] = {path, pid, command,
		                                                  stale_bound(a, interval)};
	}
	return found;
}

/** The files to read this refresh: the named ones (a directory: its *.prom and *.json), or
 *  the running writers'. */
std::vector<metrics_source> sources(const top_args &a)
{
	auto writers = running_writers(a);
	if (a.paths.empty()) {
		std::vector<metrics_source> all;
		for (auto &[canonical, s] : writers)
			all.push_back(std::move(s));
		return all;
	}
	std::vector<metrics_source> out;
	auto add = [&](const fs::path &p, bool in_directory) {
		std::error_code ec;
		const auto canonical = fs::weakly_canonical(p, ec).string();
		metrics_source s{p.string(), 0, {}, stale_bound(a), in_directory};
		if (auto it = writers.find(canonical); it != writers.end()) {
			s.pid = it->second.pid;
			s.command = it->second.command;
			s.stale_after = it->second.stale_after;
		}
		out.push_back(std::move(s));
	};
	for (const auto &p : a.paths) {
		std::error_code ec;
		if (!fs::is_directory(p, ec)) {
			add(p, false);
			continue;
		}
		std::vector<fs::path> in_dir;
		for (const auto &e : fs::directory_iterator(p, ec)) {
			const auto ext = e.path().extension();
			if (e.is_regular_file(ec) && (ext == ".prom" || ext == ".json"))
				in_dir.push_back(e.path());
		}
		std::sort(in_dir.begin(), in_dir.end());
		for (const auto &f : in_dir)
			add(f, true);
	}
	return out;
}

double unix_now()
{
	return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
	    .count();
}

snapshot read_all(const top_args &a)
{
	snapshot s;
	for (auto &src : sources(a)) {
		snapshot::file f;
		f.source = std::move(src);
		std::string why;
		const auto text = read_text(f.source.path, max_file, &why);
		if (why.empty())
			f.metrics = parse_metrics(text, &why);
		f.problem = why;
		// A directory's files of other exporters are theirs: not a problem of ours.
		if (f.metrics || !f.source.in_directory || why != "no rpmem metric in it")
			s.files.push_back(std::move(f));
	}
	s.sessions_dir = a.dir.empty() ? control::default_session_dir() : a.dir;
	for (auto &l : control::list_sessions(s.sessions_dir, &s.sessions_problem))
		s.sessions.push_back(
		    {l.record, l.alive, l.alive && marked_behind(l.record.poolset)});
	s.now = unix_now(); // after reading: no file is newer than now
	return s;
}

volatile std::sig_atomic_t stop_asked = 0;
volatile std::sig_atomic_t resized = 0;

/** The terminal while the view runs: keys unbuffered and unechoed, the alternate screen, no
 *  cursor; all of it restored when destroyed, and on SIGINT, SIGTERM, SIGHUP (they end the
 *  loop, which destroys it). */
class terminal
{
public:
	terminal()
	{
		::tcgetattr(STDIN_FILENO, &saved_);
		termios raw = saved_;
		raw.c_lflag &= ~tcflag_t(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		::tcsetattr(STDIN_FILENO, TCSANOW, &raw);
		struct sigaction sa {
		};
		sa.sa_handler = [](int sig) {
			if (sig == SIGWINCH)
				resized = 1;
			else
				stop_asked = 1;
		};
		for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGWINCH})
			::sigaction(sig, &sa, nullptr); // no SA_RESTART: poll() returns at once
		put("\x1b[?1049h\x1b[?25l");
	}
	~terminal()
	{
		put("\x1b[0m\x1b[?25h\x1b[?1049l");
		::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
	}
	terminal(const terminal &) = delete;
	terminal &operator=(const terminal &) = delete;

	static void put(std::string_view s)
	{
		while (!s.empty()) {
			const auto n = ::write(STDOUT_FILENO, s.data(), s.size());
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return;
			s.remove_prefix(std::size_t(n));
		}
	}
	static std::pair<unsigned, unsigned> size()
	{
		winsize w{};
		if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) != 0 || !w.ws_col || !w.ws_row)
			return {80, 24};
		return {w.ws_col, w.ws_row};
	}
	void draw(const std::vector<std::string> &lines)
	{
		std::string frame = "\x1b[H";
		for (std::size_t i = 0; i < lines.size(); ++i)
			frame += lines[i] + "\x1b[K" + (i + 1 < lines.size() ? "\r\n" : "");
		put(frame + "\x1b[J");
	}

private:
	termios saved_{};
};

/** What a key asks for. */
enum class key_action { none, quit, redraw };

key_action keys(top_view &view)
{
	char buf[64];
	const auto n = ::read(STDIN_FILENO, buf, sizeof buf);
	if (n <= 0)
		return n == 0 ? key_action::quit : key_action::none; // EOF: the terminal is gone
	for (long i = 0; i < n; ++i) {
		switch (buf[i]) {
		case 'q':
		case 'Q':
			return key_action::quit;
		case 's':
			view.next_sort();
			break;
		case 'j':
			view.select(1);
			break;
		case 'k':
			view.select(-1);
			break;
		case '\r':
		case '\n':
			view.toggle_details();
			break;
		case '\x1b':
			if (i + 2 < n && buf[i + 1] == '[' &&
			    (buf[i + 2] == 'A' || buf[i + 2] == 'B')) {
				view.select(buf[i + 2] == 'A' ? -1 : 1);
				i += 2;
			} else {
				view.close_details();
			}
			break;
		default:
			break;
		}
	}
	return key_action::redraw;
}

bool colors_wanted()
{
	const char *term = std::getenv("TERM");
	return !std::getenv("NO_COLOR") && term && std::string(term) != "dumb";
}

int run_interactive(const top_args &a, top_view &view)
{
	terminal t;
	const bool color = colors_wanted();
	const auto delay = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
	    std::chrono::duration<double>(a.delay));
	auto next = std::chrono::steady_clock::now();
	int refreshed = 0;
	for (;;) {
		bool redraw = false;
		if (std::chrono::steady_clock::now() >= next) {
			view.update(read_all(a));
			++refreshed;
			next = std::chrono::steady_clock::now() + delay;
			redraw = true;
		}
		if (resized) {
			resized = 0;
			redraw = true;
		}
		if (redraw) {
			const auto [w, h] = terminal::size();
			t.draw(view.render({w, h, color, true}));
		}
		if (stop_asked || (a.iterations && refreshed >= a.iterations))
			return exit_ok;
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
		    next - std::chrono::steady_clock::now());
		pollfd in{STDIN_FILENO, POLLIN, 0};
		const int ready = ::poll(&in, 1, int(std::max<long>(0, left.count())));
		if (ready > 0 && (in.revents & (POLLIN | POLLHUP))) {
			if (keys(view) == key_action::quit)
				return exit_ok;
			const auto [w, h] = terminal::size();
			t.draw(view.render({w, h, color, true}));
		}
	}
}

int run_batch(const top_args &a, top_view &view)
{
	const int n = a.iterations ? a.iterations : 1;
	for (int i = 0; i < n; ++i) {
		if (i) {
			std::this_thread::sleep_for(std::chrono::duration<double>(a.delay));
			fmt::print("\n");
		}
		view.update(read_all(a));
		for (const auto &l : view.render({}))
			fmt::print("{}\n", l);
		std::fflush(stdout);
	}
	return exit_ok;
}

} // namespace

int cmd_top(const top_args &a)
{
	if (!(a.delay >= 0.1))
		throw failure(
		    fmt::format("-d {}: give at least 0.1 seconds between refreshes", a.delay),
		    exit_usage);
	if (a.iterations < 0)
		throw failure("-n: give a number of refreshes of at least 1", exit_usage);
	top_view view;
	auto key = parse_sort_key(a.sort);
	if (!key)
		throw failure(
		    fmt::format("--sort {}: sort by state, pool, rate, behind or errors", a.sort),
		    exit_usage);
	view.set_sort(*key);
	if (a.batch || !::isatty(STDOUT_FILENO) || !::isatty(STDIN_FILENO))
		return run_batch(a, view);
	return run_interactive(a, view);
}

} // namespace rpmem::tool
