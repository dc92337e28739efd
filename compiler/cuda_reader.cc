#include "cuda_reader.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "cuda_entry.h"
#include "flag_policy.h"
#include "manifest.h"

namespace kpack {
namespace {

namespace fs = std::filesystem;

std::string JoinDirs(const std::vector<std::string>& dirs) {
  std::string out;
  for (const std::string& d : dirs) out += (out.empty() ? "" : ", ") + d;
  return out;
}

}  // namespace

void ReadEntry(FileReader& r, const YAML::Node& v, Kernel& k) {
  if (k.language == Language::kTriton) {
    if (auto s = r.Identifier(v, "entry")) k.entry = *s;
    return;
  }
  std::optional<std::string> s = r.String(v, "entry");
  if (!s) return;
  if (!IsQualifiedCppName(*s)) {
    r.Error(v, "entry '" + *s + "' is not a C++ name (identifiers joined by '::', as in flashinfer::norm::RMSNormKernel)");
    return;
  }
  k.entry = s->rfind("::", 0) == 0 ? s->substr(2) : *s;
}

void ResolveIncludedSource(FileReader& r, const YAML::Node& v, const std::string& text, Kernel& k) {
  std::string inner = text.substr(1, text.size() - 2);
  if (k.language == Language::kTriton) {
    r.Error(v, "source '" + text + "': a Triton kernel's source is a file (or a module:), not a header on the include path");
    return;
  }
  fs::path relative(inner);
  bool climbs = std::any_of(relative.begin(), relative.end(), [](const fs::path& part) { return part == ".."; });
  if (inner.empty() || relative.is_absolute() || climbs) {
    r.Error(v, "source '" + text + "' must name a relative path below an include directory, without '..'");
    return;
  }
  if (std::string e = IncludePathProblem("source path '" + inner + "'", inner); !e.empty()) {
    r.Error(v, e);
    return;
  }
  if (k.include_dirs.empty()) {
    r.Error(v, "source '" + text + "' is looked for on the include directories, but the build gives none "
               "(kpack build -I DIR, or include_dirs: in the package file)");
    return;
  }
  for (const std::string& dir : k.include_dirs) {
    std::string candidate = (fs::path(dir) / relative).generic_string();
    if (!InputExists(candidate, r.options())) continue;
    k.source_path = candidate;
    k.source_name = text;
    k.source_on_include_path = true;
    return;
  }
  r.Error(v, "source '" + text + "' not found on the include directories (looked in " + JoinDirs(k.include_dirs) + ")");
}

void ReadCppNameValues(FileReader& r, const YAML::Node& values, Constexpr& c) {
  std::map<std::string, std::string> parts;  // name part -> the value that has it
  for (const YAML::Node& item : values) {
    std::optional<std::string> s = r.String(item, "a value of cpp constexpr '" + c.name + "'");
    if (!s) continue;
    if (!IsQualifiedCppName(*s)) {
      r.Error(item, "value '" + *s + "' of '" + c.name + "' is not a C++ name (identifiers joined by '::', "
                    "naming a type, a function or an enumerator)");
      continue;
    }
    std::string part = LastNameComponent(*s);
    auto [it, fresh] = parts.emplace(part, *s);
    if (!fresh) {
      r.Error(item, it->second == *s ? "duplicate value in '" + c.name + "'"
                                     : "values '" + it->second + "' and '" + *s + "' of '" + c.name +
                                           "' end in the same name '" + part +
                                           "', which names the specialization; give one a distinct last name");
      continue;
    }
    ConstexprValue value;
    value.loc = r.Loc(item);
    value.text = *s;
    c.values.push_back(value);
  }
}

void ReadLaunchAttribute(FileReader& r, const std::string& key, const YAML::Node& key_node, const YAML::Node& v,
                         Kernel& k) {
  if (key == "pdl") {
    k.launch.pdl_loc = r.Loc(key_node);
    if (v.IsScalar() && v.Tag() != "!" && v.Scalar() == "per_call") {
      k.launch.pdl = Pdl::kPerCall;
    } else if (v.IsScalar() && v.Tag() != "!" && (v.Scalar() == "true" || v.Scalar() == "false")) {
      k.launch.pdl = v.Scalar() == "true" ? Pdl::kOn : Pdl::kOff;
    } else {
      r.Error(v, "pdl must be true, false or per_call");
    }
  } else if (key == "cooperative") {
    k.launch.cooperative_loc = r.Loc(key_node);
    if (auto b = r.Bool(v, "cooperative")) k.launch.cooperative = *b;
  }
}

void CheckCudaEntry(FileReader& r, Kernel& k) {
  if (k.language == Language::kTriton) {
    if (k.launch.cluster_loc.line > 0)
      r.diag().Error(k.launch.cluster_loc, "cluster applies to CUDA kernels only (Triton sets its own with num_ctas)");
    if (k.launch.cooperative_loc.line > 0)
      r.diag().Error(k.launch.cooperative_loc, "cooperative applies to CUDA kernels only");
    return;
  }
  // Clusters exist from sm_90 on: a launch on an older arch would fail in
  // the driver every time.
  if (k.launch.cluster_loc.line > 0)
    for (const Arch& a : k.archs)
      if (a.number < 90) {
        r.diag().Error(k.launch.cluster_loc, "cluster needs sm_90 or newer, but the kernel is built for " + a.Name());
        break;
      }
  // In-memory manifests (tests, the fuzzer) have no sources to scan.
  if (r.options().files || k.source_path.empty()) return;
  EntryScan scan = ScanCudaEntry(k.source_path, k.entry, k.include_dirs);
  if (scan.form != EntryForm::kGlobal) return;
  k.global_entry = true;
  k.global_entry_at = scan.file + ":" + std::to_string(scan.line) + ":" + std::to_string(scan.column);
  if (k.launch.launch_bounds_loc.line > 0)
    r.diag().Error(k.launch.launch_bounds_loc,
                   "launch_bounds applies to __device__ entries; '" + k.entry + "' is a __global__ template (" +
                       k.global_entry_at + "), whose own __launch_bounds__, if any, nvcc applies");
}

}  // namespace kpack
