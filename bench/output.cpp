// SPDX-License-Identifier: BSD-3-Clause
#include "output.hpp"

#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

namespace rpmem::bench
{

namespace fs = std::filesystem;

namespace
{

std::string num(double v, int prec)
{
	return v > 0 ? fmt::format("{:.{}f}", v, prec) : std::string("-");
}

} // namespace

void print_table(std::FILE *out, const std::vector<row> &rows)
{
	fmt::print(out,
	           "{:<8} {:<6} {:<28} {:<14} {:>10} {:>10} {:>9} {:>9}  {:<26} {:>9} {:>6}  {}\n",
	           "provider", "method", "scenario", "param", "median_us", "p99_us", "MiB/s",
	           "ops/s", "floor", "floor_val", "ratio", "note");
	for (const auto &r : rows)
		fmt::print(
		    out,
		    "{:<8} {:<6} {:<28} {:<14} {:>10} {:>10} {:>9} {:>9}  {:<26} {:>9} {:>6}  "
		    "{}\n",
		    r.provider, r.method, r.scenario, r.param, num(r.median_us, 2),
		    num(r.p99_us, 2), num(r.mib_s, 1), num(r.ops_s, 0),
		    r.floor.empty() ? "-" : r.floor, num(r.floor_value, 2),
		    r.floor.empty() ? "-" : fmt::format("{:.3f}", r.ratio), r.note);
}

void print_csv(std::FILE *out, const std::vector<row> &rows)
{
	fmt::print(out, "provider,method,scenario,param,size,threads,median_us,p99_us,mib_s,ops_s,"
	                "floor,floor_value,ratio,note\n");
	for (const auto &r : rows)
		fmt::print(
		    out, "{},{},{},{},{},{},{:.3f},{:.3f},{:.2f},{:.1f},{},{:.3f},{},\"{}\"\n",
		    r.provider, r.method, r.scenario, r.param, r.size, r.threads, r.median_us,
		    r.p99_us, r.mib_s, r.ops_s, r.floor, r.floor_value,
		    r.floor.empty() ? std::string() : fmt::format("{:.4f}", r.ratio), r.note);
}

void plot(const std::vector<row> &rows, const std::string &png)
{
	// One series per (panel, title): points are (size, value).
	struct series {
		int panel;
		bool floor;
		std::vector<std::pair<double, double>> pts;
	};
	std::map<std::string, series> all;
	auto add = [&](int panel, bool fl, const std::string &title, double x, double y) {
		if (x <= 0 || y <= 0)
			return;
		auto &s = all[fmt::format("{}|{}", panel, title)];
		s.panel = panel;
		s.floor = fl;
		s.pts.emplace_back(x, y);
	};
	for (const auto &r : rows) {
		double x = double(r.size);
		if (r.scenario == "persist" && r.note.empty())
			add(0, false, fmt::format("{} {} persist", r.provider, r.method), x,
			    r.median_us);
		else if (r.scenario == "floor:write+msg+reply" ||
		         r.scenario == "floor:write+read" || r.scenario == "floor:send+reply")
			add(0, true, fmt::format("{} {}", r.provider, r.scenario), x, r.median_us);
		else if (r.scenario == "persist-bw")
			add(1, false, fmt::format("{} {} persist 1 lane", r.provider, r.method), x,
			    r.mib_s);
		else if (r.scenario.rfind("throughput-", 0) == 0)
			add(1, false, fmt::format("{} {} threads/lanes", r.provider, r.threads), x,
			    r.mib_s);
		else if (r.scenario == "floor:stream")
			add(1, true, fmt::format("{} floor:stream", r.provider), x, r.mib_s);
	}
	char templ[] = "/tmp/rpmem-bench-plot.XXXXXX";
	if (!mkdtemp(templ))
		throw rpmem::error(errno, "cannot make a temporary directory for the plot data");
	fs::path dir = templ;
	std::string plots[2];
	int n = 0;
	for (auto &[key, s] : all) {
		std::sort(s.pts.begin(), s.pts.end());
		fs::path f = dir / fmt::format("s{}.dat", n++);
		std::ofstream d(f);
		for (auto [x, y] : s.pts)
			d << x << " " << y << "\n";
		std::string title = key.substr(key.find('|') + 1);
		plots[s.panel] +=
		    fmt::format("{}'{}' using 1:2 with linespoints {} title '{}'",
		                plots[s.panel].empty() ? "" : ", ", f.string(),
		                s.floor ? "dashtype 2 pointtype 6" : "linewidth 2", title);
	}
	fs::path script = dir / "plot.gp";
	{
		std::ofstream g(script);
		g << "set terminal pngcairo size 1600,650 font ',10'\n";
		g << "set output '" << png << "'\n";
		g << "set multiplot layout 1,2\n";
		g << "set logscale xy\nset grid\nset key top left font ',9'\n";
		g << "set format x '%.0s%cB'\n";
		g << "set xlabel 'bytes per persist'\n";
		g << "set title 'persist latency (median) vs transport floor'\nset ylabel 'µs'\n";
		if (!plots[0].empty())
			g << "plot " << plots[0] << "\n";
		else
			g << "plot 1 title 'no latency rows'\n";
		g << "set title 'throughput vs streaming floor'\nset ylabel 'MiB/s'\n";
		if (!plots[1].empty())
			g << "plot " << plots[1] << "\n";
		else
			g << "plot 1 title 'no throughput rows'\n";
		g << "unset multiplot\n";
	}
	std::string cmd =
	    fmt::format("gnuplot '{}' 2>'{}/gnuplot.err'", script.string(), dir.string());
	int rc = std::system(cmd.c_str());
	std::string err;
	{
		std::ifstream e(dir / "gnuplot.err");
		err.assign(std::istreambuf_iterator<char>(e), {});
	}
	std::error_code ec;
	fs::remove_all(dir, ec);
	if (rc != 0)
		throw rpmem::error(EIO, fmt::format("gnuplot failed (status {}) writing {}: {} — "
		                                    "install gnuplot-nox (apt-get install "
		                                    "gnuplot-nox)",
		                                    rc, png, err));
}

void plot_all(const std::vector<row> &rows, const std::string &png)
{
	plot(rows, png);
	std::vector<std::string> providers;
	for (const auto &r : rows)
		if (r.provider != "-" &&
		    std::find(providers.begin(), providers.end(), r.provider) == providers.end())
			providers.push_back(r.provider);
	if (providers.size() < 2)
		return;
	fs::path p = png;
	for (const auto &prov : providers) {
		std::vector<row> mine;
		for (const auto &r : rows)
			if (r.provider == prov)
				mine.push_back(r);
		plot(mine,
		     (p.parent_path() / (p.stem().string() + "-" + prov + p.extension().string()))
		         .string());
	}
}

std::vector<row> read_csv(const std::string &path)
{
	std::ifstream in(path);
	if (!in)
		throw rpmem::error(ENOENT, fmt::format("cannot read {}: give a file written by "
		                                       "rpmem-bench --csv",
		                                       path));
	std::vector<row> rows;
	std::string line;
	bool header = true;
	while (std::getline(in, line)) {
		if (header || line.empty()) {
			header = false;
			continue;
		}
		std::vector<std::string> c;
		std::string cur;
		bool quoted = false;
		for (char ch : line) {
			if (ch == '"')
				quoted = !quoted;
			else if (ch == ',' && !quoted) {
				c.push_back(cur);
				cur.clear();
			} else
				cur += ch;
		}
		c.push_back(cur);
		if (c.size() != 14)
			throw rpmem::error(
			    EINVAL, fmt::format("{}: not an rpmem-bench CSV line: {}", path, line));
		auto d = [](const std::string &v) { return v.empty() ? 0.0 : std::stod(v); };
		row r;
		r.provider = c[0];
		r.method = c[1];
		r.scenario = c[2];
		r.param = c[3];
		r.size = static_cast<std::size_t>(d(c[4]));
		r.threads = static_cast<unsigned>(d(c[5]));
		r.median_us = d(c[6]);
		r.p99_us = d(c[7]);
		r.mib_s = d(c[8]);
		r.ops_s = d(c[9]);
		r.floor = c[10];
		r.floor_value = d(c[11]);
		r.ratio = d(c[12]);
		r.note = c[13];
		rows.push_back(r);
	}
	return rows;
}

} // namespace rpmem::bench
