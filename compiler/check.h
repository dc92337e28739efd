// check.h - the check pass: every cubin holds the expected kernel, for the
// expected arch, with exactly the parameter layout the launcher will pass.
//
// The launcher hands cuLaunchKernel one pointer per parameter and the driver
// copies each to the offset the cubin's .nv.info EIATTR_KPARAM_INFO gives.
// If the kernel's real signature differs from the manifest (a template
// taking int where the manifest says i64), the launch would silently pass
// garbage; the check turns that into a build error at the manifest line.
#pragma once

#include <string>
#include <vector>

#include "compile.h"
#include "cuda_instance.h"
#include "diagnostics.h"
#include "plan.h"

namespace kpack {

// What the check learned about one unit's kernel, for the inventory.
struct UnitFacts {
  uint32_t registers = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t local_bytes = 0;
  uint32_t max_threads = 0;
  uint32_t cluster_dims[3] = {0, 0, 0};  // compiled in (__cluster_dims__)
  bool has_debug_info = false;
  bool debug_code = false;  // CubinIsDebug (debug_guard.h)
};

// The C ABI layout of the manifest's parameters: {offset, size} each,
// followed by `hidden_pointers` pointer parameters (Triton's scratch).
std::vector<std::pair<uint32_t, uint32_t>> ExpectedLayout(const Specialization& s, uint32_t hidden_pointers = 0);

// The template arguments `s` instantiates its __global__ entry with, as
// FindInstance compares them.
std::vector<ExpectedArg> ExpectedArgs(const Specialization& s);

// Sets the symbol of each specialization of a __global__ entry: the cubin
// kernel that demangles to the instance kpack asked for (FindInstance in
// cuda_entry.h), the same in every arch.  Returns false on errors.
bool ResolveEntrySymbols(const Plan& plan, const std::vector<CompiledUnit>& compiled,
                         std::vector<Specialization>& specs, Diagnostics& diag);

// Checks every cubin unit (PTX units are skipped).  Returns false on errors.
bool CheckUnits(const Plan& plan, const std::vector<CompiledUnit>& compiled, std::vector<UnitFacts>& facts,
                Diagnostics& diag);

}  // namespace kpack
