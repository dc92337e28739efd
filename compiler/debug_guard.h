// debug_guard.h - debug kernels, and the rule that a release build refuses
// them unless a manifest says it ships them on purpose.
//
// A debug kernel (nvcc -G, optimization off, Triton's debug=True) runs many
// times slower than its release build and looks the same from the C API, so
// one that slips into a release is a silent performance bug.  Every
// specialization records its build mode (the header, the launcher's
// kpack_spec_info, <prefix>_build_info(), the inventory and `kpack inspect`
// all show it), and `kpack build` refuses a debug kernel unless the kernel or
// package manifest says `allow_debug: true` or the build is a development
// build (--allow-debug-kernels; Meson passes it when -Ddebug=true).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "check.h"
#include "cubin.h"
#include "diagnostics.h"
#include "model.h"
#include "plan.h"

namespace kpack {

struct DebugFlag {
  size_t index = 0;  // in the flag list
  std::string text;  // as written: "-G", "-Xptxas -O0"
};

// The first nvcc flag that makes device code a debug build: -G,
// --device-debug, -O0 (and --optimize 0), -g, --debug, -dopt=0 and ptxas -O0
// (-Xptxas -O0, --ptxas-options=-O0).  -lineinfo is not one: it only adds
// line tables.  nullopt when none.
std::optional<DebugFlag> FindDebugFlag(const std::vector<std::string>& flags);

// Called by the load pass once a kernel manifest is read: sets k.debug,
// k.debug_reason and k.debug_loc from `debug: true` or a debug nvcc flag
// (CUDA only: nvcc flags do not apply to Triton).  `debug: true` on a CUDA
// kernel without a debug flag adds -G.
void MarkDebugKernel(Kernel& k);

// Release builds: one error per debug kernel that no manifest allows, at
// the flag or key that made it a debug kernel.
void RefuseDebugKernels(const Package& pkg, Diagnostics& diag);

// Whether a cubin shows debug code: device debug information (-G), or a
// ptxas command line (.note.nv.tkinfo) with -g or -O0.
bool CubinIsDebug(const CubinInfo& info);

// After the check pass: a cubin that is debug code although its kernel's
// manifest does not make it a debug kernel (a flag kpack does not know, a
// compiler default) would be recorded as release; that is an error.
void CheckRecordedBuildModes(const Plan& plan, const std::vector<UnitFacts>& facts, Diagnostics& diag);

}  // namespace kpack
