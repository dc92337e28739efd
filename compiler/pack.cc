#include "pack.h"

#include <unistd.h>

#include <filesystem>

#include "fs_util.h"

namespace kpack {

FatbinJob MakeFatbinJob(const Plan& plan, size_t begin, size_t end, const std::vector<std::string>& images,
                        const PackOptions& o) {
  const Specialization& s = *plan.units[begin].spec;
  FatbinJob job;
  job.label = "kernel '" + s.kernel->name + "' specialization " + s.NameWithVariant();
  job.output = o.work_dir + "/fatbins/" + s.Stem() + ".fatbin";
  job.argv = {o.toolchain.fatbinary, "-64"};
  job.argv.push_back("--ident=" + FatbinIdent(o.package, s, s.kernel->BuildMode()));  // what `kpack inspect` names
  if (!o.compress_mode.empty()) job.argv.push_back("--compress-mode=" + o.compress_mode);
  // fatbinary compresses only PTX and debug images unless told otherwise,
  // which would make speed and balance no-ops for SASS-only packages.
  if (o.compress_mode == "speed" || o.compress_mode == "balance" || o.compress_mode == "size")
    job.argv.push_back("--compress-all");
  for (size_t i = begin; i < end; ++i) {
    const Unit& u = plan.units[i];
    job.argv.push_back("--image3=kind=" + std::string(u.ptx ? "ptx" : "elf") + ",sm=" +
                       (u.ptx ? std::to_string(u.arch.number) : u.arch.SmValue()) + ",file=" + images[i - begin]);
  }
  return job;
}

std::string RunFatbinJob(const FatbinJob& job, ToolRunner& runner, std::string* bytes) {
  std::string created = job.output + ".tmp." + std::to_string(getpid());
  std::vector<std::string> argv = job.argv;
  argv.push_back("--create=" + created);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(job.output).parent_path(), ec);
  ToolResult r = runner.Run(argv);
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

PackedSpec DescribePacked(const Plan& plan, size_t begin, size_t end) {
  PackedSpec out;
  out.spec = plan.units[begin].spec;
  out.build_mode = out.spec->kernel->BuildMode();
  for (size_t i = begin; i < end; ++i) {
    const Unit& u = plan.units[i];
    (u.ptx ? out.ptx_archs : out.sass_archs).push_back(u.arch);
  }
  return out;
}

void ReportToolError(const SourceLoc& loc, const std::string& error, Diagnostics& diag) {
  size_t newline = error.find('\n');
  diag.Error(loc, error.substr(0, newline));
  if (newline != std::string::npos) diag.Note(error.substr(newline + 1));
}

std::string FatbinIdent(const std::string& package, const Specialization& s, const std::string& build_mode) {
  return "kpack:" + package + ":" + s.kernel->name + ":" + s.name + ":" + build_mode;
}

std::optional<FatbinIdentParts> ParseFatbinIdent(const std::string& ident) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t colon; (colon = ident.find(':', start)) != std::string::npos; start = colon + 1)
    parts.push_back(ident.substr(start, colon - start));
  parts.push_back(ident.substr(start));
  if (parts.size() != 5 || parts[0] != "kpack") return std::nullopt;
  return FatbinIdentParts{parts[1], parts[2], parts[3], parts[4]};
}

bool PackFatbins(const Plan& plan, const std::vector<CompiledUnit>& compiled, const PackOptions& options,
                 ToolRunner& runner, std::vector<PackedSpec>& out, Diagnostics& diag) {
  out.clear();
  bool ok = true;
  for (size_t begin = 0; begin < plan.units.size();) {
    size_t end = begin;
    while (end < plan.units.size() && plan.units[end].spec == plan.units[begin].spec) ++end;
    out.push_back(DescribePacked(plan, begin, end));
    std::vector<std::string> images;
    for (size_t i = begin; i < end; ++i) {
      const Unit& u = plan.units[i];
      images.push_back(options.work_dir + "/fatbins/" + u.name + (u.ptx ? ".ptx" : ".cubin"));
      if (std::string err = WriteFileAtomic(images.back(), compiled[i].binary); !err.empty()) {
        diag.Error(err);
        return false;
      }
    }
    std::string err = RunFatbinJob(MakeFatbinJob(plan, begin, end, images, options), runner, &out.back().fatbin);
    if (!err.empty()) {
      ReportToolError(out.back().spec->kernel->loc, err, diag);
      ok = false;
    }
    begin = end;
  }
  return ok;
}

}  // namespace kpack
