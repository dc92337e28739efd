#include "compile.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "fs_util.h"

namespace kpack {
namespace {

// Line 1: this header; line 2: hash of the .bin; line 3: "meta" and the
// Triton metadata (empty for nvcc units); then "<hash> <path>" per input.
constexpr std::string_view kDepsHeader = "kpack-deps-v2";

// Hashes of input files, computed once per run and shared by all threads.
class FileHashes {
 public:
  // Empty string when the file cannot be read.
  std::string Get(const std::string& path) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = hashes_.find(path);
      if (it != hashes_.end()) return it->second;
    }
    std::optional<std::string> text = ReadFile(path);
    std::string hash = text ? HashHex(*text) : "";
    std::lock_guard<std::mutex> lock(mu_);
    hashes_[path] = hash;
    return hash;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> hashes_;
};

std::string EntryPath(const CompileOptions& o, const Unit& u, const char* suffix) {
  return o.cache_dir + "/" + u.key.substr(0, 2) + "/" + u.key + suffix;
}

// A cache hit: the entry exists, its binary hashes to the recorded value,
// and every dependency still hashes to what it did when the entry was made.
bool LookUp(const CompileOptions& o, const Unit& u, FileHashes& hashes, CompiledUnit& out) {
  std::optional<std::string> deps = ReadFile(EntryPath(o, u, ".deps"));
  if (!deps) return false;
  std::istringstream lines(*deps);
  std::string header, binary_hash, meta;
  if (!std::getline(lines, header) || header != kDepsHeader || !std::getline(lines, binary_hash) ||
      !std::getline(lines, meta) || meta.rfind("meta", 0) != 0)
    return false;
  std::vector<std::string> paths;
  for (std::string line; std::getline(lines, line);) {
    size_t space = line.find(' ');
    if (space == std::string::npos) return false;
    std::string path = line.substr(space + 1);
    if (hashes.Get(path) != line.substr(0, space)) return false;
    paths.push_back(path);
  }
  std::optional<std::string> binary = ReadFile(EntryPath(o, u, ".bin"));
  if (!binary || HashHex(*binary) != binary_hash) return false;
  out.binary = std::move(*binary);
  out.meta = meta.size() > 5 ? meta.substr(5) : "";
  out.deps = std::move(paths);
  out.from_cache = true;
  return true;
}

// Writes the entry, binary first: a crash in between leaves a .bin whose
// .deps is missing or stale, which LookUp rejects.
void Store(const CompileOptions& o, const Unit& u, FileHashes& hashes, const CompiledUnit& unit) {
  std::string deps = std::string(kDepsHeader) + "\n" + HashHex(unit.binary) + "\nmeta " + unit.meta + "\n";
  for (const std::string& path : unit.deps) deps += hashes.Get(path) + " " + path + "\n";
  if (WriteFileAtomic(EntryPath(o, u, ".bin"), unit.binary).empty())
    WriteFileAtomic(EntryPath(o, u, ".deps"), deps);
}

std::string Failure(const Unit& u, const std::string& what) {
  const Specialization& s = *u.spec;
  return what + " for kernel '" + s.kernel->name + "' specialization " + s.name + " (" + s.Describe() +
         ") for " + (u.ptx ? "compute_" + std::to_string(u.arch.number) + " PTX" : u.arch.Name());
}

// The error text of a failed tool run: what failed, the command, its output.
std::string ToolFailure(const Unit& u, const std::string& tool, const ToolResult& r,
                        const std::vector<std::string>& argv) {
  std::string why = !r.spawn_error.empty() ? r.spawn_error
                    : r.exit_code != 0     ? "exit code " + std::to_string(r.exit_code)
                                           : tool + " wrote no output";
  std::string text = Failure(u, tool + " failed (" + why + ")") + "\n  command: " + FormatCommand(argv);
  if (!r.output.empty()) text += "\n" + r.output;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// Compiles one Triton unit through triton_helper.py.
std::string BuildTriton(const CompileOptions& o, const Unit& u, ToolRunner& runner, CompiledUnit& out) {
  std::string stem = o.work_dir + "/units/" + u.name;
  if (std::string err = WriteFileAtomic(stem + ".json", u.source); !err.empty()) return err;
  std::string tmp_suffix = ".tmp." + std::to_string(getpid());
  std::string cubin = stem + ".cubin" + tmp_suffix, meta = stem + ".meta" + tmp_suffix;
  std::vector<std::string> argv = {o.triton.python, o.triton.helper, "compile", stem + ".json", cubin, meta};
  ToolResult r = runner.Run(argv);
  std::optional<std::string> binary = r.ok() ? ReadFile(cubin) : std::nullopt;
  std::optional<std::string> metadata = r.ok() ? ReadFile(meta) : std::nullopt;
  std::error_code ec;
  std::filesystem::remove(cubin, ec);
  std::filesystem::remove(meta, ec);
  if (!binary || !metadata) return ToolFailure(u, "Triton", r, argv);
  out.binary = std::move(*binary);
  out.meta = std::move(*metadata);
  out.deps = {u.spec->kernel->source_path};
  return "";
}

// Compiles one unit with nvcc.  Returns an empty string or the error lines.
std::string Build(const CompileOptions& o, const Unit& u, ToolRunner& runner, CompiledUnit& out) {
  std::string stem = o.work_dir + "/units/" + u.name;
  if (std::string err = WriteFileAtomic(stem + ".cu", u.source); !err.empty()) return err;
  std::string tmp_suffix = ".tmp." + std::to_string(getpid());
  std::string output = stem + (u.ptx ? ".ptx" : ".cubin") + tmp_suffix;
  std::string depfile = stem + ".d" + tmp_suffix;
  std::vector<std::string> argv = {o.toolchain.nvcc};
  argv.insert(argv.end(), u.flags.begin(), u.flags.end());
  argv.insert(argv.end(), {"-MD", "-MF", depfile, "-o", output, stem + ".cu"});
  ToolResult r = runner.Run(argv);
  std::optional<std::string> binary = r.ok() ? ReadFile(output) : std::nullopt;
  std::optional<std::string> deps = r.ok() ? ReadFile(depfile) : std::nullopt;
  std::error_code ec;
  std::filesystem::remove(output, ec);
  std::filesystem::remove(depfile, ec);
  if (!binary || !deps) return ToolFailure(u, "nvcc", r, argv);
  out.binary = std::move(*binary);
  out.deps = ParseDepfile(*deps);
  // The generated TU is an input too, but its content is already in the key.
  out.deps.erase(std::remove(out.deps.begin(), out.deps.end(), stem + ".cu"), out.deps.end());
  return "";
}

}  // namespace

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
  FileHashes hashes;
  std::atomic<size_t> next{0};
  std::atomic<int> compiled{0}, cached{0};
  auto worker = [&] {
    for (size_t i = next++; i < plan.units.size(); i = next++) {
      const Unit& u = plan.units[i];
      if (LookUp(options, u, hashes, out[i])) {
        ++cached;
        continue;
      }
      errors[i] = u.triton ? BuildTriton(options, u, runner, out[i]) : Build(options, u, runner, out[i]);
      if (errors[i].empty()) {
        Store(options, u, hashes, out[i]);
        ++compiled;
      }
    }
  };
  int jobs = std::max(1, std::min<int>(options.jobs, static_cast<int>(plan.units.size())));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  stats.compiled = compiled;
  stats.cached = cached;
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
    size_t newline = errors[i].find('\n');
    std::string rest = newline == std::string::npos ? "" : errors[i].substr(newline + 1);
    size_t output_at = rest.find('\n');  // after the command line
    std::string output = output_at == std::string::npos ? "" : rest.substr(output_at + 1);
    std::vector<Seen>& seen = seen_by_kernel[plan.units[i].spec->kernel];
    auto same = std::find_if(seen.begin(), seen.end(), [&](const Seen& x) { return x.output == output; });
    if (!output.empty() && same != seen.end()) {
      same->units.push_back(plan.units[i].name);
      continue;
    }
    seen.push_back(Seen{output, {}});
    diag.Error(plan.units[i].spec->kernel->loc, errors[i].substr(0, newline));
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
