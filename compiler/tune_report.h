// tune_report.h - the visual report of a `kpack tune` run: one
// self-contained HTML file (inline SVG and CSS, no scripts, no external
// assets) that a person opens to see why each shape got its winner.
#pragma once

#include <string>

#include "tuning_writer.h"

namespace kpack {

// The report of `results`: a summary table (per kernel and combination:
// shapes, wins per candidate, the smallest margin), then per kernel and
// combination a chart with the tuned shapes on the x axis in grid order,
// the median time per launch on a log y axis, one polyline per candidate
// (split where it may not run) with a legend, the winner at each shape
// marked with a dot and its margin printed above it; below a chart, its
// probes (shapes between the grid's values) as a table of every
// candidate's time with the winner and margin.  A kernel timed also with
// its unaligned variant gets a chart per variant, the second titled
// "(unaligned variant)".  Deterministic.
std::string FormatTuneReport(const TuneResults& results);

}  // namespace kpack
