#include "pack.h"

#include <unistd.h>

#include <filesystem>

#include "check.h"
#include "cubin.h"
#include "fs_util.h"

namespace kpack {

FatbinJob MakeFatbinJob(const Plan& plan, size_t group_index, const std::vector<std::string>& images,
                        const PackOptions& o) {
  const FatbinGroup& group = plan.groups[group_index];
  const Specialization& s = *group.specs.front();
  FatbinJob job;
  job.label = "kernel '" + s.kernel->name + "' " +
              (group.specs.size() == 1 ? "specialization " + s.NameWithVariant() : "batch " + group.stem);
  job.output = o.work_dir + "/fatbins/" + group.stem + ".fatbin";
  job.argv = {o.toolchain.fatbinary, "-64"};
  // What `kpack inspect` names and shows.
  job.argv.push_back("--ident=" + FatbinIdent(o.package, group, s.kernel->BuildMode(),
                                              s.kernel->language == Language::kTriton ? plan.triton_version : ""));
  if (!o.compress_mode.empty()) job.argv.push_back("--compress-mode=" + o.compress_mode);
  // fatbinary compresses only PTX and debug images unless told otherwise,
  // which would make speed and balance no-ops for SASS-only packages.
  if (o.compress_mode == "speed" || o.compress_mode == "balance" || o.compress_mode == "size")
    job.argv.push_back("--compress-all");
  for (size_t i = 0; i < group.batches.size(); ++i) {
    const Batch& b = plan.batches[group.batches[i]];
    job.argv.push_back("--image3=kind=" + std::string(b.ptx ? "ptx" : "elf") + ",sm=" +
                       (b.ptx ? std::to_string(b.arch.number) : b.arch.SmValue()) + ",file=" + images[i]);
    if (!b.ptx && job.cubin.empty()) job.cubin = images[i];
  }
  if (group.specs.size() > 1 && s.kernel->global_entry)
    for (const Specialization* member : group.specs)
      job.instances.push_back(FatbinInstance{member->name, s.kernel->entry, ExpectedArgs(*member)});
  if (job.instances.empty()) job.cubin.clear();
  return job;
}

namespace {

// The one spelling of an identifier, whoever made its parts (FatbinIdent,
// or IdentWithSymbols from a parsed one).  A Triton version with a ':'
// (none that Triton has released) would split it: left out rather than
// misread.
std::string JoinFatbinIdent(const FatbinIdentParts& p) {
  const bool version = !p.triton_version.empty() && p.triton_version.find(':') == std::string::npos;
  return "kpack:" + p.package + ":" + p.kernel + ":" + p.specialization + ":" + p.build_mode +
         (version ? ":triton-" + p.triton_version : "");
}

// The identifier with each __global__ instance's symbol read from the
// batch's cubin; unchanged where one is not found (the check pass then
// reports why).
std::string IdentWithSymbols(const std::string& ident, const FatbinJob& job) {
  std::optional<std::string> bytes = ReadFile(job.cubin);
  std::optional<CubinInfo> info = bytes ? ReadCubin(*bytes, nullptr) : std::nullopt;
  if (!info) return ident;
  std::vector<std::string> symbols;
  for (const CubinKernel& k : info->kernels) symbols.push_back(k.name);
  std::optional<FatbinIdentParts> parts = ParseFatbinIdent(ident);
  if (!parts) return ident;
  // Each '+'-separated "spec=?" whose instance the cubin has, exactly.
  std::string names;
  for (size_t start = 0; start <= parts->specialization.size();) {
    size_t plus = std::min(parts->specialization.find('+', start), parts->specialization.size());
    std::string item = parts->specialization.substr(start, plus - start);
    for (const FatbinInstance& m : job.instances)
      if (item == m.spec + "=?")
        if (std::optional<std::string> symbol = FindInstance(symbols, m.entry, m.args, nullptr, nullptr))
          item = m.spec + "=" + *symbol;
    names += (names.empty() ? "" : "+") + item;
    start = plus + 1;
  }
  parts->specialization = names;
  return JoinFatbinIdent(*parts);
}

}  // namespace

std::string RunFatbinJob(const FatbinJob& job, ToolRunner& runner, std::string* bytes, double* cpu_seconds) {
  std::string created = job.output + ".tmp." + std::to_string(getpid());
  std::vector<std::string> argv = job.argv;
  if (!job.instances.empty())
    for (std::string& arg : argv)
      if (arg.rfind("--ident=", 0) == 0) arg = "--ident=" + IdentWithSymbols(arg.substr(8), job);
  argv.push_back("--create=" + created);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(job.output).parent_path(), ec);
  ToolResult r = runner.Run(argv);
  if (cpu_seconds) *cpu_seconds = r.cpu_seconds;
  std::optional<std::string> fatbin = r.ok() ? ReadFile(created) : std::nullopt;
  std::filesystem::remove(created, ec);
  if (!fatbin) {
    std::string text = "fatbinary failed for " + job.label + (r.spawn_error.empty() ? "" : ": " + r.spawn_error) +
                       "\n  command: " + FormatCommand(argv);
    if (!r.output.empty()) text += "\n" + r.output;
    while (text.back() == '\n') text.pop_back();
    return text;
  }
  if (std::string err = WriteFileAtomic(job.output, *fatbin); !err.empty()) return err;
  if (bytes) *bytes = std::move(*fatbin);
  return "";
}

std::vector<PackedSpec> DescribePacked(const Plan& plan) {
  std::vector<PackedSpec> out;
  for (size_t i = 0; i < plan.units.size(); ++i) {
    const Unit& u = plan.units[i];
    if (out.empty() || out.back().spec != u.spec) {
      out.emplace_back();
      out.back().spec = u.spec;
      out.back().blob = plan.group_of_unit[i];
      out.back().build_mode = u.spec->kernel->BuildMode();
    }
    (u.ptx ? out.back().ptx_archs : out.back().sass_archs).push_back(u.arch);
  }
  return out;
}

void ReportToolError(const SourceLoc& loc, const std::string& error, Diagnostics& diag) {
  size_t newline = error.find('\n');
  diag.Error(loc, error.substr(0, newline));
  if (newline != std::string::npos) diag.Note(error.substr(newline + 1));
}

std::string FatbinIdent(const std::string& package, const FatbinGroup& group, const std::string& build_mode,
                        const std::string& triton_version) {
  std::string names;
  for (const Specialization* s : group.specs) {
    names += (names.empty() ? "" : "+") + s->name;
    if (group.specs.size() > 1) names += "=" + (s->kernel->global_entry ? std::string("?") : s->symbol);
  }
  return JoinFatbinIdent({package, group.specs.front()->kernel->name, names, build_mode, triton_version});
}


std::optional<FatbinIdentParts> ParseFatbinIdent(const std::string& ident) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t colon; (colon = ident.find(':', start)) != std::string::npos; start = colon + 1)
    parts.push_back(ident.substr(start, colon - start));
  parts.push_back(ident.substr(start));
  // A sixth part names the Triton of a Triton kernel's fatbin.
  if (parts.size() < 5 || parts.size() > 6 || parts[0] != "kpack") return std::nullopt;
  if (parts.size() == 6 && (parts[5].rfind("triton-", 0) != 0 || parts[5].size() == 7)) return std::nullopt;
  return FatbinIdentParts{parts[1], parts[2], parts[3], parts[4], parts.size() == 6 ? parts[5].substr(7) : ""};
}

bool PackFatbins(const Plan& plan, const std::vector<CompiledUnit>& compiled, const PackOptions& options,
                 ToolRunner& runner, std::vector<PackedBlob>& out, Diagnostics& diag) {
  out.clear();
  bool ok = true;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const FatbinGroup& group = plan.groups[g];
    out.push_back(PackedBlob{group.stem, ""});
    std::vector<std::string> images;
    for (size_t b : group.batches) {
      const Batch& batch = plan.batches[b];
      images.push_back(options.work_dir + "/fatbins/" + batch.name + (batch.ptx ? ".ptx" : ".cubin"));
      if (std::string err = WriteFileAtomic(images.back(), compiled[batch.units.front()].binary); !err.empty()) {
        diag.Error(err);
        return false;
      }
    }
    std::string err = RunFatbinJob(MakeFatbinJob(plan, g, images, options), runner, &out.back().fatbin);
    if (!err.empty()) {
      ReportToolError(group.specs.front()->kernel->loc, err, diag);
      ok = false;
    }
  }
  return ok;
}

}  // namespace kpack
