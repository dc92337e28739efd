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
#include "debug_guard.h"
#include "expand.h"
#include "flag_policy.h"
#include "fs_util.h"
#include "inventory.h"
#include "manifest.h"
#include "ninja.h"
#include "pack.h"
#include "pass_timer.h"
#include "plan.h"
#include "triton.h"
#include "triton_server.h"
#include "triton_source.h"
#include "tuner_gen.h"
#include "tuning_reader.h"
#include "version.h"

namespace kpack {
namespace {

namespace fs = std::filesystem;


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

std::string Depfile(const BuildOptions& o, const Package& pkg, const std::vector<CompiledUnit>& units) {
  std::set<std::string> deps = {pkg.manifest_path};
  for (const TuningFile& t : pkg.tunings) deps.insert(t.path);
  for (const Kernel& k : pkg.kernels) {
    deps.insert(k.manifest_path);
    deps.insert(k.source_path);
    // Every file a Triton kernel is made from (its package's modules).
    deps.insert(k.triton.inputs.begin(), k.triton.inputs.end());
  }
  for (const CompiledUnit& u : units) deps.insert(u.deps.begin(), u.deps.end());
  std::string out = EscapeDepfilePath(o.header_out) + ":";
  for (const std::string& d : deps) out += " \\\n  " + EscapeDepfilePath(d);
  return out + "\n";
}

// What Triton decided for each Triton specialization, over its archs: the
// largest shared memory (a launch may pass more than a cubin needs, never
// less); num_warps is the same for every arch.  Check already parsed all.
std::map<const Specialization*, TritonLaunch> TritonLaunches(const Plan& plan,
                                                              const std::vector<CompiledUnit>& compiled) {
  std::map<const Specialization*, TritonLaunch> out;
  std::map<size_t, std::pair<TritonScratch, TritonScratch>> scratch;  // per group: the most any build needs
  auto widen = [](TritonScratch& into, const TritonScratch& s) {
    into = TritonScratch{std::max(into.size, s.size), std::max(into.align, s.align)};
  };
  for (size_t i = 0; i < plan.units.size(); ++i) {
    if (!plan.units[i].triton) continue;
    std::string error;
    std::optional<TritonMeta> meta = ParseTritonMeta(compiled[i].meta, &error);
    if (!meta) continue;
    TritonLaunch& t = out[plan.units[i].spec];
    t.shared = std::max(t.shared, meta->shared);
    t.num_warps = meta->num_warps;
    t.hidden_pointer_params = meta->hidden_pointer_params;
    t.num_ctas = meta->num_ctas;  // the same in every build and arch (check)
    t.descs = meta->descs;
    auto& [global, profile] = scratch[plan.units[i].spec->group];
    widen(global, meta->global_scratch);
    widen(profile, meta->profile_scratch);
  }
  for (auto& [spec, t] : out) std::tie(t.global_scratch, t.profile_scratch) = scratch[spec->group];
  return out;
}

// This executable, which Ninja runs for each step.
std::string SelfPath() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "kpack" : exe.string();
}

std::string WriteAll(const std::vector<std::pair<std::string, std::string>>& files) {
  for (const auto& [path, content] : files)
    if (std::string err = WriteFileAtomic(path, content); !err.empty()) return err;
  return "";
}

// The compile and pack passes, as Ninja edges (ninja.h) or, with --ninja
// none, on threads in this process; then their counts under -v and --perf.
void CompileAndPack(const BuildOptions& o, const Plan& plan, const CompileEnv& env, const PackOptions& pack_options,
                    ToolRunner& runner, std::vector<CompiledUnit>& compiled, std::vector<PackedBlob>& blobs,
                    Diagnostics& diag, std::ostream& err) {
  CompileStats stats;
  int jobs = o.jobs > 0 ? o.jobs : DefaultUnitJobs(o.job_memory_mib);
  // Triton units compile on one compiler process per job slot
  // (triton_server.h); the steps read the slots and the timeout from the
  // environment, which Ninja passes on.  No thread runs yet.
  setenv(kTritonSlotsVariable, std::to_string(jobs).c_str(), 1);
  setenv(kTritonIdentityVariable, env.triton.version.c_str(), 1);
  if (o.triton_timeout_s > 0) setenv(kTritonTimeoutVariable, std::to_string(o.triton_timeout_s).c_str(), 1);
  if (o.ninja != "none") {
    PassTimer t("compile+pack", o.perf, err);
    NinjaOptions ninja{o.ninja, SelfPath(), jobs, !o.quiet};
    BuildWithNinja(plan, env, pack_options, ninja, compiled, blobs, stats, diag);
  } else {
    {
      PassTimer t("compile", o.perf, err);
      CompileUnits(plan, CompileOptions{env, jobs}, runner, compiled, stats, diag);
    }
    if (!diag.HasErrors()) {
      PassTimer t("pack", o.perf, err);
      PackFatbins(plan, compiled, pack_options, runner, blobs, diag);
    }
  }
  // Every unit has ended, so no compiler process has work left; none may
  // outlive the build.
  StopTritonServers(TritonServerOptionsFor(env.triton.python, env.triton.helper, o.work_dir).dir);
  if (o.verbose || o.perf) err << "kpack: " << stats.Summary(CountUnits(plan)) << "\n";
  if (o.perf && o.ninja != "none")
    err << "kpack: schedule " << static_cast<int64_t>(stats.schedule_ms * 1000) / 1000.0 << " ms (inside compile+pack)\n"
        << "kpack: unit steps " << stats.unit_seconds << " s in all\n";
  if (o.perf) err << stats.CpuSummary();
}

}  // namespace

int RunBuild(const BuildOptions& o, ToolRunner& runner, std::ostream& err) {
  Diagnostics diag;

  // load: parse the package file and every kernel manifest.
  std::optional<Package> pkg;
  {
    PassTimer t("load", o.perf, err);
    LoadOptions load = CommandLineLoadOptions(o.root, o.allow_outside_root, o.python_path, o.include_dirs);
    for (const std::string& dir : o.include_dirs) {
      std::error_code ec;
      if (!fs::exists(dir, ec)) diag.Error("include directory '" + dir + "' (-I) not found");
      else if (!fs::is_directory(dir, ec)) diag.Error("include directory '" + dir + "' (-I) is not a directory");
      else if (std::string e = IncludePathProblem("include directory '" + dir + "' (-I)", dir); !e.empty())
        diag.Error(e);
    }
    // Triton kernels' sources are read (not run) by the helper, once for
    // the whole package.
    HelperDescriber describer(runner, TritonTools{o.python, o.triton_helper, ""});
    load.describer = &describer;
    load.batch_override = static_cast<uint32_t>(o.batch);
    std::string archs = o.archs;
    for (size_t start = 0; !archs.empty() && start <= archs.size();) {
      size_t comma = std::min(archs.find(',', start), archs.size());
      std::string name = archs.substr(start, comma - start);
      if (std::optional<Arch> a = ParseArch(name)) load.archs_override.push_back(*a);
      else diag.Error("unknown arch '" + name + "' in --archs (CUDA 13 supports: " + SupportedArchList() + ")");
      start = comma + 1;
    }
    if (!diag.HasErrors()) pkg = LoadPackage(o.package_path, load, diag);
    // A release build ships no debug kernel that no manifest allows.
    if (pkg && !o.header_only && !o.allow_debug_kernels) RefuseDebugKernels(*pkg, diag);
  }
  if (!Checkpoint(diag, err)) return 1;

  // expand: the cartesian product of constexpr values, minus exclusions.
  std::vector<Specialization> specs;
  {
    PassTimer t("expand", o.perf, err);
    specs = Expand(*pkg, diag);
    // The tuning files against the builds: stale ones first.
    if (!diag.HasErrors()) CheckTunings(*pkg, specs, o.allow_stale_tuning, diag);
  }
  if (!Checkpoint(diag, err)) return 1;

  CodegenOptions gen{Label(o), Basename(o.header_out)};
  if (o.header_only) {
    PassTimer t("generate", o.perf, err);
    std::vector<std::pair<std::string, std::string>> files = {{o.header_out, GenerateHeader(*pkg, specs, gen)}};
    if (!o.tuner_out.empty()) files.emplace_back(o.tuner_out, GenerateTuner(*pkg, specs, gen));
    if (std::string e = WriteAll(files); !e.empty()) {
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

  // compile: nvcc (or Triton) for every batch of units not up to date or
  // cached; pack: one fatbin per batch's specializations.  Both run as
  // Ninja edges (ninja.h), or on threads in this process with --ninja none.
  std::vector<CompiledUnit> compiled;
  std::vector<PackedBlob> blobs;
  PackOptions pack_options{pkg->name, o.work_dir, o.compress_mode.empty() ? pkg->compress_mode : o.compress_mode,
                           toolchain};
  CompileAndPack(o, plan, CompileEnv{o.work_dir, o.cache_dir.empty() ? o.work_dir + "/cache" : o.cache_dir, toolchain,
                                     triton, o.nvcc_launcher},
                 pack_options, runner, compiled, blobs, diag, err);
  if (!Checkpoint(diag, err)) return 1;

  // check: each cubin has the kernel, for the arch, with the launcher's layout.
  std::vector<UnitFacts> facts;
  {
    PassTimer t("check", o.perf, err);
    // A __global__ entry's symbol is known only now, from its cubins.
    if (ResolveEntrySymbols(plan, compiled, specs, diag)) CheckUnits(plan, compiled, facts, diag);
    CheckRecordedBuildModes(plan, facts, diag);
  }
  if (!Checkpoint(diag, err)) return 1;

  // embed: write the fatbins where the assembler's .incbin finds them.
  std::vector<std::pair<std::string, std::string>> outputs;
  std::vector<std::string> blob_paths, blob_hashes;
  std::vector<PackedSpec> packed = DescribePacked(plan);
  {
    PassTimer t("embed", o.perf, err);
    for (const PackedBlob& b : blobs) {
      blob_paths.push_back(o.work_dir + "/fatbins/" + b.stem + ".fatbin");
      blob_hashes.push_back(HashHex(b.fatbin));
      if (std::string e = WriteFileIfChanged(blob_paths.back(), b.fatbin); !e.empty()) diag.Error(e);
    }
    outputs.emplace_back(o.asm_out, GenerateEmbedAsm(*pkg, blob_paths, blob_hashes));
  }
  if (!Checkpoint(diag, err)) return 1;

  // generate: the header and the launchers; written last, all together.
  {
    PassTimer t("generate", o.perf, err);
    std::vector<size_t> blob_of_spec;
    for (const PackedSpec& p : packed) blob_of_spec.push_back(p.blob);
    outputs.emplace_back(o.launcher_out,
                         GenerateLauncherSource(*pkg, specs, gen, TritonLaunches(plan, compiled), blob_of_spec));
    outputs.emplace_back(o.header_out, GenerateHeader(*pkg, specs, gen));
    if (!o.tuner_out.empty()) outputs.emplace_back(o.tuner_out, GenerateTuner(*pkg, specs, gen));
    if (!o.depfile_out.empty()) outputs.emplace_back(o.depfile_out, Depfile(o, *pkg, compiled));
    if (!o.inventory_out.empty())
      outputs.emplace_back(o.inventory_out,
                           GenerateInventory({&*pkg, gen.manifest_label, kKpackVersion, kAbiVersion, toolchain.version,
                                              triton.version, pack_options.compress_mode, &plan, &compiled, &facts, &packed, &blobs}));
    if (std::string e = WriteAll(outputs); !e.empty()) diag.Error(e);
  }
  // archive: Meson's static_library() links the launchers, the embedded
  // fatbins and the runtime into lib<package>.a (see manifests/meson.build).
  return Checkpoint(diag, err) ? 0 : 1;
}

}  // namespace kpack
