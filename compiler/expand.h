// expand.h - the expand pass: each kernel's cartesian product of constexpr
// values, minus exclusions, as named specializations.
#pragma once

#include <string>
#include <vector>

#include "diagnostics.h"
#include "model.h"

namespace kpack {

struct Specialization {
  const Kernel* kernel = nullptr;
  std::vector<ConstexprValue> values;  // one per constexpr, in order
  std::string name;      // "vector_add_f16_b256"
  std::string launcher;  // "<prefix>_vector_add_f16_b256"
  std::string symbol;    // "kpack_<prefix>_vector_add_f16_b256", in the cubin
  // A variant of specialization `base` (an index into Expand's result;
  // same name, launcher and symbol), launched when the values allow it, as
  // Triton's JIT specializes:
  //   aligned: every `divisibility: auto` param hinted (values multiples of 16);
  //   narrow:  every `width: auto` param built as i32 (values that fit).
  // A kernel with both kinds of params has three variants per specialization.
  bool aligned = false;
  bool narrow = false;
  size_t base = 0;

  bool IsVariant() const { return aligned || narrow; }
  // The variant's index among its specialization's builds: 1 for aligned,
  // 2 for narrow, 3 for both, 0 for the specialization itself.
  unsigned VariantIndex() const { return (aligned ? 1u : 0u) | (narrow ? 2u : 0u); }
  // "aligned", "i32" or "aligned i32"; "" for the specialization itself.
  std::string VariantName() const;
  // "softmax_f16 (aligned i32 variant)", or the name alone for the
  // specialization itself: how labels and runtime messages name a build.
  std::string NameWithVariant() const;
  // "T=f16, BLOCK=256" ("...; aligned variant"), for messages and docs.
  std::string Describe() const;
  // The name of its files (units, fatbin): name, or name + ".aligned",
  // ".i32", ".aligned.i32".
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

// Spelling of one value: "f16", "256", "true".
std::string ValueText(const Constexpr& c, const ConstexprValue& v);

// Expands every kernel of `pkg`, in manifest order, then appends the
// variants of each specialization, in that order, in VariantIndex order: the
// aligned one of a kernel with `divisibility: auto` params (one fully hinted
// variant, not one per subset: see docs/manifest.md), the narrow one of a
// kernel with `width: auto` params, and both where it has both.  Variants
// come last so that specialization i keeps fatbin i whatever the variants.  Reports products over
// pkg.max_specializations, kernels whose every combination is excluded, and
// generated names that collide.  The result points into `pkg`.
std::vector<Specialization> Expand(const Package& pkg, Diagnostics& diag);

}  // namespace kpack
