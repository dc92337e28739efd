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
//   3. Per key param, the index of the nearest grid value in log space,
//      from integer thresholds: between neighbours a < b a value goes to b
//      from NearestThreshold(a, b) = ceil(sqrt(a * b)) on.  No floating
//      point: the comparisons are in the param's own C type.
//   4. The cell's ranking, fastest first: the first candidate whose `valid`
//      holds at the call (its C, with the candidate's and the combination's
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

// ceil(sqrt(a * b)) for 0 < a < b, exact (128-bit product): the least
// value that is nearer b than a in log space (v * v >= a * b).
int64_t NearestThreshold(int64_t a, int64_t b);

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
