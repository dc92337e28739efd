// The tma package (tests/compiler/manifests/tma): host tensor descriptors
// of a Triton and a CUDA kernel, Triton's clusters (num_ctas) and global
// scratch, loaded with the facts triton_helper.py's describe gave
// (describe.json, replayed: no Python runs here), and the header and
// launcher kpack generates for them against golden files, with the
// launches Triton decided for the package (tests/e2e/tma.sh builds it for
// real).  tests/runtime/tma_launch_test.cc runs that launcher against the
// fake driver.
//
// After an intended change, rerun with KPACK_UPDATE_GOLDEN=1 and review the
// diff of tests/compiler/golden/tma*.  After a change of a kernel's source,
// record describe.json again as heur_golden_test.cc says, for copy_tiles
// (copy_triton.py) and add_one (scratch_triton.py).
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "codegen.h"
#include "expand.h"
#include "golden_util.h"

namespace {

using kpack::testing::CompareGolden;
using kpack::testing::DataDir;

using Tma = kpack::testing::RecordedPackage;

Tma LoadTma() {
  return kpack::testing::LoadRecordedPackage("manifests/tma/kpack.yaml", "manifests/tma/describe.json",
                                             {"copy_tiles", "add_one"});
}

}  // namespace

// tests/runtime/tma_blobs.c relies on this order.
TEST_CASE("the tma package's specializations, in the order of their fatbins") {
  Tma t = LoadTma();
  std::vector<std::string> names;
  for (const kpack::Specialization& s : t.specs) names.push_back(s.Stem());
  CHECK(names == std::vector<std::string>{"copy_triton_bf16_m64_n128_add_one_w4_ctas1",
                                          "copy_triton_bf16_m64_n128_add_one_w4_ctas2",
                                          "copy_triton_f32_m64_n128_add_one_w4_ctas1",
                                          "copy_triton_f32_m64_n128_add_one_w4_ctas2", "scratch_triton_f16_m64_n64",
                                          "copy_cuda_f32_m32_n64"});
}

TEST_CASE("the tma package's header and launchers match the golden files") {
  Tma t = LoadTma();
  // The CUDA kernel's symbol, as the check pass reads it from the cubin.
  t.specs[5].symbol = "_Z8copy_boxIfLi32ELi64EEv14CUtensorMap_stPT_ii";
  kpack::CodegenOptions options{"manifests/tma/kpack.yaml", "tma.h"};
  CompareGolden("tma.h", kpack::GenerateHeader(*t.pkg, t.specs, options));
  // What Triton 3.6 decided for sm_90a (kpack build's inventory of this
  // package): the box is cut to the 128-byte swizzle span, and per CTA of
  // a cluster; add_one needs 128 bytes of global scratch per program.
  auto launch = [](uint32_t shared, uint32_t ctas, std::vector<kpack::DescLayout> descs, uint32_t scratch) {
    kpack::TritonLaunch l;
    l.shared = shared;
    l.num_ctas = ctas;
    l.descs = std::move(descs);
    l.global_scratch = {scratch, scratch ? 128u : 1u};
    return l;
  };
  const kpack::DescLayout bf16{9, 2, {64, 64}, 3}, bf16_half{9, 2, {32, 64}, 3}, f32{7, 4, {64, 32}, 3},
      f32_half{7, 4, {32, 32}, 3};
  std::map<const kpack::Specialization*, kpack::TritonLaunch> triton = {
      {&t.specs[0], launch(32768, 1, {bf16, bf16}, 0)},
      {&t.specs[1], launch(16384, 2, {bf16_half, bf16_half}, 0)},
      {&t.specs[2], launch(32768, 1, {f32, f32}, 0)},
      {&t.specs[3], launch(16384, 2, {f32_half, f32_half}, 0)},
      {&t.specs[4], launch(8200, 1, {}, 128)}};
  CompareGolden("tma_launch.c", kpack::GenerateLauncherSource(*t.pkg, t.specs, options, triton));
}
