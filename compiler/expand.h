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

  // "T=f16, BLOCK=256", for messages and docs.
  std::string Describe() const;
};

// Binds the specialization's constexpr values for expression evaluation.
// The result refers to `s`, which must outlive it.
ExprBindings BindingsFor(const Specialization& s);

// Spelling of one value: "f16", "256", "true".
std::string ValueText(const Constexpr& c, const ConstexprValue& v);

// Expands every kernel of `pkg`, in manifest order.  Reports products over
// pkg.max_specializations, kernels whose every combination is excluded, and
// generated names that collide.  The result points into `pkg`.
std::vector<Specialization> Expand(const Package& pkg, Diagnostics& diag);

}  // namespace kpack
