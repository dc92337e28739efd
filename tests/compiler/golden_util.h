// golden_util.h - the golden files of generated code (tests/compiler/golden/):
// compare, or rewrite them with KPACK_UPDATE_GOLDEN=1 after an intended
// change (then review the diff).
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>
#include <string>

#include "codegen.h"
#include "fs_util.h"

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

// What Triton decided for a build, as a golden test makes it up: its
// shared memory and warps, no cluster, scratch or descriptors.
inline kpack::TritonLaunch TritonLaunchWith(uint32_t shared, uint32_t num_warps) {
  kpack::TritonLaunch l;
  l.shared = shared;
  l.num_warps = num_warps;
  return l;
}

}  // namespace kpack::testing
