#include "manifest.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <memory>

#include "flag_policy.h"
#include "kernel_reader.h"
#include "triton_reader.h"
#include "tuning_reader.h"
#include "yaml_reader.h"

namespace kpack {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 97> kReservedWords = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double",
    "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
    "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
    "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "_Bool",
    "_Complex", "_Imaginary", "bool", "true", "false", "alignas", "alignof", "and",
    "and_eq", "asm", "bitand", "bitor", "catch", "char8_t", "char16_t", "char32_t",
    "class", "compl", "concept", "consteval", "constexpr", "constinit", "const_cast",
    "co_await", "co_return", "co_yield", "decltype", "delete", "dynamic_cast",
    "explicit", "export", "friend", "mutable", "namespace", "new", "noexcept", "not",
    "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public",
    "reinterpret_cast", "requires", "static_assert", "static_cast", "template", "this",
    "thread_local", "throw", "try", "typeid", "typename", "using", "virtual",
    "wchar_t", "xor", "xor_eq", "NULL",
};

// The project root of a package file at `path`.
std::string ProjectRoot(const std::string& package_path, const LoadOptions& options) {
  if (!options.project_root.empty()) return options.project_root;
  std::string dir = fs::path(package_path).parent_path().generic_string();
  return dir.empty() ? "." : dir;
}

// `python_path:` of the package file: directories relative to it, inside
// the project root (the build's own --python-path entries come first and
// may be anywhere: the build owner chose them).
void ReadPythonPath(FileReader& r, const YAML::Node& v, Package& pkg) {
  if (!v.IsSequence()) {
    r.Error(v, "python_path must be a list of directories");
    return;
  }
  for (const YAML::Node& item : v) {
    std::optional<std::string> dir = r.String(item, "each entry of python_path");
    if (!dir) continue;
    std::string resolved = ResolveBeside(r.file(), *dir);
    if (r.Inside(item, "python_path entry '" + *dir + "'", resolved + "/x")) pkg.python_path.push_back(resolved);
  }
}

// `include_dirs:` of the package file: header-only libraries' include roots
// (FlashInfer's, CUTLASS's), relative to the package file or absolute.  The
// package file is the build owner's, so they may lie outside the project
// root; kernel manifests reach them only through `source: <...>` and
// #include.  Each must be a directory.
void ReadIncludeDirs(FileReader& r, const YAML::Node& v, Package& pkg) {
  if (!v.IsSequence()) {
    r.Error(v, "include_dirs must be a list of directories");
    return;
  }
  for (const YAML::Node& item : v) {
    std::optional<std::string> dir = r.String(item, "each entry of include_dirs");
    if (!dir) continue;
    std::string resolved = ResolveBeside(r.file(), *dir);
    if (std::string e = IncludePathProblem("include directory '" + *dir + "'", resolved); !e.empty()) {
      r.Error(item, e);
      continue;
    }
    std::error_code ec;
    if (!r.options().files && !fs::is_directory(resolved, ec)) {
      r.Error(item, "include directory '" + *dir + "' not found (looked for " + resolved + ")");
      continue;
    }
    pkg.include_dirs.push_back(resolved);
  }
}

void ReadPackageFields(FileReader& r, const YAML::Node& root, Package& pkg,
                       std::vector<std::pair<std::string, YAML::Node>>& kernel_files, YAML::Node& tuning) {
  for (const auto& entry : root) {
    const std::string key = entry.first.Scalar();
    const YAML::Node& v = entry.second;
    if (key == "package") {
      if (auto s = r.Identifier(v, "package name")) pkg.name = *s;
      pkg.loc = r.Loc(v);
    } else if (key == "prefix") {
      if (auto s = r.Identifier(v, "prefix")) pkg.prefix = *s;
    } else if (key == "archs") {
      pkg.archs = r.Archs(v);
    } else if (key == "ptx") {
      if (auto b = r.Bool(v, "ptx")) pkg.ptx = *b;
    } else if (key == "nvcc_flags") {
      pkg.nvcc_flags = FlagList(r, v, pkg.nvcc_flag_locs);
    } else if (key == "allow_debug") {
      if (auto b = r.Bool(v, "allow_debug")) pkg.allow_debug = *b;
    } else if (key == "max_specializations") {
      if (auto i = r.Integer(v, "max_specializations")) {
        if (*i < 1) r.Error(v, "max_specializations must be at least 1");
        else pkg.max_specializations = static_cast<uint64_t>(*i);
      }
    } else if (key == "batch") {
      if (auto i = r.Integer(v, "batch")) {
        if (*i < 1 || *i > kMaxBatch) r.Error(v, "batch must be between 1 and " + std::to_string(kMaxBatch));
        else pkg.batch = static_cast<uint32_t>(*i);
      }
    } else if (key == "compress") {
      // fatbinary --compress-mode; docs/building.md says which driver each needs.
      if (auto m = r.String(v, "compress")) {
        if (*m == "none" || *m == "speed" || *m == "balance" || *m == "size") pkg.compress_mode = *m;
        else r.Error(v, "compress must be one of none, speed, balance, size (got '" + *m + "')");
      }
    } else if (key == "python_path") {
      ReadPythonPath(r, v, pkg);
    } else if (key == "include_dirs") {
      ReadIncludeDirs(r, v, pkg);
    } else if (key == "assume") {
      ReadAssume(r, v, pkg.assume);
    } else if (key == "tuning") {
      tuning = v;  // read once the kernels are (tuning_reader.h)
    } else if (key == "kernels") {
      if (!r.NonEmptySequence(v, "kernels")) continue;
      for (const YAML::Node& item : v)
        if (auto s = r.String(item, "a kernel manifest path")) kernel_files.emplace_back(*s, item);
    }
  }
}

// Reads every kernel manifest (the first step of KernelReader).
std::vector<std::unique_ptr<KernelReader>> ReadKernels(FileReader& r, const Package& pkg,
                                                      const std::vector<std::pair<std::string, YAML::Node>>& files) {
  std::vector<std::unique_ptr<KernelReader>> readers;
  for (const auto& [relative, node] : files) {
    std::string kernel_path = ResolveBeside(r.file(), relative);
    if (!r.Inside(node, "kernel manifest '" + relative + "'", kernel_path)) continue;
    if (!InputExists(kernel_path, r.options())) {
      r.Error(node, "kernel manifest '" + relative + "' not found (looked for " + kernel_path + ")");
      continue;
    }
    FileReader kr(kernel_path, r.options(), r.diag());
    kr.set_root(r.root());
    auto reader = std::make_unique<KernelReader>(std::move(kr), pkg);
    if (reader->Read()) readers.push_back(std::move(reader));
  }
  return readers;
}

// Asks the describer about every Triton kernel's source at once (one
// Python process).  nullopt after reporting why it could not.
std::optional<std::vector<TritonSourceInfo>> DescribeTriton(const std::vector<std::unique_ptr<KernelReader>>& readers,
                                                            const LoadOptions& options, Diagnostics& diag) {
  std::vector<TritonDescribeRequest> requests;
  const Kernel* first = nullptr;
  for (const auto& reader : readers) {
    if (reader->kernel().language != Language::kTriton) continue;
    requests.push_back(reader->DescribeRequest());
    if (!first) first = &reader->kernel();
  }
  if (requests.empty() || !options.describer) return std::vector<TritonSourceInfo>{};
  std::string error;
  std::optional<std::vector<TritonSourceInfo>> infos = options.describer->Describe(requests, &error);
  if (!infos) diag.Error(first->loc, error);
  return infos;
}

}  // namespace

bool IsCIdentifier(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !digit(c)) return false;
  if (s.rfind("__", 0) == 0 || (s[0] == '_' && s.size() > 1 && s[1] >= 'A' && s[1] <= 'Z')) return false;
  return std::find(kReservedWords.begin(), kReservedWords.end(), s) == kReservedWords.end();
}

bool IsQualifiedCppName(const std::string& s) {
  if (s.empty() || s.size() > 512) return false;
  size_t start = s.rfind("::", 0) == 0 ? 2 : 0;  // "::ns::k": the global namespace
  while (true) {
    size_t end = s.find("::", start);
    std::string part = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
    if (part.empty() || !alpha(part[0])) return false;
    for (char c : part)
      if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
    // Library names may be reserved (__nv_bfloat16); keywords never name anything.
    if (std::find(kReservedWords.begin(), kReservedWords.end(), part) != kReservedWords.end()) return false;
    if (end == std::string::npos) return true;
    start = end + 2;
  }
}

std::string LastNameComponent(const std::string& s) {
  size_t at = s.rfind("::");
  return at == std::string::npos ? s : s.substr(at + 2);
}

LoadOptions CommandLineLoadOptions(const std::string& root, bool allow_outside_root,
                                   const std::vector<std::string>& python_path,
                                   const std::vector<std::string>& include_dirs) {
  LoadOptions load;
  load.project_root = root;
  load.allow_outside_root = allow_outside_root;
  load.python_path = python_path;
  for (const std::string& dir : include_dirs) {
    std::error_code ec;
    load.include_dirs.push_back(fs::absolute(dir, ec).lexically_normal().generic_string());
  }
  return load;
}

std::optional<Package> LoadPackage(const std::string& path, const LoadOptions& options, Diagnostics& diag) {
  FileReader r(path, options, diag);
  r.set_root(ProjectRoot(path, options));
  std::optional<YAML::Node> root = r.Parse();
  if (!root) return std::nullopt;
  if (!r.CheckMap(*root, "the package file",
                  {"package", "prefix", "archs", "ptx", "nvcc_flags", "allow_debug", "max_specializations",
                   "batch", "compress", "python_path", "include_dirs", "assume", "kernels", "tuning"},
                  {"package", "archs", "kernels"}))
    return std::nullopt;
  Package pkg;
  pkg.manifest_path = path;
  pkg.python_path = options.python_path;
  pkg.include_dirs = options.include_dirs;
  std::vector<std::pair<std::string, YAML::Node>> kernel_files;
  YAML::Node tuning(YAML::NodeType::Undefined);
  ReadPackageFields(r, *root, pkg, kernel_files, tuning);
  if (pkg.prefix.empty()) pkg.prefix = pkg.name;
  if (!options.archs_override.empty()) pkg.archs = options.archs_override;
  if (diag.HasErrors()) return std::nullopt;

  std::vector<std::unique_ptr<KernelReader>> readers = ReadKernels(r, pkg, kernel_files);
  if (diag.HasErrors()) return std::nullopt;
  std::optional<std::vector<TritonSourceInfo>> sources = DescribeTriton(readers, options, diag);
  if (!sources) return std::nullopt;
  std::map<std::string, SourceLoc> kernel_names;
  size_t next_source = 0;
  for (auto& reader : readers) {
    const TritonSourceInfo* source = nullptr;
    if (reader->kernel().language == Language::kTriton && next_source < sources->size())
      source = &(*sources)[next_source++];
    std::optional<Kernel> kernel = reader->Finish(source);
    if (!kernel) continue;
    if (!options.archs_override.empty()) kernel->archs = options.archs_override;
    if (options.batch_override > 0) kernel->batch = options.batch_override;
    auto [it, inserted] = kernel_names.emplace(kernel->name, kernel->loc);
    if (!inserted) {
      diag.Error(kernel->loc, "duplicate kernel '" + kernel->name + "' (first defined at " + it->second.ToString() +
                                  ")");
      continue;
    }
    pkg.kernels.push_back(std::move(*kernel));
  }
  if (diag.HasErrors()) return std::nullopt;
  // The tuning files name kernels and their tune: sections.
  if (tuning.IsDefined()) ReadTunings(r, tuning, pkg);
  if (diag.HasErrors()) return std::nullopt;
  return pkg;
}

}  // namespace kpack
