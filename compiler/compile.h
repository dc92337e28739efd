// compile.h - the compile pass: nvcc for every unit, in parallel, through a
// verified content-addressed cache.
//
// A cache entry is <key>.bin (the cubin or PTX) plus <key>.deps, which
// records the hash of the .bin and of every file nvcc read (from its -MD
// depfile).  An entry is used only if every recorded hash still matches, so
// editing a header rebuilds exactly the units that include it, and a
// truncated or corrupted entry is rebuilt rather than trusted.
#pragma once

#include <string>
#include <vector>

#include "diagnostics.h"
#include "plan.h"
#include "toolchain.h"
#include "triton.h"

namespace kpack {

struct CompileOptions {
  std::string work_dir;   // translation units and temporaries
  std::string cache_dir;  // cache entries (may be shared between builds)
  int jobs = 1;           // parallel nvcc processes
  Toolchain toolchain;
  TritonTools triton;     // for Triton units
};

struct CompiledUnit {
  std::string binary;             // cubin bytes or PTX text
  std::string meta;               // Triton units: triton_helper.py's metadata JSON
  std::vector<std::string> deps;  // every file the unit read
  bool from_cache = false;
};

struct CompileStats {
  int compiled = 0;
  int cached = 0;
};

// Compiles `plan.units` (result i belongs to unit i).  Each failure is
// reported with the kernel's manifest position, the specialization, the
// arch, the command and nvcc's output.  Returns false on any failure.
bool CompileUnits(const Plan& plan, const CompileOptions& options, ToolRunner& runner,
                  std::vector<CompiledUnit>& out, CompileStats& stats, Diagnostics& diag);

// Parses a Make-style depfile into its prerequisites.
std::vector<std::string> ParseDepfile(const std::string& text);

}  // namespace kpack
