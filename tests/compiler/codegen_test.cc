// Generated code against golden files.  After an intended change, rerun
// with KPACK_UPDATE_GOLDEN=1 and review the diff of tests/compiler/golden/.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "codegen.h"
#include "expand.h"
#include "fs_util.h"
#include "manifest.h"

namespace {

std::string DataDir() {
  const char* dir = std::getenv("KPACK_TEST_DATA");
  REQUIRE(dir != nullptr);
  return dir;
}

void CompareGolden(const std::string& name, const std::string& actual) {
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

}  // namespace

TEST_CASE("generated header, launchers and embedding match the golden files") {
  std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(DataDir());
  kpack::Diagnostics diag;
  auto pkg = kpack::LoadPackage("manifests/golden/kpack.yaml", {}, diag);
  REQUIRE(diag.Text() == "");
  auto specs = kpack::Expand(*pkg, diag);
  REQUIRE(diag.Text() == "");
  std::filesystem::current_path(previous);

  kpack::CodegenOptions options{"manifests/golden/kpack.yaml", "gk.h"};
  CompareGolden("gk.h", kpack::GenerateHeader(*pkg, specs, options));
  // rows_f32_b1024's variants need other amounts of shared memory than it
  // does (Triton may decide so), its i32 variant the same: the launcher
  // passes what the build it launches needs.  Specs: scale (3), mask (2),
  // rows f16, rows f32, then the variants of each: aligned, i32, aligned i32.
  REQUIRE(specs.size() == 13);
  REQUIRE((specs[10].aligned && !specs[10].narrow && specs[10].base == 6));
  REQUIRE((!specs[11].aligned && specs[11].narrow && specs[11].base == 6));
  REQUIRE((specs[12].aligned && specs[12].narrow && specs[12].base == 6));
  std::map<const kpack::Specialization*, kpack::TritonLaunch> triton = {
      {&specs[5], {0, 4, 2}},     {&specs[7], {0, 4, 2}},      {&specs[8], {0, 4, 2}},
      {&specs[9], {0, 4, 2}},     {&specs[6], {512, 4, 2}},    {&specs[10], {2048, 4, 2}},
      {&specs[11], {512, 4, 2}},  {&specs[12], {1024, 4, 2}}};
  CompareGolden("gk_launch.c", kpack::GenerateLauncherSource(*pkg, specs, options, triton));
  std::vector<std::string> paths, hashes;
  for (const auto& s : specs) {
    paths.push_back("work/fatbins/" + s.Stem() + ".fatbin");
    hashes.push_back(kpack::HashHex(s.Stem()));
  }
  CompareGolden("gk_fatbins.S", kpack::GenerateEmbedAsm(*pkg, paths, hashes));
}

TEST_CASE("generation is deterministic") {
  std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(DataDir());
  kpack::Diagnostics diag;
  auto a = kpack::LoadPackage("manifests/golden/kpack.yaml", {}, diag);
  auto b = kpack::LoadPackage("manifests/golden/kpack.yaml", {}, diag);
  std::filesystem::current_path(previous);
  auto sa = kpack::Expand(*a, diag);
  auto sb = kpack::Expand(*b, diag);
  kpack::CodegenOptions options{"x.yaml", "gk.h"};
  CHECK(kpack::GenerateHeader(*a, sa, options) == kpack::GenerateHeader(*b, sb, options));
  CHECK(kpack::GenerateLauncherSource(*a, sa, options) == kpack::GenerateLauncherSource(*b, sb, options));
}
