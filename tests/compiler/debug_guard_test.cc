// Debug kernels: which flags make one, how the manifest marks it, and the
// exact error a release build gives.
#include <catch2/catch.hpp>

#include "debug_guard.h"
#include "test_util.h"

using kpack::testing::kKernel;
using kpack::testing::kPackage;
using kpack::testing::ScratchDir;

namespace {

std::optional<std::string> Flag(const std::vector<std::string>& flags) {
  std::optional<kpack::DebugFlag> f = kpack::FindDebugFlag(flags);
  return f ? std::optional<std::string>(std::to_string(f->index) + " " + f->text) : std::nullopt;
}

// Loads package.yaml + k.yaml and runs the release guard; the diagnostics.
std::string ReleaseErrors(const std::string& kernel, const std::string& package = kPackage,
                          std::optional<kpack::Package>* out = nullptr) {
  ScratchDir dir;
  dir.Write("package.yaml", package);
  dir.Write("k.yaml", kernel);
  dir.Write("va.cuh", "// template\n");
  kpack::Diagnostics diag;
  std::optional<kpack::Package> pkg = kpack::LoadPackage("package.yaml", {}, diag);
  REQUIRE(diag.Text() == "");
  REQUIRE(pkg);
  kpack::RefuseDebugKernels(*pkg, diag);
  if (out) *out = std::move(pkg);
  return diag.Text();
}

}  // namespace

TEST_CASE("debug flags") {
  CHECK(Flag({}) == std::nullopt);
  CHECK(Flag({"-lineinfo", "-O3", "--use_fast_math"}) == std::nullopt);
  CHECK(Flag({"-Xptxas", "-O3"}) == std::nullopt);
  CHECK(Flag({"-lineinfo", "-G"}) == "1 -G");
  CHECK(Flag({"--device-debug"}) == "0 --device-debug");
  CHECK(Flag({"-O0"}) == "0 -O0");
  CHECK(Flag({"-O", "0"}) == "0 -O 0");
  CHECK(Flag({"-g"}) == "0 -g");
  CHECK(Flag({"-Xptxas", "-O0"}) == "0 -Xptxas -O0");
  CHECK(Flag({"--ptxas-options=-O0"}) == "0 --ptxas-options=-O0");
  CHECK(Flag({"-dopt", "0"}) == "0 -dopt 0");
  CHECK(kpack::BuildMode({"-G"}) == "debug");
  CHECK(kpack::BuildMode({"-lineinfo"}) == "release");
}

TEST_CASE("a release build refuses a debug flag at its position") {
  CHECK(ReleaseErrors(std::string(kKernel) + "nvcc_flags: [-lineinfo, -G]\n") ==
        "k.yaml:15:25: error: kernel 'vector_add' is a debug build (nvcc flag -G) and this is a release build; "
        "debug kernels run many times slower. Remove it, or add 'allow_debug: true' to the manifest to ship a "
        "debug kernel\n");
  // Inherited from the package: the package file's position.
  CHECK(ReleaseErrors(kKernel, "package: demo\narchs: [sm_80]\nnvcc_flags: [-Xptxas, -O0]\nkernels: [k.yaml]\n") ==
        "package.yaml:3:14: error: kernel 'vector_add' is a debug build (nvcc flag -Xptxas -O0) and this is a "
        "release build; debug kernels run many times slower. Remove it, or add 'allow_debug: true' to the "
        "manifest to ship a debug kernel\n");
}

TEST_CASE("debug: true makes a debug kernel; CUDA gets -G") {
  std::optional<kpack::Package> pkg;
  CHECK(ReleaseErrors(std::string(kKernel) + "debug: true\n", kPackage, &pkg) ==
        "k.yaml:15:1: error: kernel 'vector_add' is a debug build (debug: true) and this is a release build; "
        "debug kernels run many times slower. Remove it, or add 'allow_debug: true' to the manifest to ship a "
        "debug kernel\n");
  REQUIRE(pkg->kernels.size() == 1);
  CHECK(pkg->kernels[0].debug);
  CHECK(pkg->kernels[0].nvcc_flags == std::vector<std::string>{"-G"});
  CHECK(std::string(pkg->kernels[0].BuildMode()) == "debug");
}

TEST_CASE("allow_debug in the kernel or the package ships a debug kernel") {
  std::optional<kpack::Package> pkg;
  CHECK(ReleaseErrors(std::string(kKernel) + "nvcc_flags: [-G]\nallow_debug: true\n", kPackage, &pkg) == "");
  CHECK(std::string(pkg->kernels[0].BuildMode()) == "debug");
  CHECK(ReleaseErrors(std::string(kKernel) + "nvcc_flags: [-G]\n",
                      "package: demo\narchs: [sm_80]\nallow_debug: true\nkernels: [k.yaml]\n") == "");
  // Allowed but not debug: a release kernel.
  CHECK(ReleaseErrors(std::string(kKernel) + "allow_debug: true\n", kPackage, &pkg) == "");
  CHECK(std::string(pkg->kernels[0].BuildMode()) == "release");
  CHECK(kpack::testing::LoadErrors(std::string(kKernel) + "allow_debug: yes please\n") ==
        "k.yaml:15:14: error: allow_debug must be true or false\n");
}

TEST_CASE("a debug cubin recorded as release is an error") {
  kpack::Kernel k;
  k.name = "scale";
  k.loc = kpack::SourceLoc{"k.yaml", 1, 9};
  kpack::Specialization s;
  s.kernel = &k;
  s.name = "scale_f32";
  kpack::Plan plan;
  plan.units.resize(2);
  for (kpack::Unit& u : plan.units) u.spec = &s;
  plan.units[0].arch = kpack::Arch{80};
  plan.units[1].arch = kpack::Arch{90};
  std::vector<kpack::UnitFacts> facts(2);
  kpack::Diagnostics diag;
  kpack::CheckRecordedBuildModes(plan, facts, diag);
  CHECK(diag.Text() == "");
  facts[1].debug_code = true;
  kpack::CheckRecordedBuildModes(plan, facts, diag);
  CHECK(diag.Text() ==
        "k.yaml:1:9: error: specialization scale_f32 (sm_90) is debug code (the cubin has device debug "
        "information or was built with ptxas -O0 or -g), but kernel 'scale' would be recorded as a release "
        "build; add 'debug: true' to its manifest\n");
  kpack::Diagnostics none;
  k.debug = true;
  kpack::CheckRecordedBuildModes(plan, facts, none);
  CHECK(none.Text() == "");
}
