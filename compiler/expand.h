// expand.h - the expand pass: each kernel's cartesian product of constexpr
// values, minus exclusions, as named specializations.
#pragma once

#include <string>
#include <vector>

#include "diagnostics.h"
#include "model.h"

namespace kpack {

// One build of a kernel: a value for every constexpr, and which of the
// JIT-style variants it is.  The API names a specialization by the values
// of the constexprs callers choose (Constexpr::InApi); the builds of one
// specialization differ in computed constexprs (rules, heuristics) and
// variants, and its typed launcher picks among them per call.
struct Specialization {
  const Kernel* kernel = nullptr;
  std::vector<ConstexprValue> values;  // one per constexpr, in order
  std::string name;      // "vector_add_f16_b256": the API's name, shared by every build
  std::string launcher;  // "<prefix>_vector_add_f16_b256"
  std::string symbol;    // "kpack_<prefix>_vector_add_f16_b256", in the cubin
  // The API's build of a specialization (`api`) is the first of its
  // group; `group` is its index for every build of the group.  A build
  // with computed constexprs has their name parts in `computed`
  // ("isvarlen_nohasscale").  A variant is launched when the values allow
  // it, as Triton's JIT specializes; `base` is the build it varies:
  //   aligned: every `divisibility: auto` param hinted (values multiples of 16);
  //   narrow:  every `width: auto` param built as i32 (values that fit).
  bool api = true;
  size_t group = 0;
  std::string computed;
  bool aligned = false;
  bool narrow = false;
  size_t base = 0;

  bool IsVariant() const { return aligned || narrow; }
  // The variant's index among its base's builds: 1 for aligned, 2 for
  // narrow, 3 for both, 0 for the base itself.
  unsigned VariantIndex() const { return (aligned ? 1u : 0u) | (narrow ? 2u : 0u); }
  // "aligned", "i32" or "aligned i32"; "" for the base itself.
  std::string VariantName() const;
  // "IS_VARLEN=true, aligned variant": what sets this build apart from the
  // API's build of its specialization; "" for the API's build.
  std::string BuildLabel() const;
  // "softmax_f16 (aligned i32 variant)", or the name alone for the API's
  // build: how labels and runtime messages name a build.
  std::string NameWithVariant() const;
  // "T=f16, BLOCK=256" ("...; aligned variant"), for messages and docs.
  std::string Describe() const;
  // The name of its files (units, fatbin): name, then ".<computed>",
  // ".aligned", ".i32" as they apply.
  std::string Stem() const;
  // The divisibility hint `p` gets in this build: 16 or 0 (an auto param
  // is hinted in the aligned variant only).
  int Divisibility(const Param& p) const;
  // The type `p` has in this build: i32 for a `width: auto` param of a
  // narrow variant, else the manifest's.
  ParamType TypeOf(const Param& p) const;
};

// Binds the specialization's constexpr values for expression evaluation.
// The result refers to `s`, which must outlive it.
ExprBindings BindingsFor(const Specialization& s);

// The same, for code that runs before the build is chosen (a typed
// launcher, a tuner's `valid`): computed constexprs are the launcher's
// variables, not the build's constants.
ExprBindings LauncherBindings(const Specialization& s);

// Spelling of one value: "f16", "256", "true", "1e-06", "mean".
std::string ValueText(const Constexpr& c, const ConstexprValue& v);

// Expands every kernel of `pkg`, in manifest order: the product of its
// constexprs' values, minus exclusions and combinations its autotune configs
// do not list.  The API's builds of every specialization come first, then
// the builds of other computed values, then the variants of each of those,
// in VariantIndex order, as the kernel's `variants:` asks (jit: the fully
// specialized one; each: aligned, narrow and both).  So specialization i
// keeps fatbin i whatever the builds behind it.  Reports products over
// pkg.max_specializations, kernels whose every combination is excluded, and
// generated names that collide.  The result points into `pkg`.
std::vector<Specialization> Expand(const Package& pkg, Diagnostics& diag);

}  // namespace kpack
