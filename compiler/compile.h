// compile.h - the compile pass: one nvcc run per batch of units (plan.h),
// one Triton compile per unit, through the verified unit cache
// (unit_cache.h).
//
// A compile is described by a UnitJob (a batch: a BatchJob, its own job and
// its members'), which holds everything it needs and nothing that points
// into the plan, so the same job runs either here, on threads, or in a
// `kpack step` process that Ninja starts (one Ninja edge per batch, see
// ninja.h).
//
// A Triton unit's compile is a request to triton_helper.py, answered by
// the compiler process of a job slot that the build keeps for all its
// Triton units, so Triton is imported once per slot rather than per unit
// (triton_server.h; `kpack build` stops these processes when its compile
// ends).  KPACK_TRITON_SERVER=0 runs `triton_helper.py compile` per unit
// instead, through the ToolRunner; outputs and error texts are the same.
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

// What a unit's compile cost in CPU time, for `kpack build --perf`
// (user + system seconds; 0 for a cache hit or an up-to-date unit).
struct UnitCost {
  double tool_cpu = 0;     // the tool processes run for the unit: nvcc and
                           // its children, or the Triton compiler's CPU
                           // for this request (start-up excluded)
  double compile_cpu = 0;  // Triton units: the part inside Triton's own
                           // compile call (the rest of tool_cpu is the
                           // helper's per-unit overhead)
  double startup_cpu = 0;  // a Triton compiler process this unit started:
                           // its start-up (Python, importing Triton)
  double step_cpu = 0;     // the `kpack step` process itself
  int processes = 0;       // tool processes started for the unit
};

struct CompiledUnit {
  std::string binary;             // cubin bytes or PTX text
  std::string meta;               // Triton units: triton_helper.py's metadata JSON
  std::vector<std::string> deps;  // every file the unit read
  // How the result was obtained, for counts and the scale benchmark.
  enum class How { kCompiled, kDirectHit, kPreprocessedHit, kUpToDate } how = How::kCompiled;
  double seconds = 0;             // wall time of the unit's step
  UnitCost cost;
};

struct CompileStats {
  int compiled = 0;
  int cached = 0;       // direct or preprocessed cache hits
  int up_to_date = 0;   // Ninja did not need to run the unit at all
  int batches_compiled = 0, batches_cached = 0, batches_up_to_date = 0;  // batches of several
  double schedule_ms = 0;      // writing the requests and the Ninja file
  double unit_seconds = 0;     // sum of the steps that ran (the scale bench)
  // CPU-seconds by kind of work, for --perf.
  struct Kind {
    int runs = 0;       // compiles (nvcc runs, Triton units, fatbinary runs)
    int units = 0;      // units they compiled
    int processes = 0;  // processes started for them
    double cpu = 0, compile_cpu = 0, startup_cpu = 0;
  } nvcc, triton, fatbinary;
  double step_cpu = 0;  // `kpack step` processes themselves
  int steps = 0;
  void AddCompiled(const Batch& b, const CompiledUnit& c);  // counts a batch that ran now
  std::string Summary(const std::string& units) const;  // units: CountUnits(plan)
  std::string CpuSummary() const;                       // the --perf lines
};

// Job for unit `u` of the plan.
UnitJob MakeUnitJob(const Unit& u);

// One batch's compile (plan.h), self-contained like a UnitJob.
struct BatchJob {
  UnitJob job;                   // the batch's own compile; a batch of one: its unit's job
  std::vector<UnitJob> members;  // each member alone, run only when the batch fails;
                                 // empty for a batch of one
};
BatchJob MakeBatchJob(const Plan& plan, const Batch& b);

// Compiles a batch (cache first).  When a batch of several fails, each
// member is compiled alone, so that one bad specialization is reported as
// itself and the others' errors are not hidden behind it: member_errors[i]
// is member i's error, "" where it compiled alone.  Returns "" or the
// batch's error (when every member compiled alone, saying so).
std::string CompileBatch(const BatchJob& batch, const CompileEnv& env, ToolRunner& runner, CompiledUnit& out,
                         std::vector<std::string>& member_errors);

// Each unit's error from its batch's: its own where it has one, else the
// batch's (every member of a batch that failed as a whole).
void SpreadBatchErrors(const Batch& b, const std::string& batch_error, const std::vector<std::string>& member_errors,
                       std::vector<std::string>& unit_errors);

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
