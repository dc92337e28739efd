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
// fatbin.  Returns false on errors.
bool PackFatbins(const Plan& plan, const std::vector<CompiledUnit>& compiled, const PackOptions& options,
                 ToolRunner& runner, std::vector<PackedSpec>& out, Diagnostics& diag);

}  // namespace kpack
