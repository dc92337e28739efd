#include "compile.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <cctype>
#include <map>
#include <set>
#include <iostream>
#include <thread>

#include "fs_util.h"
#include "triton_server.h"
#include "unit_cache.h"

namespace kpack {
namespace {

// Runs `argv` with the output and depfile going to temporary names, then
// reads them back.  Removes the temporaries either way.
struct ToolOutputs {
  std::optional<std::string> output, depfile;
};
ToolOutputs RunWithOutputs(ToolRunner& runner, const std::vector<std::string>& argv, const std::string& output,
                           const std::string& depfile, ToolResult& r) {
  r = runner.Run(argv);
  ToolOutputs out;
  if (r.ok()) {
    out.output = ReadFile(output);
    if (!depfile.empty()) out.depfile = ReadFile(depfile);
  }
  std::error_code ec;
  std::filesystem::remove(output, ec);
  if (!depfile.empty()) std::filesystem::remove(depfile, ec);
  return out;
}

// The error text of a failed tool run: what failed, the command, its output.
std::string ToolFailure(const UnitJob& job, const std::string& tool, const ToolResult& r,
                        const std::vector<std::string>& argv) {
  std::string why = !r.spawn_error.empty() ? r.spawn_error
                    : r.exit_code != 0     ? "exit code " + std::to_string(r.exit_code)
                                           : tool + " wrote no output";
  std::string text = tool + " failed (" + why + ") for " + job.label + "\n  command: " + FormatCommand(argv);
  if (!r.output.empty()) text += "\n" + r.output;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::string TmpSuffix() { return ".tmp." + std::to_string(getpid()); }

// The nvcc command line for `job`: [launcher] nvcc flags [-c] extra...
std::vector<std::string> NvccArgv(const UnitJob& job, const CompileEnv& env) {
  std::vector<std::string> argv;
  if (!env.launcher.empty()) argv.push_back(env.launcher);
  argv.push_back(env.toolchain.nvcc);
  // `-c` first: sccache 0.9+ keeps only the last of nvcc's phase flags
  // (-c, -cubin, -ptx) and would turn `-cubin ... -c` into a host object.
  if (!env.launcher.empty()) argv.push_back("-c");
  argv.insert(argv.end(), job.flags.begin(), job.flags.end());
  return argv;
}

// Why `binary` is not what an nvcc unit must produce (a CUDA ELF, or PTX
// text); "" when it is.  A launcher that rewrote the command line can hand
// back a host object, which must neither be packed nor cached.
// (Anything else fails the check pass, which reads every cubin.)
std::string BinaryProblem(const std::string& binary, bool ptx) {
  if (binary.size() < 20 || binary.compare(0, 4, "\x7f" "ELF") != 0) return "";
  if (ptx) return "it is an ELF file";
  unsigned machine = static_cast<unsigned char>(binary[18]) | static_cast<unsigned char>(binary[19]) << 8;
  constexpr unsigned kCudaMachine = 190;  // EM_CUDA
  return machine == kCudaMachine ? "" : "it is an ELF file for machine " + std::to_string(machine) + ", not CUDA (190)";
}

// Runs a Triton unit on a slot's compiler process (triton_server.h),
// filling `r` as the unit's own `triton_helper.py compile` would have
// ended: exit code 1 and the helper's output for a compile error.  Returns
// the unit's error text when the process itself failed (twice).
std::string CompileOnServer(const UnitJob& job, const CompileEnv& env, const std::string& request,
                            const std::string& cubin, const std::string& meta, ToolResult& r, UnitCost& cost) {
  TritonServerOptions options = TritonServerOptionsFor(env.triton.python, env.triton.helper, env.work_dir);
  TritonServerReply reply = CompileOnTritonServer(options, TritonCompile{request, cubin, meta, job.label}, std::cerr);
  cost.tool_cpu += reply.cpu;
  cost.compile_cpu += reply.compile_cpu;
  cost.startup_cpu += reply.startup_cpu;
  cost.processes += reply.started;
  if (!reply.failure.empty()) return reply.failure;
  r.exit_code = reply.ok ? 0 : 1;
  r.output = std::move(reply.output);
  return "";
}

// Compiles one Triton unit through triton_helper.py: on a compiler process
// that serves the build's units (importing Triton once), or, with
// KPACK_TRITON_SERVER=0, in a `compile` process of its own.  Either writes
// the outputs to temporary names, removed here.
std::string BuildTriton(const UnitJob& job, const CompileEnv& env, ToolRunner& runner, CompiledUnit& out) {
  std::string stem = env.work_dir + "/units/" + job.name;
  if (std::string err = WriteFileAtomic(stem + ".json", job.source); !err.empty()) return err;
  std::string cubin = stem + ".cubin" + TmpSuffix(), meta = stem + ".meta" + TmpSuffix();
  // The one-shot's command: also what an error shows for either way.
  std::vector<std::string> argv = {env.triton.python, env.triton.helper, "compile", stem + ".json", cubin, meta};
  ToolResult r;
  ToolOutputs got;
  if (TritonServerEnabled()) {
    std::string failure = CompileOnServer(job, env, stem + ".json", cubin, meta, r, out.cost);
    if (failure.empty() && r.ok()) got = ToolOutputs{ReadFile(cubin), ReadFile(meta)};
    std::error_code ec;
    std::filesystem::remove(cubin, ec);
    std::filesystem::remove(meta, ec);
    if (!failure.empty()) return failure;
  } else {
    got = RunWithOutputs(runner, argv, cubin, meta, r);
    out.cost.tool_cpu += r.cpu_seconds;  // start-up and compile together
    out.cost.processes += 1;
  }
  if (!got.output || !got.depfile) return ToolFailure(job, "Triton", r, argv);
  out.binary = std::move(*got.output);
  out.meta = std::move(*got.depfile);
  // The kernel's own file and every module of its package the helper read.
  out.deps = job.inputs;
  std::string error;
  if (std::optional<TritonMeta> meta = ParseTritonMeta(out.meta, &error))
    for (const std::string& input : meta->inputs)
      if (std::find(out.deps.begin(), out.deps.end(), input) == out.deps.end()) out.deps.push_back(input);
  return "";
}

// The files a preprocessed text came from: the paths of its line markers
// ('# 12 "path" flags'), without <built-in> and the like.  nvcc refuses -MD
// with -E, and the markers name the same files.
std::vector<std::string> MarkedFiles(const std::string& text) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (text.compare(at, 2, "# ") == 0 && at + 2 < end && std::isdigit(static_cast<unsigned char>(text[at + 2]))) {
      size_t open = text.find('"', at), close = open < end ? text.find('"', open + 1) : std::string::npos;
      if (close < end) {
        std::string path = text.substr(open + 1, close - open - 1);
        if (!path.empty() && path[0] != '<' && seen.insert(path).second) out.push_back(path);
      }
    }
    at = end + 1;
  }
  return out;
}

// The device-side preprocessed source of an nvcc unit and the files it
// read; an error string when nvcc fails (the compile would fail too).
std::string Preprocess(const UnitJob& job, const CompileEnv& env, const std::string& tu, ToolRunner& runner,
                       std::string& text, std::vector<std::string>& deps, UnitCost& cost) {
  std::string output = env.work_dir + "/units/" + job.name + ".ii" + TmpSuffix();
  std::vector<std::string> argv = {env.toolchain.nvcc};
  argv.insert(argv.end(), job.flags.begin(), job.flags.end());
  argv.insert(argv.end(), {"-E", "-o", output, tu});
  ToolResult r;
  ToolOutputs got = RunWithOutputs(runner, argv, output, "", r);
  cost.tool_cpu += r.cpu_seconds;
  cost.processes += 1;
  if (!got.output) return ToolFailure(job, "nvcc", r, argv);
  text = std::move(*got.output);
  deps = MarkedFiles(text);
  // The generated TU is an input too, but its content is already in the key.
  deps.erase(std::remove(deps.begin(), deps.end(), tu), deps.end());
  return "";
}

// Compiles one unit with nvcc.  Returns an empty string or the error lines.
std::string BuildNvcc(const UnitJob& job, const CompileEnv& env, const std::string& tu, ToolRunner& runner,
                      CompiledUnit& out) {
  std::string stem = env.work_dir + "/units/" + job.name;
  std::string output = stem + (job.ptx ? ".ptx" : ".cubin") + TmpSuffix();
  std::string depfile = stem + ".d" + TmpSuffix();
  std::vector<std::string> argv = NvccArgv(job, env);
  argv.insert(argv.end(), {"-MD", "-MF", depfile, "-o", output, tu});
  ToolResult r;
  ToolOutputs got = RunWithOutputs(runner, argv, output, depfile, r);
  out.cost.tool_cpu += r.cpu_seconds;
  out.cost.compile_cpu += r.cpu_seconds;
  out.cost.processes += 1;
  if (!got.output || !got.depfile) return ToolFailure(job, "nvcc", r, argv);
  out.binary = std::move(*got.output);
  out.deps = ParseDepfile(*got.depfile);
  out.deps.erase(std::remove(out.deps.begin(), out.deps.end(), tu), out.deps.end());
  return "";
}

}  // namespace

std::string CompileStats::Summary(const std::string& units) const {
  std::string out = units + ": " + std::to_string(compiled) + " compiled, " +
                    std::to_string(cached) + " from cache";
  if (up_to_date > 0) out += ", " + std::to_string(up_to_date) + " up to date";
  int batches = batches_compiled + batches_cached + batches_up_to_date;
  if (batches > 0)
    out += " (nvcc batches: " + std::to_string(batches_compiled) + " compiled, " + std::to_string(batches_cached) +
           " from cache, " + std::to_string(batches_up_to_date) + " up to date)";
  return out;
}

namespace {

std::string Seconds(double s) {
  char text[32];
  snprintf(text, sizeof text, s < 10 ? "%.2f" : "%.1f", s);
  return text;
}

std::string Ms(double s) { return std::to_string(static_cast<int64_t>(s * 1000 + 0.5)) + " ms"; }

}  // namespace

std::string CompileStats::CpuSummary() const {
  std::string out;
  if (nvcc.units > 0)
    out += "kpack: cpu nvcc " + Seconds(nvcc.cpu) + " s: " + std::to_string(nvcc.runs) + " compiles of " +
           std::to_string(nvcc.units) + " units, " + std::to_string(nvcc.processes) + " nvcc processes (" +
           (nvcc.processes ? Seconds(nvcc.cpu / nvcc.processes) : std::string("0")) + " s each)\n";
  if (triton.units > 0) {
    double overhead = triton.units ? (triton.cpu - triton.compile_cpu) / triton.units : 0;
    out += "kpack: cpu Triton " + Seconds(triton.cpu + triton.startup_cpu) + " s: " + std::to_string(triton.units) +
           " units, compiling " + Seconds(triton.compile_cpu) + " s, per-unit overhead " + Ms(overhead) + "; " +
           std::to_string(triton.processes) + " compiler processes started (" + Seconds(triton.startup_cpu) +
           " s start-up)\n";
  }
  if (fatbinary.runs > 0)
    out += "kpack: cpu fatbinary " + Seconds(fatbinary.cpu) + " s: " + std::to_string(fatbinary.runs) + " runs\n";
  if (steps > 0)
    out += "kpack: cpu kpack steps " + Seconds(step_cpu) + " s: " + std::to_string(steps) + " processes (" +
           Ms(step_cpu / steps) + " each)\n";
  return out;
}

UnitJob MakeUnitJob(const Unit& u) {
  const Specialization& s = *u.spec;
  UnitJob job;
  job.name = u.name;
  job.key = u.key;
  job.config_key = u.config_key;
  job.source = u.source;
  job.flags = u.flags;
  job.ptx = u.ptx;
  job.triton = u.triton;
  job.label = UnitLabel(u);
  if (u.triton) job.inputs = {s.kernel->source_path};
  return job;
}

BatchJob MakeBatchJob(const Plan& plan, const Batch& b) {
  BatchJob out;
  if (b.units.size() == 1) {
    out.job = MakeUnitJob(plan.units[b.units[0]]);
    return out;
  }
  out.job.name = b.name;
  out.job.key = b.key;
  out.job.config_key = b.config_key;
  out.job.source = b.source;
  out.job.flags = b.flags;
  out.job.ptx = b.ptx;
  out.job.label = b.label;
  for (size_t i : b.units) out.members.push_back(MakeUnitJob(plan.units[i]));
  return out;
}

std::string CompileBatch(const BatchJob& batch, const CompileEnv& env, ToolRunner& runner, CompiledUnit& out,
                         std::vector<std::string>& member_errors) {
  member_errors.assign(batch.members.size(), "");
  // A member's own translation unit is written only when the batch fails,
  // and kept only while that member fails alone (to look into); an earlier
  // run's is not a file of this build.
  auto member_tu = [&](size_t i) { return env.work_dir + "/units/" + batch.members[i].name + ".cu"; };
  std::error_code ec;
  for (size_t i = 0; i < batch.members.size(); ++i) std::filesystem::remove(member_tu(i), ec);
  std::string error = CompileOne(batch.job, env, runner, out);
  if (error.empty() || batch.members.empty()) return error;
  // Which members fail alone?  Their results go to the cache under their
  // own keys, which a later batch of one would hit.
  bool any = false;
  for (size_t i = 0; i < batch.members.size(); ++i) {
    CompiledUnit alone;
    member_errors[i] = CompileOne(batch.members[i], env, runner, alone);
    out.cost.tool_cpu += alone.cost.tool_cpu;
    out.cost.processes += alone.cost.processes;
    any = any || !member_errors[i].empty();
    if (member_errors[i].empty()) std::filesystem::remove(member_tu(i), ec);
  }
  if (any) return error;
  size_t newline = error.find('\n');
  return error.substr(0, newline) + "\n  note: each of its specializations compiles alone, but not together in one "
         "translation unit; give the kernel `batch: 1` to compile them one at a time" +
         (newline == std::string::npos ? "" : error.substr(newline));
}

void SpreadBatchErrors(const Batch& b, const std::string& batch_error, const std::vector<std::string>& member_errors,
                       std::vector<std::string>& unit_errors) {
  if (batch_error.empty()) return;
  bool any_own = std::any_of(member_errors.begin(), member_errors.end(), [](const std::string& e) { return !e.empty(); });
  for (size_t m = 0; m < b.units.size(); ++m) {
    bool own = m < member_errors.size() && !member_errors[m].empty();
    // A member that compiled alone in a batch whose other members failed
    // is not an error of its own.
    if (own) unit_errors[b.units[m]] = member_errors[m];
    else if (!any_own) unit_errors[b.units[m]] = batch_error;
  }
}

void CompileStats::AddCompiled(const Batch& b, const CompiledUnit& c) {
  bool several = b.units.size() > 1;
  if (c.how == CompiledUnit::How::kCompiled) {
    compiled += static_cast<int>(b.units.size());
    batches_compiled += several;
  } else {
    cached += static_cast<int>(b.units.size());
    batches_cached += several;
  }
  Kind& kind = b.triton ? triton : nvcc;
  kind.runs += c.how == CompiledUnit::How::kCompiled ? 1 : 0;
  kind.units += static_cast<int>(b.units.size());
  kind.processes += c.cost.processes;
  kind.cpu += c.cost.tool_cpu;
  kind.compile_cpu += c.cost.compile_cpu;
  kind.startup_cpu += c.cost.startup_cpu;
  step_cpu += c.cost.step_cpu;
  unit_seconds += c.seconds;
}

std::string CompileOne(const UnitJob& job, const CompileEnv& env, ToolRunner& runner, CompiledUnit& out) {
  auto start = std::chrono::steady_clock::now();
  auto done = [&](CompiledUnit::How how) {
    out.how = how;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::string();
  };
  UnitCache cache(env.cache_dir);
  // An nvcc entry is checked like a fresh output: an earlier kpack cached
  // whatever a launcher returned.
  auto valid = [&](const CompiledUnit& c) { return job.triton || BinaryProblem(c.binary, job.ptx).empty(); };
  if (cache.LookUp(job.key, out) && valid(out)) return done(CompiledUnit::How::kDirectHit);
  out = CompiledUnit{};
  if (job.triton) {
    if (std::string err = BuildTriton(job, env, runner, out); !err.empty()) return err;
    cache.Store(job.key, out);
    return done(CompiledUnit::How::kCompiled);
  }
  std::string tu = env.work_dir + "/units/" + job.name + ".cu";
  if (std::string err = WriteFileAtomic(tu, job.source); !err.empty()) return err;
  // A miss by the direct key: try the preprocessed source, which does not
  // depend on where the project or the build directory is.
  std::string preprocessed;
  std::vector<std::string> deps;
  UnitCost cost;
  if (std::string err = Preprocess(job, env, tu, runner, preprocessed, deps, cost); !err.empty()) return err;
  std::string pp_key = PreprocessedKey(job.config_key, preprocessed);
  if (cache.LookUp(pp_key, out) && valid(out)) {
    out.cost = cost;
    out.deps = std::move(deps);
    cache.Store(job.key, out);
    return done(CompiledUnit::How::kPreprocessedHit);
  }
  out = CompiledUnit{};
  out.cost = cost;
  if (std::string err = BuildNvcc(job, env, tu, runner, out); !err.empty()) return err;
  if (std::string why = BinaryProblem(out.binary, job.ptx); !why.empty())
    return "nvcc failed (its output is not " + std::string(job.ptx ? "PTX" : "a cubin") + ": " + why + ") for " +
           job.label + "\n  command: " + FormatCommand(NvccArgv(job, env)) +
           (env.launcher.empty() ? "" : "\n  (through the launcher " + env.launcher + ")");
  cache.Store(job.key, out);
  CompiledUnit by_content = out;
  by_content.deps.clear();  // the preprocessed text already covers them
  cache.Store(pp_key, by_content);
  return done(CompiledUnit::How::kCompiled);
}

std::vector<std::string> ParseDepfile(const std::string& text) {
  std::vector<std::string> out;
  size_t colon = text.find(": ");
  if (colon == std::string::npos) colon = text.find(":\n");
  if (colon == std::string::npos) return out;
  std::string current;
  for (size_t i = colon + 1; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      ++i;
      continue;
    }
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == ' ') {
      current += ' ';
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (!current.empty()) out.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  if (!current.empty()) out.push_back(current);
  return out;
}

bool CompileUnits(const Plan& plan, const CompileOptions& options, ToolRunner& runner,
                  std::vector<CompiledUnit>& out, CompileStats& stats, Diagnostics& diag) {
  out.assign(plan.units.size(), CompiledUnit{});
  std::vector<CompiledUnit> results(plan.batches.size());
  std::vector<std::string> batch_errors(plan.batches.size());
  std::vector<std::vector<std::string>> member_errors(plan.batches.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < plan.batches.size(); i = next++)
      batch_errors[i] =
          CompileBatch(MakeBatchJob(plan, plan.batches[i]), options.env, runner, results[i], member_errors[i]);
  };
  int jobs = std::max(1, std::min<int>(options.jobs, static_cast<int>(plan.batches.size())));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  std::vector<std::string> errors(plan.units.size());
  for (size_t b = 0; b < plan.batches.size(); ++b) {
    const Batch& batch = plan.batches[b];
    if (!batch_errors[b].empty()) {
      SpreadBatchErrors(batch, batch_errors[b], member_errors[b], errors);
      continue;
    }
    stats.AddCompiled(batch, results[b]);
    for (size_t i : batch.units) out[i] = results[b];
  }
  return ReportUnitErrors(plan, errors, diag);
}

namespace {

void ReplaceAll(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// The output of a failed unit with what is that unit's own taken out (its
// translation unit's path and name, its arch, its instance and nvcc's
// "[with T=__half, ...]"), so that an error every unit of a kernel has is
// recognised as one.
std::string CommonOutput(const Unit& u, std::string output) {
  const Specialization& s = *u.spec;
  ReplaceAll(output, u.name, "<unit>");
  ReplaceAll(output, s.name, "<specialization>");
  ReplaceAll(output, u.arch.Name(), "<arch>");
  ReplaceAll(output, "compute_" + std::to_string(u.arch.number), "<arch>");
  if (!u.triton) ReplaceAll(output, InstanceName(s), s.kernel->entry + "<...>");
  for (size_t at = output.find("[with "); at != std::string::npos; at = output.find("[with ", at + 1)) {
    size_t end = output.find(']', at);
    if (end == std::string::npos) break;
    output.replace(at, end - at + 1, "[with ...]");
  }
  return output;
}

// kpack's own reading of a CUDA failure it can explain, shown before
// nvcc's text; "" when it has none.
std::string Explain(const Kernel& k, const std::string& output) {
  if (k.language != Language::kCuda) return "";
  if (!k.global_entry && output.find("a __global__ function call must be configured") != std::string::npos)
    return "kpack: '" + k.entry + "' is a __global__ function, but kpack found no __global__ declaration of it in " +
           k.source_name + " or the files it includes (macros are not expanded), so it called it as a __device__ "
           "function from a kernel of its own; declare it with __global__ spelled out";
  // nvcc 13 reports an instantiation that fits no instance of the template
  // as 'no instance of function template "ns::k" matches the specified type'.
  if (k.global_entry && (output.find("explicit instantiation") != std::string::npos ||
                         output.find("matches the specified type") != std::string::npos))
    return "kpack: the explicit instantiation of the __global__ template '" + k.entry + "' (" + k.global_entry_at +
           ") failed: its template parameters must take the manifest's constexprs, in the manifest's order, and "
           "its parameters the manifest's params";
  return "";
}

// Failed and built units by scope, to place errors (ErrorLocation): a
// kernel and arch, and within it one value of one constexpr.
class FailureCounts {
 public:
  FailureCounts(const Plan& plan, const std::vector<std::string>& errors) {
    for (size_t i = 0; i < plan.units.size(); ++i) {
      const Unit& u = plan.units[i];
      bool failed = !errors[i].empty();
      Add(Scope(u), failed);
      for (size_t c = 0; c < u.spec->values.size(); ++c) Add(Scope(u, c), failed);
    }
  }
  // Whether every unit in the scope failed.
  bool AllFailed(const std::string& scope) const {
    auto it = counts_.find(scope);
    return it != counts_.end() && it->second.second == 0;
  }
  static std::string Scope(const Unit& u) {
    return std::to_string(reinterpret_cast<uintptr_t>(u.spec->kernel)) + " " + u.arch.Name() + (u.ptx ? " ptx" : "");
  }
  static std::string Scope(const Unit& u, size_t c) {
    const ConstexprValue& v = u.spec->values[c];
    return Scope(u) + " " + std::to_string(c) + " " + std::to_string(v.integer) + " " +
           std::to_string(static_cast<int>(v.dtype)) + " " + v.text;
  }

 private:
  void Add(const std::string& scope, bool failed) {
    auto& [bad, good] = counts_[scope];
    (failed ? bad : good) += 1;
  }
  std::map<std::string, std::pair<size_t, size_t>> counts_;  // failed, built
};

// Where a failed unit's error points.  An error in every unit of its
// kernel and arch is the kernel's (its `kernel:` line).  Otherwise the
// specialization's: the first of its values whose every unit failed (a bad
// value just added fails each specialization it makes), else its last
// value, the one its name ends with.
SourceLoc ErrorLocation(const Plan& plan, const FailureCounts& counts, size_t failed) {
  const Unit& u = plan.units[failed];
  const Kernel& k = *u.spec->kernel;
  if (counts.AllFailed(FailureCounts::Scope(u))) return k.loc;
  const std::vector<ConstexprValue>& values = u.spec->values;
  for (size_t c = 0; c < values.size() && c < k.constexprs.size(); ++c)
    if (values[c].loc.line != 0 && counts.AllFailed(FailureCounts::Scope(u, c))) return values[c].loc;
  for (size_t c = values.size(); c-- > 0;)
    if (values[c].loc.line != 0) return values[c].loc;
  return k.loc;
}

}  // namespace

bool ReportUnitErrors(const Plan& plan, const std::vector<std::string>& errors, Diagnostics& diag) {
  // Report in plan order, so the output does not depend on thread timing.
  // A kernel-wide problem (a Triton constexpr the kernel lacks, a template
  // error in every arch) fails many units with the same tool output: show
  // it once per kernel and list the other units it failed.
  bool ok = true;
  struct Seen {
    std::string output;
    std::vector<std::string> units;  // the units after the first
  };
  std::map<const Kernel*, std::vector<Seen>> seen_by_kernel;
  if (std::all_of(errors.begin(), errors.end(), [](const std::string& e) { return e.empty(); })) return true;
  FailureCounts counts(plan, errors);
  for (size_t i = 0; i < plan.units.size(); ++i) {
    if (errors[i].empty()) continue;
    ok = false;
    const Unit& u = plan.units[i];
    size_t newline = errors[i].find('\n');
    std::string rest = newline == std::string::npos ? "" : errors[i].substr(newline + 1);
    size_t output_at = rest.find('\n');  // after the command line
    std::string output = output_at == std::string::npos ? "" : rest.substr(output_at + 1);
    std::string common = CommonOutput(u, output);
    std::vector<Seen>& seen = seen_by_kernel[u.spec->kernel];
    auto same = std::find_if(seen.begin(), seen.end(), [&](const Seen& x) { return x.output == common; });
    if (!output.empty() && same != seen.end()) {
      same->units.push_back(u.name);
      continue;
    }
    seen.push_back(Seen{common, {}});
    diag.Error(ErrorLocation(plan, counts, i), errors[i].substr(0, newline));
    if (std::string why = Explain(*u.spec->kernel, output); !why.empty()) diag.Note("note: " + why);
    if (!rest.empty()) diag.Note(rest);
  }
  for (const auto& [kernel, seen] : seen_by_kernel)
    for (const Seen& x : seen)
      if (!x.units.empty()) {
        std::string names;
        for (const std::string& name : x.units) {
          if (!names.empty()) names += ", ";
          names += name;
        }
        diag.Note("note: " + std::to_string(x.units.size()) + " more unit(s) of kernel '" + kernel->name +
                  "' failed with the same output: " + names);
      }
  return ok;
}

}  // namespace kpack
