// pack.h - the pack pass: one fatbin per fatbin group (plan.h): the SASS
// of every arch of a specialization, or of a batch of specializations
// compiled together (and PTX only when the manifest asked).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compile.h"
#include "cuda_instance.h"
#include "diagnostics.h"
#include "plan.h"
#include "toolchain.h"

namespace kpack {

struct PackedSpec {
  const Specialization* spec = nullptr;
  size_t blob = 0;                    // its fatbin: PackedBlob index (the group's)
  std::vector<Arch> sass_archs;
  std::vector<Arch> ptx_archs;
  std::string build_mode;             // "release" or "debug"
};

// One fatbin, as embedded: one per fatbin group, in plan order.
struct PackedBlob {
  std::string stem;    // fatbins/<stem>.fatbin
  std::string fatbin;  // the bytes
};

struct PackOptions {
  std::string package;        // package name, for the fatbins' identifier
  std::string work_dir;
  std::string compress_mode;  // "" (fatbinary's default) or none/speed/balance/size
  Toolchain toolchain;
};

// One fatbinary run, self-contained (serialized by step.h).
// A batch's member whose kernel symbol is known only from the cubin (a
// __global__ template's instance): the fatbin's identifier names it.
struct FatbinInstance {
  std::string spec;   // the specialization's name
  std::string entry;  // the template, "ns::k"
  std::vector<ExpectedArg> args;
};

struct FatbinJob {
  std::string label;               // "kernel 'k' specialization s"
  std::vector<std::string> argv;   // fatbinary and its options, without --create
  std::string output;              // the fatbin, written atomically
  // A batch of __global__ instances: before packing, each member's symbol
  // is read from `cubin` (the first cubin image) into the identifier.
  std::vector<FatbinInstance> instances;
  std::string cubin;
};

// The job packing fatbin group `group` of `plan` from the image files
// `images` (one per batch of the group, in order).
FatbinJob MakeFatbinJob(const Plan& plan, size_t group, const std::vector<std::string>& images,
                        const PackOptions& options);

// Runs the job; writes job.output atomically and, when `bytes` is given,
// returns the fatbin there.  Returns "" or the error: a first line, then
// "  command: ..." and fatbinary's output.
std::string RunFatbinJob(const FatbinJob& job, ToolRunner& runner, std::string* bytes = nullptr,
                         double* cpu_seconds = nullptr);

// What each specialization's fatbin holds, one per specialization in plan
// order.
std::vector<PackedSpec> DescribePacked(const Plan& plan);

// The identifier (fatbinary --ident) of a group's fatbin:
// "kpack:<package>:<kernel>:<specialization>:<build mode>"; for a batch,
// "<specialization>=<kernel symbol>" of each member joined by '+' (a
// __global__ instance's symbol is "?" until RunFatbinJob reads it); a
// Triton kernel's ends in ":triton-<version>" of the Triton that compiled
// it (`triton_version`, "" for a CUDA kernel).  It rides in every entry
// header, so `kpack inspect` names the blobs it finds in a libkernels.a and
// shows the mode and the Triton the build recorded.
std::string FatbinIdent(const std::string& package, const FatbinGroup& group, const std::string& build_mode,
                        const std::string& triton_version = "");

struct FatbinIdentParts {
  std::string package, kernel, specialization, build_mode;
  std::string triton_version;  // "" for a CUDA kernel, or one built before kpack recorded it
};
// Splits a FatbinIdent; nullopt for identifiers kpack did not write.
std::optional<FatbinIdentParts> ParseFatbinIdent(const std::string& ident);

// Packs each fatbin group in this process.  Returns false on errors.
bool PackFatbins(const Plan& plan, const std::vector<CompiledUnit>& compiled, const PackOptions& options,
                 ToolRunner& runner, std::vector<PackedBlob>& out, Diagnostics& diag);

// Reports an error text as RunFatbinJob or CompileOne return it: the first
// line as an error at `loc`, the rest as a note.
void ReportToolError(const SourceLoc& loc, const std::string& error, Diagnostics& diag);

}  // namespace kpack
