// tuning_reader.h - tuning files: what `kpack tune` measured on one GPU
// model, listed by the package file's `tuning:` and compiled into the auto
// dispatchers' decision tables (docs/tuning.md, "Tuning files and decision
// tables").
//
// Read in two steps.  The load pass reads each file on its own terms (its
// keys and types, its version and package, kernels the package has with a
// `tune:` section, one result per shape of the file's grid in grid order,
// times that are numbers, `best` the fastest; a table's optional `variant:
// unaligned` and `probes:`, each probe inside the grid's cells and at most
// once, its times checked as a result's), so every error names a line of
// the file.  After the expand pass CheckTunings() compares each tuned
// kernel's manifest_hash with the manifest's (TuneManifestHash): a stale
// tuning is an error, or with --allow-stale-tuning a warning and its tables
// dropped; a tuning that is not stale must then agree with the manifest and
// the builds (key, shapes, tuned constexprs, `for` combinations and
// candidates that were built, one table per combination and variant, an
// unaligned variant's table only for a kernel with an aligned variant).  A
// changed manifest therefore says "stale" once, not every way in which the
// file no longer fits it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "diagnostics.h"
#include "expand.h"
#include "manifest.h"
#include "model.h"
#include "yaml_reader.h"

namespace kpack {

// Reads the package file's `tuning:` list (`list`, read by `r`, the package
// file's reader) once `pkg`'s kernels are loaded: each path relative to the
// package file and inside the project root, each file once, then each file
// as ReadTuningFile does, into pkg.tunings in list order.
void ReadTunings(FileReader& r, const YAML::Node& list, Package& pkg);

// Reads one tuning file at `path` (resolved; `listed` as the package file
// wrote it) for `pkg`, whose kernels are loaded.  nullopt when it has
// errors, each reported at its position.
std::optional<TuningFile> ReadTuningFile(const std::string& path, const std::string& listed, const Package& pkg,
                                         const LoadOptions& options, Diagnostics& diag);

// After the expand pass (`specs` are Expand's for `pkg`): staleness, then
// agreement with the manifests and the builds; fills each TunedKernel's
// candidates and each table's combo.  A stale kernel is an error at its
// manifest_hash, or with `allow_stale` a warning there (a "warning:" line,
// which does not fail the pass) and its tables are dropped.
void CheckTunings(Package& pkg, const std::vector<Specialization>& specs, bool allow_stale, Diagnostics& diag);

// Shapes in the grid of `axes`: the product of their lengths.
size_t GridSize(const std::vector<TuneAxis>& axes);

// The values of shape `index` of the grid (row-major, the last axis
// fastest), one per axis.
std::vector<int64_t> GridPoint(const std::vector<TuneAxis>& axes, size_t index);

// Runner-up time / best time of a ranking (fastest first): 1 with one
// candidate, 0 with none.
double Margin(const std::vector<std::pair<size_t, double>>& ranking);

// "T=f16 FLAG=true", the combination of a table as messages and `kpack
// inspect` spell it; "" when the kernel has no such constexpr.
std::string ComboText(const Kernel& k, const std::vector<ConstexprValue>& combo);

// The constexprs a table's `for` names: those in the API without `auto:`,
// in constexpr order.
std::vector<size_t> ForAxes(const Kernel& k);

}  // namespace kpack
