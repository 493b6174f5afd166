// SPDX-License-Identifier: BSD-3-Clause
// rpmem top's picture: what each refresh read (the metrics files of the processes here, the
// records of the rpmemd sessions here) becomes rows, with what only a sequence of reads shows:
// rates, a catch-up's progress and estimate, the state changes seen. Rendered as plain lines;
// colours and the selection are escape sequences only when asked for (a terminal). Pure: no
// file, no terminal, no clock (top.cpp reads, times and draws).
#pragma once

#include "metrics_read.hpp"

#include "control/session_record.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace rpmem::tool
{

/** A metrics file, and the process that writes it where top found out (/proc). */
struct metrics_source {
	std::string path;
	std::int64_t pid = 0; // 0: not known
	std::string command;  // the writer's program name
	// Its data is stale once older than this (seconds): 3 of the writer's
	// RPMEM_STATS_INTERVAL where known.
	double stale_after = 30;
	bool in_directory = false; // found in a directory named to top (which may hold others')
};

/** What one refresh read. */
struct snapshot {
	double now = 0; // seconds since the epoch
	struct file {
		metrics_source source;
		std::optional<metrics_file> metrics;
		std::string problem; // why there are none
	};
	std::vector<file> files;
	struct session {
		control::session_record record;
		bool alive = false;
		bool behind = false; // its pool's header is marked possibly behind
	};
	std::string sessions_dir;
	std::string sessions_problem;
	std::vector<session> sessions;
};

/** How the rows are ordered; `s` in the view cycles through them in this order. */
enum class sort_key { state, pool, rate, behind, errors };
const char *to_string(sort_key k);
std::optional<sort_key> parse_sort_key(const std::string &name);

/** The view: fed snapshots, asked for lines. */
class top_view
{
public:
	/** One pool as shown. */
	struct row {
		metrics_source source;
		pool_sample pool;
		double written = 0;
		double age = 0; // seconds since the file was written
		bool stale = false;
		std::optional<double> persists_per_s, bytes_per_s;
		// while the replica is away or catching up: the most it lacked since it left sync
		double behind_peak = 0;
		std::optional<double> eta_seconds; // catching up: time left at the rate so far
		double idle_seconds = 0;           // catching up: since bytes to go last fell
	};

	struct render_options {
		unsigned width = 0;       // 0: no limit (batch)
		unsigned height = 0;      // 0: no limit
		bool color = false;       // ANSI colours and reverse video for the selection
		bool interactive = false; // the key help line, the selection, the details pane
	};

	void update(const snapshot &s);
	std::vector<std::string> render(const render_options &o) const;

	void next_sort();
	sort_key sort() const { return sort_; }
	void set_sort(sort_key k) { sort_ = k; }
	/** Moves the selection by `delta` rows. */
	void select(int delta);
	void toggle_details() { details_ = !details_ && !rows_.empty(); }
	void close_details() { details_ = false; }
	const std::vector<row> &rows() const { return rows_; }

private:
	using key = std::tuple<std::string, std::string, std::string, std::optional<std::uint64_t>>;
	/** What the earlier reads of one pool left. */
	struct history {
		double written = 0;
		pool_sample last;
		std::optional<double> persists_per_s, bytes_per_s;
		double behind_peak = 0;
		bool catching = false;
		double catch_start = 0, catch_start_to_go = 0;
		double last_fall = 0; // when bytes to go last fell
		std::optional<double> eta;
	};
	static key key_of(const row &r);
	void order();
	void note(double when, const row &r, const std::string &from);
	std::string pool_name(const row &r) const;

	std::map<key, history> history_;
	std::vector<row> rows_;
	snapshot last_;
	std::deque<std::string> events_; // the state changes seen, newest last
	sort_key sort_ = sort_key::state;
	std::optional<key> selected_;
	bool details_ = false;
};

/** "1.2 MiB" (binary units); "-" for none. */
std::string bytes_text(double bytes);
/** "32us", "1.0ms", "2.1s". */
std::string latency_text(double seconds);
/** "3021", "12.3k", "1.2M". */
std::string count_text(double n);
/** "3 s", "4 min", "2 h". */
std::string duration_text(double seconds);

} // namespace rpmem::tool
