#include "pack.h"

#include <unistd.h>

#include <filesystem>

#include "fs_util.h"

namespace kpack {
namespace {

// Packs units [begin, end), all of one specialization.
bool PackOne(const Plan& plan, const std::vector<CompiledUnit>& compiled, size_t begin, size_t end,
             const PackOptions& o, ToolRunner& runner, PackedSpec& out, Diagnostics& diag) {
  const Specialization& s = *plan.units[begin].spec;
  out.spec = &s;
  out.build_mode = s.kernel->BuildMode();
  std::string dir = o.work_dir + "/fatbins";
  std::string tmp_suffix = ".tmp." + std::to_string(getpid());
  std::vector<std::string> argv = {o.toolchain.fatbinary, "-64", "--create=" + dir + "/" + s.name + ".fatbin" + tmp_suffix};
  argv.push_back("--ident=" + FatbinIdent(o.package, s, out.build_mode));  // what `kpack inspect` names
  if (!o.compress_mode.empty()) argv.push_back("--compress-mode=" + o.compress_mode);
  for (size_t i = begin; i < end; ++i) {
    const Unit& u = plan.units[i];
    std::string image = dir + "/" + u.name + (u.ptx ? ".ptx" : ".cubin");
    if (std::string err = WriteFileAtomic(image, compiled[i].binary); !err.empty()) {
      diag.Error(err);
      return false;
    }
    argv.push_back("--image3=kind=" + std::string(u.ptx ? "ptx" : "elf") + ",sm=" +
                   (u.ptx ? std::to_string(u.arch.number) : u.arch.SmValue()) + ",file=" + image);
    (u.ptx ? out.ptx_archs : out.sass_archs).push_back(u.arch);
  }
  ToolResult r = runner.Run(argv);
  std::string created = dir + "/" + s.name + ".fatbin" + tmp_suffix;
  std::optional<std::string> fatbin = r.ok() ? ReadFile(created) : std::nullopt;
  std::error_code ec;
  std::filesystem::remove(created, ec);
  if (!fatbin) {
    diag.Error(s.kernel->loc, "fatbinary failed for kernel '" + s.kernel->name + "' specialization " + s.name +
                                  (r.spawn_error.empty() ? "" : ": " + r.spawn_error));
    diag.Note("  command: " + FormatCommand(argv) + (r.output.empty() ? "" : "\n" + r.output));
    return false;
  }
  out.fatbin = std::move(*fatbin);
  return true;
}

}  // namespace

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
    out.emplace_back();
    ok = PackOne(plan, compiled, begin, end, options, runner, out.back(), diag) && ok;
    begin = end;
  }
  return ok;
}

}  // namespace kpack
