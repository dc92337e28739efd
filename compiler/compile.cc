#include "compile.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <cctype>
#include <map>
#include <set>
#include <thread>

#include "fs_util.h"
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
  argv.insert(argv.end(), job.flags.begin(), job.flags.end());
  if (!env.launcher.empty()) argv.push_back("-c");
  return argv;
}

// Compiles one Triton unit through triton_helper.py.
std::string BuildTriton(const UnitJob& job, const CompileEnv& env, ToolRunner& runner, CompiledUnit& out) {
  std::string stem = env.work_dir + "/units/" + job.name;
  if (std::string err = WriteFileAtomic(stem + ".json", job.source); !err.empty()) return err;
  std::string cubin = stem + ".cubin" + TmpSuffix(), meta = stem + ".meta" + TmpSuffix();
  std::vector<std::string> argv = {env.triton.python, env.triton.helper, "compile", stem + ".json", cubin, meta};
  ToolResult r;
  ToolOutputs got = RunWithOutputs(runner, argv, cubin, meta, r);
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
                       std::string& text, std::vector<std::string>& deps) {
  std::string output = env.work_dir + "/units/" + job.name + ".ii" + TmpSuffix();
  std::vector<std::string> argv = {env.toolchain.nvcc};
  argv.insert(argv.end(), job.flags.begin(), job.flags.end());
  argv.insert(argv.end(), {"-E", "-o", output, tu});
  ToolResult r;
  ToolOutputs got = RunWithOutputs(runner, argv, output, "", r);
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
  job.label = "kernel '" + s.kernel->name + "' specialization " + s.name + " (" + s.Describe() + ") for " +
              (u.ptx ? "compute_" + std::to_string(u.arch.number) + " PTX" : u.arch.Name());
  if (u.triton) job.inputs = {s.kernel->source_path};
  return job;
}

std::string CompileOne(const UnitJob& job, const CompileEnv& env, ToolRunner& runner, CompiledUnit& out) {
  auto start = std::chrono::steady_clock::now();
  auto done = [&](CompiledUnit::How how) {
    out.how = how;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::string();
  };
  UnitCache cache(env.cache_dir);
  if (cache.LookUp(job.key, out)) return done(CompiledUnit::How::kDirectHit);
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
  if (std::string err = Preprocess(job, env, tu, runner, preprocessed, deps); !err.empty()) return err;
  std::string pp_key = PreprocessedKey(job.config_key, preprocessed);
  if (cache.LookUp(pp_key, out)) {
    out.deps = std::move(deps);
    cache.Store(job.key, out);
    return done(CompiledUnit::How::kPreprocessedHit);
  }
  if (std::string err = BuildNvcc(job, env, tu, runner, out); !err.empty()) return err;
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
  std::vector<std::string> errors(plan.units.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < plan.units.size(); i = next++)
      errors[i] = CompileOne(MakeUnitJob(plan.units[i]), options.env, runner, out[i]);
  };
  int jobs = std::max(1, std::min<int>(options.jobs, static_cast<int>(plan.units.size())));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < out.size(); ++i) {
    if (!errors[i].empty()) continue;
    if (out[i].how == CompiledUnit::How::kCompiled) ++stats.compiled;
    else ++stats.cached;
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
    diag.Error(u.spec->kernel->loc, errors[i].substr(0, newline));
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
