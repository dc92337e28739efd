// tuned_table_gen.h - the decision tables of an auto dispatcher: what the
// package's tuning files (tuning_reader.h) measured for a kernel, as static
// tables and their lookup in generated C, in front of its rules
// (auto_dispatcher_gen.h; docs/tuning.md, "Tuning files and decision
// tables").
//
// The lookup, on every call of <prefix>_<kernel>_auto:
//   1. kpack_tuning_select (kpack_internal.h) picks the tuning of the
//      calling thread's device: the first (package order) whose gpu is the
//      device's name, else the first whose sm is the device's; cached per
//      device, so after the first call it costs a cuCtxGetDevice and an
//      atomic load.
//   2. A branch per combination of the constexprs the caller chooses (not
//      auto) that some tuning has a table for.
//   3. Per key param with lookup values g0 < ... < g(n-1) (LookupAxis: the
//      grid's and the probes' between them), its region (RegionOf): 2i
//      where the value is gi, 2i + 1 strictly between gi and g(i+1); below
//      g0 is region 0, beyond g(n-1) region 2n - 2.  Integer comparisons
//      against those values in the param's own C type.
//   4. The ranking of the region cell, computed at build time
//      (RegionRankings, MinimaxRanking): the candidates timed at every
//      measured shape of the cell (grid shapes and probes, tune_probe.h),
//      by their worst slowdown over them, so that a value between measured
//      shapes does not run a candidate that is fast at the nearer one and
//      falls off a cliff at the other.  At a
//      grid shape it is that shape's ranking.  Where the kernel's launcher
//      has an aligned variant and a tuning has `variant: unaligned`
//      tables, a call that the launcher runs unaligned (its
//      AlignedVariantTest fails) reads those: the fastest tile of the
//      unaligned code is often another.  The first candidate whose
//      `valid` holds at the call (its C, with the candidate's and the combination's
//      values folded in) wins, and the dispatcher is called with its values.
//      Candidates whose `valid` folds to false are left out of the tables,
//      and the ranking ends at the first whose `valid` folds to true.
//   5. No tuning, no table for the combination, or no valid candidate: the
//      rules decide, as without tuning files.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "expand.h"
#include "model.h"

namespace kpack::codegen {

// A cell's ranking as TunedTable::ranking holds it: (candidate, number),
// best first.
using CellRanking = std::vector<std::pair<size_t, double>>;

// The regions of a key with n grid values: 2n - 1.
size_t RegionCount(size_t n);

// The region of `v` for the ascending, distinct `grid`, as the generated
// code computes it: 2i for v == grid[i] (and 0 below grid[0], 2n - 2
// beyond grid[n - 1]), 2i + 1 for grid[i] < v < grid[i + 1].
size_t RegionOf(const std::vector<int64_t>& grid, int64_t v);

// The ranking of a region cell from the rankings (fastest first, with
// times) of its corners, in row-major order: the candidates timed in every
// corner, by their worst ratio time / corner's fastest time, then the sum
// of those ratios, then candidate index; the numbers of the result are the
// worst ratios.  One corner: its own order (the file's, which puts its
// best first among equal times).  No candidate in every corner: the first
// corner with a ranking, as if alone (the lower grid value per key, the
// nearer from below); else empty, and the rules decide.
CellRanking MinimaxRanking(const std::vector<const CellRanking*>& corners);

// A shape timed between the grid's values (TunedProbe) and its ranking.
struct ProbeRanking {
  std::vector<int64_t> at;  // one value per key
  const CellRanking* ranking = nullptr;
};

// The values a key's lookup compares a call's value against: its grid's
// and, between the grid's ends, the probes' (`probe_values`, any order),
// ascending and distinct.
std::vector<int64_t> LookupAxis(const std::vector<int64_t>& grid, const std::vector<int64_t>& probe_values);

// The ranking of every region cell (row-major over RegionCount per key) of
// a table whose per-shape rankings `grid_ranking` are row-major over the
// keys' `grid` values, with `probes` timed between them.  The regions are
// those of `lookup` (per key a LookupAxis of its grid; empty: the grids),
// so a probe's value splits its grid interval in two.  A cell's ranking is
// the MinimaxRanking of the measured shapes in it (its closed range on
// every key), when there are two or more, or it is one measured shape;
// else (a cell that the probes' values cut off from the measurements, say
// between a grid value and a probe on one key and at a grid value on
// another) that of its grid cell: the grid shapes enclosing it (its
// corners) and the probes inside.  A probe without times is left out.
std::vector<CellRanking> RegionRankings(const std::vector<CellRanking>& grid_ranking,
                                        const std::vector<std::vector<int64_t>>& grid,
                                        const std::vector<ProbeRanking>& probes = {},
                                        const std::vector<std::vector<int64_t>>& lookup = {});

// The tuned kernels of `pkg`'s tuning files that have tables for `k` (not
// stale, at least one table), in package order, with their files.  Only
// those CheckTunings passed: it reads their candidates' values.
std::vector<std::pair<const TuningFile*, const TunedKernel*>> TablesFor(const Package& pkg, const Kernel& k);

// The block at the top of k's auto dispatcher that returns the tables'
// choice; "" when TablesFor(pkg, k) is empty.  `who` names the auto
// dispatcher in runtime details ("softmax_auto").  It reads the
// dispatcher's params and its locals of the caller's bool constexprs, and
// the kpack_device_NAME locals of TunedDeviceAttributes, which the caller
// declares and reads before it.
std::string TunedChoiceSource(const Package& pkg, const Kernel& k, const std::vector<const Specialization*>& specs,
                              const std::string& who);

// The device attributes (without "device.") that block reads: those of the
// manifest's `valid`; empty when there are no tables.
std::set<std::string> TunedDeviceAttributes(const Package& pkg, const Kernel& k);

// The functions (expr.h names) `valid` may call: the launcher source
// defines their helpers.  Every function `valid` names, whether or not a
// table exists, so that it does not depend on the tuning files.
std::set<std::string> TunedFunctionsUsed(const Kernel& k);

}  // namespace kpack::codegen
