// SPDX-License-Identifier: BSD-3-Clause
// Presenting the rows: a readable table, CSV, and gnuplot plots (latency vs size and
// throughput vs size, the floors drawn dashed beside ours).
#pragma once

#include "common.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace rpmem::bench
{

void print_table(std::FILE *out, const std::vector<row> &rows);
void print_csv(std::FILE *out, const std::vector<row> &rows);
/** Writes a PNG with two panels through gnuplot. Throws rpmem::error when gnuplot fails. */
void plot(const std::vector<row> &rows, const std::string &png);
/** plot() for all rows into `png`, and with several providers also one PNG per provider
 *  ("<stem>-<provider>.png" beside it). */
void plot_all(const std::vector<row> &rows, const std::string &png);
/** Rows back from print_csv's output (to re-plot a run). Throws rpmem::error. */
std::vector<row> read_csv(const std::string &path);

} // namespace rpmem::bench
