// pack.h - the pack pass: one fatbin per specialization, holding SASS for
// every arch of its kernel (and PTX only when the manifest asked).
#pragma once

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
  std::string work_dir;
  std::string compress_mode;  // "" (fatbinary's default) or none/speed/balance/size
  Toolchain toolchain;
};

// Packs the units of each specialization (consecutive in the plan) into a
// fatbin.  Returns false on errors.
bool PackFatbins(const Plan& plan, const std::vector<CompiledUnit>& compiled, const PackOptions& options,
                 ToolRunner& runner, std::vector<PackedSpec>& out, Diagnostics& diag);

}  // namespace kpack
