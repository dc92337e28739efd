#include "debug_guard.h"

#include <set>

namespace kpack {

std::optional<DebugFlag> FindDebugFlag(const std::vector<std::string>& flags) {
  // One-token spellings, then options whose value is the next token.
  static const std::set<std::string> kAlone = {
      "-G", "--device-debug", "-O0", "--optimize=0", "-g", "--debug", "-dopt=0", "--dopt=0",
      "-Xptxas=-O0", "--ptxas-options=-O0", "-Xptxas=-g", "--ptxas-options=-g"};
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string& f = flags[i];
    if (kAlone.count(f)) return DebugFlag{i, f};
    if (i + 1 >= flags.size()) continue;
    const std::string& next = flags[i + 1];
    if (((f == "-Xptxas" || f == "--ptxas-options") && (next == "-O0" || next == "-g")) ||
        ((f == "-O" || f == "--optimize") && next == "0") || ((f == "-dopt" || f == "--dopt") && next == "0"))
      return DebugFlag{i, f + " " + next};
  }
  return std::nullopt;
}

void MarkDebugKernel(Kernel& k) {
  if (k.language != Language::kCuda) return;  // Triton: only `debug: true`
  std::optional<DebugFlag> flag = FindDebugFlag(k.nvcc_flags);
  if (flag && !k.debug) {
    k.debug = true;
    k.debug_reason = "nvcc flag " + flag->text;
    k.debug_loc = flag->index < k.nvcc_flag_locs.size() ? k.nvcc_flag_locs[flag->index] : k.loc;
  } else if (!flag && k.debug) {
    k.nvcc_flags.push_back("-G");
    k.nvcc_flag_locs.push_back(k.debug_loc);
  }
}

void RefuseDebugKernels(const Package& pkg, Diagnostics& diag) {
  for (const Kernel& k : pkg.kernels) {
    if (!k.debug || k.allow_debug) continue;
    diag.Error(k.debug_loc, "kernel '" + k.name + "' is a debug build (" + k.debug_reason +
                                ") and this is a release build; debug kernels run many times slower. "
                                "Remove it, or add 'allow_debug: true' to the manifest to ship a debug kernel");
  }
}

bool CubinIsDebug(const CubinInfo& info) {
  if (info.has_debug_info) return true;
  // ptxas spells its options "-O 0" and "-g" in the note (nvcc 13.0).
  const std::string o = " " + info.tool_options + " ";
  return o.find(" -g ") != std::string::npos || o.find(" -O 0 ") != std::string::npos ||
         o.find(" -O0 ") != std::string::npos;
}

void CheckRecordedBuildModes(const Plan& plan, const std::vector<UnitFacts>& facts, Diagnostics& diag) {
  std::set<const Kernel*> reported;
  for (size_t i = 0; i < plan.units.size() && i < facts.size(); ++i) {
    const Kernel& k = *plan.units[i].spec->kernel;
    if (!facts[i].debug_code || k.debug || !reported.insert(&k).second) continue;
    diag.Error(k.loc, "specialization " + plan.units[i].spec->name + " (" + plan.units[i].arch.Name() +
                          ") is debug code (the cubin has device debug information or was built with ptxas -O0 "
                          "or -g), but kernel '" + k.name +
                          "' would be recorded as a release build; add 'debug: true' to its manifest");
  }
}

}  // namespace kpack
