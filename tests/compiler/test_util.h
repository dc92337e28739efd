// test_util.h - scratch directories with manifest files, for compiler tests.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "diagnostics.h"
#include "manifest.h"

namespace kpack::testing {

// A fresh directory under $TMPDIR, removed when the object dies.  The
// process changes into it, so file names in messages are short and exact.
class ScratchDir {
 public:
  ScratchDir() : previous_(std::filesystem::current_path()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kpack-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
    std::filesystem::current_path(path_);
  }
  ~ScratchDir() {
    std::filesystem::current_path(previous_);
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  void Write(const std::string& name, const std::string& text) const {
    std::filesystem::path p = std::filesystem::path(path_) / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  }
  const std::string& path() const { return path_; }

 private:
  std::filesystem::path previous_;
  std::string path_;
};

// A valid package file listing k.yaml.
inline const char* kPackage = "package: demo\narchs: [sm_80, sm_90]\nkernels: [k.yaml]\n";

// A valid kernel manifest; tests replace parts of it.
inline const char* kKernel =
    "kernel: vector_add\n"
    "source: va.cuh\n"
    "entry: va\n"
    "constexprs:\n"
    "  - {name: T, type: dtype, values: [f32, f16]}\n"
    "  - {name: BLOCK, type: int, values: [128, 256], tag: b}\n"
    "params:\n"
    "  - {name: x, type: const T*}\n"
    "  - {name: y, type: const T*}\n"
    "  - {name: out, type: T*}\n"
    "  - {name: n, type: i64}\n"
    "launch:\n"
    "  grid: \"cdiv(n, BLOCK)\"\n"
    "  block: [BLOCK]\n";

// Loads package.yaml + k.yaml (+ va.cuh) from a fresh scratch directory and
// returns the diagnostics text ("" when it loaded).
inline std::string LoadErrors(const std::string& kernel, const std::string& package = kPackage) {
  ScratchDir dir;
  dir.Write("package.yaml", package);
  dir.Write("k.yaml", kernel);
  dir.Write("va.cuh", "// template\n");
  Diagnostics diag;
  LoadPackage("package.yaml", LoadOptions{}, diag);
  return diag.Text();
}

// `text` with the first `from` replaced by `to`; a `from` that is not there
// throws, which fails the test (a variation that changes nothing would let
// the test pass for the wrong reason).
inline std::string Replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  if (at == std::string::npos) throw std::logic_error("Replace: '" + from + "' is not in the text");
  return text.replace(at, from.size(), to);
}

}  // namespace kpack::testing
