// manifest_fuzz.cc - libFuzzer target: manifest text through load -> expand
// -> plan -> generate, entirely in memory (LoadOptions::files), under ASan
// and UBSan.  Build and run: tests/fuzz/README.md.
//
// Input: the kernel manifest k.yaml, optionally followed by more files, each
// introduced by a line "#file: NAME" (a package file listing tuning files
// under tuning:, and the tuning files, fuzz those too).  kpack.yaml (the package file), va.cuh
// and va.py exist unless the input replaces them, so most inputs reach the
// kernel reader; an input can also replace the package file to fuzz it.
//
// Besides crashes and sanitizer reports, the target aborts when the pipeline
// breaks a promise: a refused manifest must give at least one located error
// and nothing else; an accepted one must give names that are C identifiers
// and generated text free of NUL bytes.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "codegen.h"
#include "diagnostics.h"
#include "expand.h"
#include "fs_util.h"
#include "manifest.h"
#include "plan.h"
#include "tuning_reader.h"

namespace {

constexpr std::string_view kFileMarker = "#file: ";

std::map<std::string, std::string> SplitFiles(std::string_view input) {
  std::map<std::string, std::string> files = {
      {"kpack.yaml", "package: fz\narchs: [sm_80, sm_90]\nkernels: [k.yaml]\n"},
      {"va.cuh", "// template\n"},
      {"va.py", "# kernel\n"},
  };
  std::string name = "k.yaml";
  size_t at = 0;
  while (true) {
    size_t next = input.find(std::string("\n") + std::string(kFileMarker), at);
    files[name] = std::string(input.substr(at, next == std::string_view::npos ? input.npos : next + 1 - at));
    if (next == std::string_view::npos) break;
    size_t name_at = next + 1 + kFileMarker.size();
    size_t eol = input.find('\n', name_at);
    name = std::string(input.substr(name_at, eol == std::string_view::npos ? input.npos : eol - name_at));
    if (eol == std::string_view::npos) break;
    at = eol + 1;
  }
  return files;
}

[[noreturn]] void Broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "manifest_fuzz: broken promise: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// Whether `line` is "FILE:LINE:COL: error: ..." with LINE and COL >= 1.
bool Located(const std::string& line) {
  size_t error = line.find(": error: ");
  if (error == std::string::npos) return false;
  size_t col_colon = line.rfind(':', error - 1);
  if (col_colon == std::string::npos || col_colon == 0) return false;
  size_t line_colon = line.rfind(':', col_colon - 1);
  if (line_colon == std::string::npos || line_colon == 0) return false;
  auto number = [&](size_t from, size_t to) {
    if (from >= to) return false;
    for (size_t i = from; i < to; ++i)
      if (line[i] < '0' || line[i] > '9') return false;
    return line[from] != '0';
  };
  return number(line_colon + 1, col_colon) && number(col_colon + 1, error);
}

// A refusal: at least one error, and every line a located error.
void CheckDiagnostics(const kpack::Diagnostics& diag) {
  if (!diag.HasErrors()) Broken("refused without an error", diag.Text());
  for (const std::string& line : diag.lines())
    if (!Located(line)) Broken("a diagnostic that is not file:line:col: error: ...", line);
}

bool IdentifierCharacters(const std::string& s) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (s.empty() || !alpha(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

void CheckOutput(const char* what, const std::string& text) {
  if (text.find('\0') != std::string::npos) Broken("a NUL byte in generated output", what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::map<std::string, std::string> files =
      SplitFiles(std::string_view(reinterpret_cast<const char*>(data), size));
  kpack::LoadOptions options;
  options.files = &files;
  kpack::Diagnostics diag;
  std::optional<kpack::Package> pkg = kpack::LoadPackage("kpack.yaml", options, diag);
  if (!pkg) {
    CheckDiagnostics(diag);
    return 0;
  }
  if (diag.HasErrors()) Broken("loaded despite errors", diag.Text());
  for (const kpack::Kernel& k : pkg->kernels) {
    if (!kpack::IsCIdentifier(k.name) || !kpack::IsCIdentifier(k.entry)) Broken("a kernel name", k.name);
    for (const kpack::Param& p : k.params)
      if (!kpack::IsCIdentifier(p.name)) Broken("a param name", p.name);
  }
  // The product limit is the manifest's to raise; keep each input fast.
  pkg->max_specializations = std::min<uint64_t>(pkg->max_specializations, 256);
  std::vector<kpack::Specialization> specs = kpack::Expand(*pkg, diag);
  if (diag.HasErrors()) {
    CheckDiagnostics(diag);
    return 0;
  }
  // Tuning files (an input's "#file: kpack.yaml" lists them under
  // tuning:): stale ones as errors, then, on a copy, as warnings with their
  // tables dropped; the tables that stand go into the launchers below.
  kpack::Package lenient = *pkg;
  std::vector<kpack::Specialization> lenient_specs = kpack::Expand(lenient, diag);
  kpack::Diagnostics lenient_diag;
  kpack::CheckTunings(lenient, lenient_specs, true, lenient_diag);
  kpack::CheckTunings(*pkg, specs, false, diag);
  if (diag.HasErrors()) {
    CheckDiagnostics(diag);
    return 0;
  }
  kpack::Plan plan = kpack::MakePlan(specs, kpack::ToolVersions{"nvcc fuzz", "triton fuzz"});
  std::vector<std::string> paths, hashes;
  for (const kpack::Specialization& s : specs) {
    // Composed names may pass IsCIdentifier's 128-character cap (C has no
    // limit), but must be identifier characters that start with a letter.
    if (!IdentifierCharacters(s.launcher) || !IdentifierCharacters(s.symbol)) Broken("a launcher name", s.launcher);
    paths.push_back("fatbins/" + s.name + ".fatbin");
    hashes.push_back(kpack::HashHex(s.name));
  }
  for (const kpack::Unit& u : plan.units) CheckOutput("a translation unit", u.source);
  kpack::CodegenOptions gen{"kpack.yaml", "fz.h"};
  CheckOutput("the header", kpack::GenerateHeader(*pkg, specs, gen));
  CheckOutput("the launchers", kpack::GenerateLauncherSource(*pkg, specs, gen));
  CheckOutput("the embedding assembler", kpack::GenerateEmbedAsm(*pkg, paths, hashes));
  return 0;
}
