// tuning_writer.h - the tuning file that `kpack tune` writes (docs/tuning.md,
// "Tuning files"; tuning_reader.h reads it back into decision tables): what
// the harness measured, per tuned kernel, combination and shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kpack {

// One built combination of a kernel's non-auto API constexprs.
struct TunedResultTable {
  // The `for` map: (constexpr, value as ValueText spells it), in constexpr order.
  std::vector<std::pair<std::string, std::string>> combo;
  std::string label;  // "T=f16", for people ("" without such constexprs)
  // The launcher's unaligned variant's times (`variant: unaligned`): a
  // kernel whose launcher picks an aligned variant has a second table per
  // combination, timed with buffers off 16-byte alignment.
  bool unaligned = false;
  // [shape][candidate]: the median microseconds per launch; nullopt where
  // the candidate was not built for this combination or is not valid there.
  // The grid's shapes (Shapes() rows, in grid order), then the kernel's
  // probes (one row each, in `probes` order).
  std::vector<std::vector<std::optional<double>>> us;
};

struct TunedResultKernel {
  std::string kernel;
  std::string manifest_hash;  // TuneManifestHash (tune_hash.h)
  // The grid: each key param's values, in `key:` order (the last fastest).
  std::vector<std::pair<std::string, std::vector<int64_t>>> key;
  std::vector<std::string> tuned;       // the auto constexprs, in constexpr order
  std::vector<std::string> candidates;  // labels: "BLOCK=256 num_warps=4"
  // The probe shapes (tune_probe.h), each one value per key in `key:`
  // order; none for a kernel tuned without probes.
  std::vector<std::vector<int64_t>> probes;
  std::vector<TunedResultTable> tables;

  size_t Shapes() const;  // the grid's, without the probes
  // Shape `shape` < Shapes() + probes.size(): of the grid (row-major, the
  // last key fastest), then the probes.
  std::vector<int64_t> ShapeKey(size_t shape) const;
  std::string ShapeLabel(size_t shape) const;  // "rows=1 cols=128"
};

// One run of `kpack tune` on one GPU.
struct TuneResults {
  std::string package;
  std::string manifest_label;  // the package file, as the header banner names it
  std::string gpu;             // cuDeviceGetName
  int sm = 0;
  std::string driver;          // "580.159.04 (CUDA 13.0)"
  std::string kpack_version;
  int repeats = 0;
  std::vector<TunedResultKernel> kernels;
};

// The fastest candidate at a shape and how much faster it is than the
// runner-up.  Ranked by the times as the file prints them (rounded), ties
// to the earlier candidate, so that `best` is the fastest of what the file
// says; the margin is the measured runner-up's time over the measured
// best's, and at least 1.
struct ShapeWinner {
  std::optional<size_t> best;  // nullopt: no candidate may run there
  double margin = 1.0;         // 1.0 with a single candidate
};
ShapeWinner WinnerOf(const std::vector<std::optional<double>>& us);

// "nvidia-h100-80gb-hbm3": lowercase, each run of other characters one '-',
// none at the ends; "gpu" for a name with no letter or digit.
std::string GpuSlug(const std::string& gpu);

// Microseconds with 3 significant digits, never in exponent form, without
// trailing zeros: "2.91", "0.0457", "12.3", "1235", "0".
std::string FormatMicroseconds(double us);

// The tuning file's text (deterministic: no time, no host, no path but
// the package file's label).
std::string FormatTuningFile(const TuneResults& results);

}  // namespace kpack
