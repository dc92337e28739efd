// tuner_gen.h - the tuning harness's tables: `kpack build --tuner FILE.c`
// writes, for every kernel with a `tune:` section, what kpack_tune_main.c
// needs to time each built candidate at each shape of the grid
// (kpack_tune.h lays them out; docs/tuning.md says how they are used).
//
// TuneLayout is the one numbering of combinations, candidates and shapes
// that the generated tables, the tuner's --list and --run lines, `kpack
// tune` and the tuning file share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen.h"
#include "expand.h"
#include "model.h"

namespace kpack {

struct TuneLayout {
  const Kernel* kernel = nullptr;
  std::string hash;  // TuneManifestHash over the kernel's API specializations
  // The auto constexprs (what tuning chooses) and the API constexprs that
  // are not auto (a table each), as constexpr indices in constexpr order.
  std::vector<size_t> tuned, combo_axes;
  // Built combinations of combo_axes' values and the candidates (values
  // of `tuned` that some build has), each ordered by the positions of
  // their values in the manifest's lists, the first axis slowest.
  std::vector<std::vector<ConstexprValue>> combos, candidates;
  // [combo][candidate]: the API specialization, nullptr where not built.
  std::vector<std::vector<const Specialization*>> built;
  size_t shapes = 1;  // the grid's size: the product of the key axes' sizes
  // Probe shapes (tune_probe.h): per key, ProbeAxis of its grid; `probes`
  // is their product, numbered after the grid's shapes (shape index
  // shapes + p, row-major, the last key fastest).
  std::vector<std::vector<int64_t>> probe_axes;
  size_t probes = 0;
  // Whether the harness also times every shape with the unaligned variant
  // (variant 1), its `divisibility: auto` buffers one element off 16-byte
  // alignment: the kernel has an aligned variant and such a pointer param.
  // The auto dispatcher then keys its tables on the launcher's choice.
  bool unaligned_twin = false;

  // "T=f16" ("T=f16 ACC=f32"); "" for a kernel whose API constexprs are all auto.
  std::string ComboLabel(size_t combo) const;
  // "BLOCK=256 num_warps=4": the tuning file's candidate label.
  std::string CandidateLabel(size_t candidate) const;
  // The grid's shapes and the probes.
  size_t AllShapes() const { return shapes + probes; }
  // The key values of shape `s` < AllShapes(): of the grid (row-major, the
  // last key fastest), then of the probes.
  std::vector<int64_t> ShapeKey(size_t s) const;
  // "rows=1 cols=128".
  std::string ShapeLabel(size_t s) const;
};

// The layout of every kernel of `pkg` with `tune:`, in package order.
std::vector<TuneLayout> TuneLayouts(const Package& pkg, const std::vector<Specialization>& specs);

// The generated C of the harness's tables (kpack_tune.h) for `pkg`:
// deterministic, a pure function of the manifests.  A package without
// `tune:` sections gets tables that list no kernel.
std::string GenerateTuner(const Package& pkg, const std::vector<Specialization>& specs,
                          const CodegenOptions& options);

}  // namespace kpack
