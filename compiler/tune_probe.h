// tune_probe.h - probe shapes: what `kpack tune` times between the grid's
// values, so that a decision table's region between two tuned shapes is
// judged also by a shape inside it (docs/tuning.md, "Probes").
//
// A grid is usually made of round numbers (powers of two, 1.5x steps),
// which every tile size divides; the shapes engines run mostly are not.
// A tile that fits a grid value exactly can fall off a cliff just past it
// (a nearly empty second chunk) and still win at both ends of the region.
// The probe of region (lo, hi) is a "generic" value near its geometric
// middle: an odd multiple of 16 (16-byte aligned rows, no larger power of
// two), else of 8, 4, 2, else any integer, the first within 1.25x of the
// middle and strictly inside; between two equally near, the larger, which
// for a grid of powers of two is just past a power of two: the cliff of
// every tile that divides it, which a region's choice must survive.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace kpack {

// The probe of the open interval (lo, hi), 1 <= lo < hi; nullopt when no
// integer lies strictly inside (hi == lo + 1).
std::optional<int64_t> ProbeBetween(int64_t lo, int64_t hi);

// A key axis's probe values, ascending: ProbeBetween of each pair of
// neighbouring grid values where it exists; the value itself of a grid of
// one value (a probe lies in a cell of every axis).
std::vector<int64_t> ProbeAxis(const std::vector<int64_t>& grid);

// Whether `v` may be a probe's value on an axis of `grid` (ascending,
// distinct): strictly between two neighbouring values, or a one-value
// grid's value.
bool ProbeValueFits(const std::vector<int64_t>& grid, int64_t v);

}  // namespace kpack
