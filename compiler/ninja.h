// ninja.h - the compile and pack passes as Ninja edges.
//
// Meson cannot know a package's units when it configures (kpack, which
// expands the manifests, is itself built by that configure), so kpack
// writes them as a Ninja file of its own and runs Ninja on it from inside
// Meson's custom target.  Every (specialization, arch) unit is one edge
// whose input is its request file (a batch of specializations, plan.h, is
// one edge), and every fatbin one edge over its batches, so Ninja provides
// what it is good at:
//  - incremental builds: a request file is rewritten only when its content
//    changes, and each unit's depfile (from nvcc's -MD) names the headers it
//    read, so adding a value compiles exactly the new units and editing a
//    template rebuilds exactly that kernel's units;
//  - a job pool (`units`) sized for memory, separate from Ninja's -j;
//  - the status line, and -k 0 so that one run reports every failure.
// Ninja's own files (.ninja_log, .ninja_deps) go to the work directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compile.h"
#include "pack.h"
#include "plan.h"

namespace kpack {

struct NinjaOptions {
  std::string ninja = "ninja";  // the program (a path, or looked up in PATH)
  std::string kpack;            // this executable, which runs each step
  int jobs = 1;                 // depth of the unit pool
  bool status = true;           // let Ninja print its progress
};

// Writes the requests and build.ninja under env.work_dir, runs Ninja, and
// reads back every unit (binary, metadata, deps, how it was obtained) and
// every fatbin.  Unit and fatbin failures are reported like the in-process
// passes report them.  Returns false on any failure.
bool BuildWithNinja(const Plan& plan, const CompileEnv& env, const PackOptions& pack, const NinjaOptions& options,
                    std::vector<CompiledUnit>& compiled, std::vector<PackedBlob>& blobs, CompileStats& stats,
                    Diagnostics& diag);

// The default depth of the unit pool: one job per core, but no more than
// fit in physical memory at `job_memory_mib` each (FlashInfer-style
// template-heavy units need several GiB; nvcc on the bundled kernels ~0.5).
int DefaultUnitJobs(int64_t job_memory_mib);
// Its rule, for a machine of `cores` and `memory_bytes` (0: unknown, then
// cores alone): min(cores, memory / job memory), at least 1.
int UnitJobsFor(int64_t cores, int64_t memory_bytes, int64_t job_memory_mib);

// The text of a Ninja file path or command, with Ninja's '$' escapes.
std::string NinjaEscapePath(const std::string& path);

}  // namespace kpack
