// step.h - `kpack step FILE`: one Ninja edge's work, in its own process.
//
// `kpack build` writes one request file per unit (units/<name>.unit) and
// per fatbin (fatbins/<spec>.pack) and a build.ninja whose edges run
// `kpack step <request>`.  Tool command lines never pass through Ninja's
// shell: they live in the request, and the step runs them with argv
// (toolchain.h); the edge's command holds only kpack's own paths.  A
// Triton unit's step hands its request to its job slot's Triton compiler
// process (triton_server.h), which outlives the step but not the build;
// that process's output goes to its own log, never to the step's pipes,
// for which Ninja waits.
//
// A unit step writes, atomically and in this order:
//   units/<name>.result  JSON: run id, how it was obtained, seconds, the
//                        Triton metadata and the files the unit read
//   units/<name>.bin.d   a depfile for Ninja
//   units/<name>.bin     the cubin or PTX (the edge's output)
// and on failure units/<name>.error (the text CompileOne returned), exit 1.
// A batch of several specializations (plan.h) is one such step under the
// batch's name; when it fails, each member that fails alone also gets
// units/<member>.member-error (not <member>.error, which is the member's
// own step's when it is a batch of one, and which only that step replaces).
// A fatbin step writes fatbins/<stem>.fatbin and fatbins/<stem>.result
// (run id, CPU time), or fatbins/<stem>.error.
#pragma once

#include <string>

#include "compile.h"
#include "pack.h"

namespace kpack {

// Paths of a unit's step files.
struct UnitFiles {
  std::string request, result, depfile, binary, error, member_error;
};
UnitFiles UnitFilesFor(const std::string& work_dir, const std::string& unit_name);

// Request files.  Serialization is deterministic, so an unchanged unit's
// request is byte-identical and Ninja does not rebuild it.
std::string UnitRequestJson(const BatchJob& batch, const CompileEnv& env);
std::string FatbinRequestJson(const FatbinJob& job);

// A unit step's result, as `kpack build` reads it back.
struct UnitResult {
  std::string run;  // the KPACK_RUN_ID of the build that ran the step
  CompiledUnit unit;  // meta, deps, how, seconds (not the binary)
};
std::string UnitResultJson(const std::string& run, const CompiledUnit& unit);
std::optional<UnitResult> ParseUnitResult(const std::string& json);

// A fatbin step's result: the run it belongs to and fatbinary's CPU time.
struct FatbinResult {
  std::string run;
  double cpu = 0;
};
std::optional<FatbinResult> ParseFatbinResult(const std::string& json);

// The user + system CPU-seconds this process has used so far.
double SelfCpuSeconds();

// The environment variable through which `kpack build` tells its steps
// which run they belong to (Ninja passes its environment on).
inline constexpr const char* kRunIdVariable = "KPACK_RUN_ID";

// Runs the request at `path`.  Returns the exit code; errors go to the
// request's .error file (and a one-line pointer to it on stderr).
int RunStep(const std::string& path, ToolRunner& runner);

}  // namespace kpack
