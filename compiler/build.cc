#include "build.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <filesystem>
#include <ostream>
#include <set>
#include <thread>

#include "check.h"
#include "codegen.h"
#include "compile.h"
#include "expand.h"
#include "fs_util.h"
#include "manifest.h"
#include "pack.h"
#include "plan.h"
#include "triton.h"

namespace kpack {
namespace {

namespace fs = std::filesystem;

// Times one pass; prints "kpack: <pass> <ms> ms" under --perf.
class PassTimer {
 public:
  PassTimer(const char* name, bool enabled, std::ostream& out)
      : name_(name), enabled_(enabled), out_(out), start_(std::chrono::steady_clock::now()) {}
  ~PassTimer() {
    if (!enabled_) return;
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    out_ << "kpack: " << name_ << " " << static_cast<int64_t>(ms * 1000) / 1000.0 << " ms\n";
  }

 private:
  const char* name_;
  bool enabled_;
  std::ostream& out_;
  std::chrono::steady_clock::time_point start_;
};

// Ends a pass: prints what the pass reported and says whether to go on.
bool Checkpoint(Diagnostics& diag, std::ostream& err) {
  err << diag.Text();
  bool ok = !diag.HasErrors();
  diag = Diagnostics();
  return ok;
}

std::string Label(const BuildOptions& o) {
  std::error_code ec;
  fs::path relative = fs::relative(fs::absolute(o.package_path, ec), fs::absolute(o.root, ec), ec);
  if (ec || relative.empty()) return fs::path(o.package_path).filename().generic_string();
  return relative.generic_string();
}

std::string Basename(const std::string& path) { return fs::path(path).filename().generic_string(); }

std::string EscapeDep(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

std::string Depfile(const BuildOptions& o, const Package& pkg, const std::vector<CompiledUnit>& units) {
  std::set<std::string> deps = {pkg.manifest_path};
  for (const Kernel& k : pkg.kernels) {
    deps.insert(k.manifest_path);
    deps.insert(k.source_path);
  }
  for (const CompiledUnit& u : units) deps.insert(u.deps.begin(), u.deps.end());
  std::string out = EscapeDep(o.header_out) + ":";
  for (const std::string& d : deps) out += " \\\n  " + EscapeDep(d);
  return out + "\n";
}

// What Triton decided for each Triton specialization, over its archs: the
// largest shared memory (a launch may pass more than a cubin needs, never
// less); num_warps is the same for every arch.  Check already parsed all.
std::map<const Specialization*, TritonLaunch> TritonLaunches(const Plan& plan,
                                                              const std::vector<CompiledUnit>& compiled) {
  std::map<const Specialization*, TritonLaunch> out;
  for (size_t i = 0; i < plan.units.size(); ++i) {
    if (!plan.units[i].triton) continue;
    std::string error;
    std::optional<TritonMeta> meta = ParseTritonMeta(compiled[i].meta, &error);
    if (!meta) continue;
    TritonLaunch& t = out[plan.units[i].spec];
    t.shared = std::max(t.shared, meta->shared);
    t.num_warps = meta->num_warps;
    t.hidden_pointer_params = meta->hidden_pointer_params;
  }
  return out;
}

std::string WriteAll(const std::vector<std::pair<std::string, std::string>>& files) {
  for (const auto& [path, content] : files)
    if (std::string err = WriteFileAtomic(path, content); !err.empty()) return err;
  return "";
}

}  // namespace

int RunBuild(const BuildOptions& o, ToolRunner& runner, std::ostream& err) {
  Diagnostics diag;

  // load: parse the package file and every kernel manifest.
  std::optional<Package> pkg;
  {
    PassTimer t("load", o.perf, err);
    LoadOptions load;
    load.project_root = o.root;
    load.allow_outside_root = o.allow_outside_root;
    std::string archs = o.archs;
    for (size_t start = 0; !archs.empty() && start <= archs.size();) {
      size_t comma = std::min(archs.find(',', start), archs.size());
      std::string name = archs.substr(start, comma - start);
      if (std::optional<Arch> a = ParseArch(name)) load.archs_override.push_back(*a);
      else diag.Error("unknown arch '" + name + "' in --archs (CUDA 13 supports: " + SupportedArchList() + ")");
      start = comma + 1;
    }
    if (!diag.HasErrors()) pkg = LoadPackage(o.package_path, load, diag);
  }
  if (!Checkpoint(diag, err)) return 1;

  // expand: the cartesian product of constexpr values, minus exclusions.
  std::vector<Specialization> specs;
  {
    PassTimer t("expand", o.perf, err);
    specs = Expand(*pkg, diag);
  }
  if (!Checkpoint(diag, err)) return 1;

  CodegenOptions gen{Label(o), Basename(o.header_out)};
  if (o.header_only) {
    PassTimer t("generate", o.perf, err);
    if (std::string e = WriteAll({{o.header_out, GenerateHeader(*pkg, specs, gen)}}); !e.empty()) {
      err << "error: " << e << "\n";
      return 1;
    }
    return 0;
  }

  // plan: one unit per (specialization, arch), keyed by content.
  Plan plan;
  Toolchain toolchain{o.cuda_root + "/bin/nvcc", o.cuda_root + "/bin/fatbinary", ""};
  TritonTools triton{o.python, o.triton_helper, ""};
  {
    PassTimer t("plan", o.perf, err);
    if (std::string e = ProbeToolchain(runner, toolchain); !e.empty()) diag.Error(e);
    for (const Kernel& k : pkg->kernels) {
      if (k.language != Language::kTriton) continue;
      if (std::string e = ProbeTriton(runner, triton); !e.empty()) diag.Error(k.loc, e);
      break;
    }
    if (!diag.HasErrors()) plan = MakePlan(specs, ToolVersions{toolchain.version, triton.version});
  }
  if (!Checkpoint(diag, err)) return 1;

  // compile: nvcc for every unit not in the cache.
  std::vector<CompiledUnit> compiled;
  CompileStats stats;
  {
    PassTimer t("compile", o.perf, err);
    CompileOptions co{o.work_dir, o.cache_dir.empty() ? o.work_dir + "/cache" : o.cache_dir,
                      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())),
                      toolchain, triton};
    CompileUnits(plan, co, runner, compiled, stats, diag);
  }
  if (o.verbose || o.perf)
    err << "kpack: " << plan.units.size() << " units: " << stats.compiled << " compiled, " << stats.cached
        << " from cache\n";
  if (!Checkpoint(diag, err)) return 1;

  // check: each cubin has the kernel, for the arch, with the launcher's layout.
  std::vector<UnitFacts> facts;
  {
    PassTimer t("check", o.perf, err);
    CheckUnits(plan, compiled, facts, diag);
  }
  if (!Checkpoint(diag, err)) return 1;

  // pack: one fatbin per specialization with every arch's SASS.
  std::vector<PackedSpec> packed;
  {
    PassTimer t("pack", o.perf, err);
    PackFatbins(plan, compiled, PackOptions{o.work_dir, o.compress_mode, toolchain}, runner, packed, diag);
  }
  if (!Checkpoint(diag, err)) return 1;

  // embed: write the fatbins where the assembler's .incbin finds them.
  std::vector<std::pair<std::string, std::string>> outputs;
  std::vector<std::string> blob_paths, blob_hashes;
  {
    PassTimer t("embed", o.perf, err);
    for (const PackedSpec& p : packed) {
      blob_paths.push_back(o.work_dir + "/fatbins/" + p.spec->name + ".fatbin");
      blob_hashes.push_back(HashHex(p.fatbin));
      if (std::string e = WriteFileAtomic(blob_paths.back(), p.fatbin); !e.empty()) diag.Error(e);
    }
    outputs.emplace_back(o.asm_out, GenerateEmbedAsm(*pkg, blob_paths, blob_hashes));
  }
  if (!Checkpoint(diag, err)) return 1;

  // generate: the header and the launchers; written last, all together.
  {
    PassTimer t("generate", o.perf, err);
    outputs.emplace_back(o.launcher_out, GenerateLauncherSource(*pkg, specs, gen, TritonLaunches(plan, compiled)));
    outputs.emplace_back(o.header_out, GenerateHeader(*pkg, specs, gen));
    if (!o.depfile_out.empty()) outputs.emplace_back(o.depfile_out, Depfile(o, *pkg, compiled));
    if (std::string e = WriteAll(outputs); !e.empty()) diag.Error(e);
  }
  // archive: Meson's static_library() links the launchers, the embedded
  // fatbins and the runtime into lib<package>.a (see manifests/meson.build).
  return Checkpoint(diag, err) ? 0 : 1;
}

}  // namespace kpack
