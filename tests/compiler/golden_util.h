// golden_util.h - the golden files of generated code (tests/compiler/golden/):
// compare, or rewrite them with KPACK_UPDATE_GOLDEN=1 after an intended
// change (then review the diff).
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "codegen.h"
#include "expand.h"
#include "fake_describer.h"
#include "fs_util.h"
#include "manifest.h"

namespace kpack::testing {

// tests/compiler, where meson's test() points KPACK_TEST_DATA.
inline std::string DataDir() {
  const char* dir = std::getenv("KPACK_TEST_DATA");
  REQUIRE(dir != nullptr);
  return dir;
}

inline void CompareGolden(const std::string& name, const std::string& actual) {
  std::string path = DataDir() + "/golden/" + name;
  if (std::getenv("KPACK_UPDATE_GOLDEN")) {
    REQUIRE(kpack::WriteFileAtomic(path, actual) == "");
    return;
  }
  std::optional<std::string> expected = kpack::ReadFile(path);
  REQUIRE(expected);
  INFO("golden file " << path << " differs; rerun with KPACK_UPDATE_GOLDEN=1 if the change is intended");
  CHECK(actual == *expected);
}

// A package of tests/compiler/manifests loaded and expanded as kpack build
// would with Triton, the describe answer of its Triton kernels replayed from
// `describe_json` (recorded with triton_helper.py describe; no Python runs).
struct RecordedPackage {
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;
};

inline RecordedPackage LoadRecordedPackage(const std::string& package_yaml, const std::string& describe_json,
                                           std::vector<std::string> entries) {
  std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(DataDir());
  std::optional<std::string> answer = kpack::ReadFile(describe_json);
  REQUIRE(answer);
  RecordedDescriber describer(*answer, std::move(entries));
  kpack::LoadOptions options;
  options.describer = &describer;
  kpack::Diagnostics diag;
  RecordedPackage out;
  out.pkg = kpack::LoadPackage(package_yaml, options, diag);
  std::filesystem::current_path(previous);
  REQUIRE(diag.Text() == "");
  out.specs = kpack::Expand(*out.pkg, diag);
  REQUIRE(diag.Text() == "");
  return out;
}

// What Triton decided for a build, as a golden test makes it up: its
// shared memory and warps, no cluster, scratch or descriptors.
inline kpack::TritonLaunch TritonLaunchWith(uint32_t shared, uint32_t num_warps) {
  kpack::TritonLaunch l;
  l.shared = shared;
  l.num_warps = num_warps;
  return l;
}

}  // namespace kpack::testing
