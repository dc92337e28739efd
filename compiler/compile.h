// compile.h - the compile pass: one nvcc (or Triton) run per unit, through
// the verified unit cache (unit_cache.h).
//
// A unit is described by a UnitJob, which holds everything its compile
// needs and nothing that points into the plan, so the same job runs either
// here, on threads, or in a `kpack step` process that Ninja starts (one
// Ninja edge per unit, see ninja.h).
#pragma once

#include <string>
#include <vector>

#include "diagnostics.h"
#include "plan.h"
#include "toolchain.h"
#include "triton.h"

namespace kpack {

// One unit's compile, self-contained (serialized by step.h).
struct UnitJob {
  std::string name;        // "vector_add_f16_b256.sm_90": file stem in units/
  std::string key;         // direct cache key (plan.h)
  std::string config_key;  // flags + arch + toolkit, for the preprocessed key
  std::string source;      // the translation unit, or the Triton request JSON
  std::vector<std::string> flags;  // nvcc flags without input and output
  bool ptx = false;
  bool triton = false;
  std::string label;       // "kernel 'k' specialization s (B=1) for sm_90"
  std::vector<std::string> inputs;  // files read besides `source` (Triton's .py)
};

// Where a job runs: the same for every unit of a build.
struct CompileEnv {
  std::string work_dir;   // units/: translation units and outputs
  std::string cache_dir;  // cache entries (may be shared between builds)
  Toolchain toolchain;
  TritonTools triton;
  // Runs nvcc through this program (ccache, sccache or a path); kpack then
  // passes `-c` as well, which these launchers need to cache a -cubin run.
  std::string launcher;
};

struct CompileOptions {
  CompileEnv env;
  int jobs = 1;  // parallel compiles (the in-process executor)
};

struct CompiledUnit {
  std::string binary;             // cubin bytes or PTX text
  std::string meta;               // Triton units: triton_helper.py's metadata JSON
  std::vector<std::string> deps;  // every file the unit read
  // How the result was obtained, for counts and the scale benchmark.
  enum class How { kCompiled, kDirectHit, kPreprocessedHit, kUpToDate } how = How::kCompiled;
  double seconds = 0;             // wall time of the unit's step
};

struct CompileStats {
  int compiled = 0;
  int cached = 0;       // direct or preprocessed cache hits
  int up_to_date = 0;   // Ninja did not need to run the unit at all
  double schedule_ms = 0;      // writing the requests and the Ninja file
  double unit_seconds = 0;     // sum of the steps that ran (the scale bench)
  std::string Summary(const std::string& units) const;  // units: CountUnits(plan)
};

// Job for unit `u` of the plan.
UnitJob MakeUnitJob(const Unit& u);

// Compiles one job (cache first).  Returns "" or the error: a first line
// "nvcc failed (...) for <label>", then "  command: ...", then the output.
std::string CompileOne(const UnitJob& job, const CompileEnv& env, ToolRunner& runner, CompiledUnit& out);

// Compiles `plan.units` on `options.jobs` threads (result i belongs to unit
// i) and reports failures.  Returns false on any failure.
bool CompileUnits(const Plan& plan, const CompileOptions& options, ToolRunner& runner,
                  std::vector<CompiledUnit>& out, CompileStats& stats, Diagnostics& diag);

// Reports per-unit errors (as CompileOne returns them; "" for success) at
// each kernel's manifest position, in plan order, showing one copy of the
// tool output that several units of a kernel share.  Returns false if any.
bool ReportUnitErrors(const Plan& plan, const std::vector<std::string>& errors, Diagnostics& diag);

// Parses a Make-style depfile into its prerequisites.
std::vector<std::string> ParseDepfile(const std::string& text);

}  // namespace kpack
