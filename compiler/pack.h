// pack.h - the pack pass: one fatbin per specialization, holding SASS for
// every arch of its kernel (and PTX only when the manifest asked).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compile.h"
#include "diagnostics.h"
#include "plan.h"
#include "toolchain.h"

namespace kpack {

struct PackedSpec {
  const Specialization* spec = nullptr;
  std::string fatbin;                 // the fatbin bytes
  std::vector<Arch> sass_archs;
  std::vector<Arch> ptx_archs;
  std::string build_mode;             // "release" or "debug"
};

struct PackOptions {
  std::string package;        // package name, for the fatbins' identifier
  std::string work_dir;
  std::string compress_mode;  // "" (fatbinary's default) or none/speed/balance/size
  Toolchain toolchain;
};

// One fatbinary run, self-contained (serialized by step.h).
struct FatbinJob {
  std::string label;               // "kernel 'k' specialization s"
  std::vector<std::string> argv;   // fatbinary and its options, without --create
  std::string output;              // the fatbin, written atomically
};

// The job packing units [begin, end) of `plan` (one specialization, in a
// row) from the image files `images` (one per unit).
FatbinJob MakeFatbinJob(const Plan& plan, size_t begin, size_t end, const std::vector<std::string>& images,
                        const PackOptions& options);

// Runs the job; writes job.output atomically and, when `bytes` is given,
// returns the fatbin there.  Returns "" or the error: a first line, then
// "  command: ..." and fatbinary's output.
std::string RunFatbinJob(const FatbinJob& job, ToolRunner& runner, std::string* bytes = nullptr);

// The specialization of `plan`'s units [begin, end), what they hold.
PackedSpec DescribePacked(const Plan& plan, size_t begin, size_t end);

// The identifier (fatbinary --ident) of a specialization's fatbin:
// "kpack:<package>:<kernel>:<specialization>:<build mode>".  It rides in
// every entry header, so `kpack inspect` names the blobs it finds in a
// libkernels.a and shows the mode the build recorded.
std::string FatbinIdent(const std::string& package, const Specialization& s, const std::string& build_mode);

struct FatbinIdentParts {
  std::string package, kernel, specialization, build_mode;
};
// Splits a FatbinIdent; nullopt for identifiers kpack did not write.
std::optional<FatbinIdentParts> ParseFatbinIdent(const std::string& ident);

// Packs the units of each specialization (consecutive in the plan) into a
// fatbin, in this process.  Returns false on errors.
bool PackFatbins(const Plan& plan, const std::vector<CompiledUnit>& compiled, const PackOptions& options,
                 ToolRunner& runner, std::vector<PackedSpec>& out, Diagnostics& diag);

// Reports an error text as RunFatbinJob or CompileOne return it: the first
// line as an error at `loc`, the rest as a note.
void ReportToolError(const SourceLoc& loc, const std::string& error, Diagnostics& diag);

}  // namespace kpack
