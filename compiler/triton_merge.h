// triton_merge.h - a Triton kernel's manifest completed by its source.
//
// What the source says (triton_source.h) and the manifest's Triton keys are
// merged into the Kernel before the whole-kernel checks:
//   - the manifest's params and constexprs must be the kernel's (positions
//     in the manifest);
//   - autotune configs become axes: each kwargs field and option that the
//     configs set, restricted to the combinations the configs list
//     (ConfigSet); the manifest's autotune: configs: replaces them and
//     add: extends them; values the manifest lists restrict them;
//   - heuristics become computed constexprs whose rule is the translated
//     lambda, unless the manifest gives a rule (or rule: none);
//   - tl.constexpr parameters the manifest leaves out take the source's
//     defaults (triton_helper.py passes them);
//   - params the manifest does not mark get the JIT's specialization
//     (variants: jit): pointers and integers hinted /16, i64 narrowed to i32,
//     except do_not_specialize params and launch-only ones.
// Every problem is an error at the manifest node or the Python source line
// that causes it, naming the manifest key that resolves it.
#pragma once

#include "kernel_reader.h"
#include "model.h"
#include "triton_source.h"
#include "yaml_reader.h"

namespace kpack {

void MergeTritonSource(FileReader& r, const TritonSourceInfo& source, const PendingTritonKeys& keys, Kernel& k);

}  // namespace kpack
