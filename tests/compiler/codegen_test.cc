// Generated code against golden files.  After an intended change, rerun
// with KPACK_UPDATE_GOLDEN=1 and review the diff of tests/compiler/golden/.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "codegen.h"
#include "expand.h"
#include "fs_util.h"
#include "golden_util.h"
#include "manifest.h"

namespace {

using kpack::testing::CompareGolden;
using kpack::testing::DataDir;

// 4 warps, `shared` bytes.
kpack::TritonLaunch Launch(uint32_t shared) { return kpack::testing::TritonLaunchWith(shared, 4); }

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
      {&specs[5], Launch(0)},    {&specs[7], Launch(0)},     {&specs[8], Launch(0)},
      {&specs[9], Launch(0)},    {&specs[6], Launch(512)},   {&specs[10], Launch(2048)},
      {&specs[11], Launch(512)}, {&specs[12], Launch(1024)}};
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
