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
  // The aligned variant of specialization `fallback` (an index into Expand's
  // result; same name, launcher and symbol): built with every
  // `divisibility: auto` param hinted, launched when the values allow it.
  bool aligned = false;
  size_t fallback = 0;

  // "T=f16, BLOCK=256" ("...; aligned variant"), for messages and docs.
  std::string Describe() const;
  // The name of its files (units, fatbin): name, or name + ".aligned".
  std::string Stem() const;
  // The divisibility hint `p` gets in this build: 16 or 0 (an auto param
  // is hinted in the aligned variant only).
  int Divisibility(const Param& p) const;
};

// Binds the specialization's constexpr values for expression evaluation.
// The result refers to `s`, which must outlive it.
ExprBindings BindingsFor(const Specialization& s);

// Spelling of one value: "f16", "256", "true".
std::string ValueText(const Constexpr& c, const ConstexprValue& v);

// Expands every kernel of `pkg`, in manifest order, then appends the aligned
// variant of each specialization of a kernel with `divisibility: auto`
// params (one fully hinted variant, not one per subset: see
// docs/manifest.md).  Variants come last so that specialization i keeps
// fatbin i whatever the variants.  Reports products over
// pkg.max_specializations, kernels whose every combination is excluded, and
// generated names that collide.  The result points into `pkg`.
std::vector<Specialization> Expand(const Package& pkg, Diagnostics& diag);

}  // namespace kpack
