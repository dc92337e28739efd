// The tuning harness's tables (tuner_gen.cc) for the tuner package
// (tests/compiler/manifests/tuner): the layout of combinations, candidates
// and shapes that kpack tune and the tuning file share, and the generated C
// against a golden file (golden/tuner_tables.c).  tests/e2e/tune.sh
// compiles and runs a harness.  After an intended change, rerun with
// KPACK_UPDATE_GOLDEN=1 and review the diff of tests/compiler/golden/.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "expand.h"
#include "fs_util.h"
#include "golden_util.h"
#include "manifest.h"
#include "test_util.h"
#include "tune_hash.h"
#include "tuner_gen.h"
#include "version.h"

using kpack::testing::kKernel;
using kpack::testing::kPackage;
using kpack::testing::ScratchDir;

namespace {

using kpack::testing::CompareGolden;
using kpack::testing::DataDir;

// The tuner package, loaded and expanded from the test data directory.
struct Loaded {
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;
};

Loaded LoadTunerPackage() {
  std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(DataDir() + "/manifests/tuner");
  kpack::Diagnostics diag;
  Loaded l;
  l.pkg = kpack::LoadPackage("kpack.yaml", {}, diag);
  std::filesystem::current_path(previous);
  REQUIRE(diag.Text() == "");
  l.specs = kpack::Expand(*l.pkg, diag);
  REQUIRE(diag.Text() == "");
  return l;
}

}  // namespace

TEST_CASE("tuner layout: combinations, candidates, what was built, shapes") {
  Loaded l = LoadTunerPackage();
  std::vector<kpack::TuneLayout> layouts = kpack::TuneLayouts(*l.pkg, l.specs);
  REQUIRE(layouts.size() == 2);  // plain has no tune: section

  const kpack::TuneLayout& norm = layouts[0];
  CHECK(norm.kernel->name == "norm");
  std::vector<std::string> combos, candidates;
  for (size_t m = 0; m < norm.combos.size(); ++m) combos.push_back(norm.ComboLabel(m));
  for (size_t c = 0; c < norm.candidates.size(); ++c) candidates.push_back(norm.CandidateLabel(c));
  CHECK(combos == std::vector<std::string>{"T=f32", "T=f16", "T=bf16"});
  CHECK(candidates == std::vector<std::string>{"BLOCK=128 VEC=true", "BLOCK=128 VEC=false", "BLOCK=256 VEC=true",
                                               "BLOCK=256 VEC=false"});
  // exclude {T: bf16, BLOCK: 256}
  for (size_t c = 0; c < 4; ++c) {
    CHECK(norm.built[0][c] != nullptr);
    CHECK(norm.built[1][c] != nullptr);
    CHECK((norm.built[2][c] != nullptr) == (c < 2));
  }
  CHECK(norm.built[1][2]->name == "norm_f16_b256_vec");
  CHECK(norm.shapes == 4);
  CHECK(norm.ShapeLabel(0) == "rows=1 cols=512");
  CHECK(norm.ShapeLabel(1) == "rows=1 cols=8192");  // the last key varies fastest
  CHECK(norm.ShapeLabel(2) == "rows=4096 cols=512");
  CHECK(norm.ShapeKey(3) == std::vector<int64_t>{4096, 8192});
  // Probes: one per key between its two grid values, numbered after the grid.
  CHECK(norm.probe_axes == std::vector<std::vector<int64_t>>{{80}, {2064}});
  CHECK(norm.probes == 1);
  CHECK(norm.AllShapes() == 5);
  CHECK(norm.ShapeLabel(4) == "rows=80 cols=2064");
  CHECK_FALSE(norm.unaligned_twin);  // a CUDA kernel: one variant
  CHECK(norm.hash == kpack::TuneManifestHash(*norm.kernel, {norm.built[0][0], norm.built[0][1], norm.built[0][2],
                                                            norm.built[0][3], norm.built[1][0], norm.built[1][1],
                                                            norm.built[1][2], norm.built[1][3], norm.built[2][0],
                                                            norm.built[2][1]}));

  const kpack::TuneLayout& gather = layouts[1];
  CHECK(gather.combos.size() == 1);
  CHECK(gather.ComboLabel(0) == "");
  CHECK(gather.CandidateLabel(1) == "TILE=64");
  CHECK(gather.shapes == 2);
  CHECK(gather.probe_axes == std::vector<std::vector<int64_t>>{{10000}});
  CHECK(gather.ShapeKey(2) == std::vector<int64_t>{10000});
}

TEST_CASE("tuner tables of the tuner package (golden), deterministic") {
  Loaded l = LoadTunerPackage();
  kpack::CodegenOptions options{"tests/compiler/manifests/tuner/kpack.yaml", "tp.h"};
  std::string text = kpack::GenerateTuner(*l.pkg, l.specs, options);
  CompareGolden("tuner_tables.c", text);
  CHECK(kpack::GenerateTuner(*l.pkg, l.specs, options) == text);
  // The dispatcher call, with pdl 0, the candidate's and combination's
  // constexprs from their tables, and each param in its C type.
  CHECK(text.find("return tp_norm(stream, 0, kpack_tune_k0_axis0[kpack_combo], kpack_tune_k0_axis1[kpack_candidate], "
                  "kpack_tune_k0_axis2[kpack_candidate], kpack_p[0], kpack_p[1], kpack_p[2], kpack_p[3], "
                  "(int64_t)kpack_v[4], (int32_t)kpack_v[5], (uint16_t)kpack_v[6], (int64_t)kpack_v[7], "
                  "(float)kpack_v[8], kpack_tune_to_f16(kpack_v[9]));") != std::string::npos);
  CHECK(
      text.find(
          "static const kpack_dtype kpack_tune_k0_axis0[3] = {KPACK_DTYPE_F32, KPACK_DTYPE_F16, KPACK_DTYPE_BF16};") !=
      std::string::npos);
  CHECK(text.find("static const int kpack_tune_k0_axis2[4] = {1, 0, 1, 0};") != std::string::npos);  // VEC, a bool
  CHECK(text.find("*kpack_what = \"tune param half_cols = cols / 2 is beyond u16\"") != std::string::npos);
  CHECK(text.find("\"plain\"") == std::string::npos);
  // The probe values per key, and the kernel's entries: probe tables after
  // the grid, no aligned test (CUDA kernels have one variant), no buffer
  // passed off its alignment.
  CHECK(text.find("static const int64_t kpack_tune_k0_probes_1[1] = {2064};\n"
                  "static const int kpack_tune_k0_probe_sizes[2] = {1, 1};\n"
                  "static const int64_t *const kpack_tune_k0_probes[2] = {kpack_tune_k0_probes_0, "
                  "kpack_tune_k0_probes_1};\n") != std::string::npos);
  CHECK(text.find("kpack_tune_k1_grid, kpack_tune_k1_probe_sizes, kpack_tune_k1_probes, 1, ") != std::string::npos);
  CHECK(text.find("kpack_tune_k1_launch_auto, NULL}") != std::string::npos);
  CHECK(text.find("_aligned") == std::string::npos);
  CHECK(text.find("{\"offsets\", 0, KPACK_TUNE_FILL_STEP, 0}") != std::string::npos);
}

TEST_CASE("tuner tables of a Triton kernel with an aligned variant: the launcher's test, twin offsets, probes") {
  ScratchDir dir;
  dir.Write("kpack.yaml", "package: tri\nprefix: tt\narchs: [sm_90]\nkernels: [rows.yaml, one.yaml]\n");
  // x and out divisibility: auto (offset in the twin), bias fixed at 16
  // (not offset), n an i32 divisibility: auto scalar, unit equal_to_1: auto.
  dir.Write("rows.yaml",
            "kernel: rows\nlanguage: triton\nsource: rows.py\nentry: scale_rows\nvariants: each\n"
            "constexprs:\n"
            "  - {name: T, type: dtype, values: [f16]}\n"
            "  - {name: BLOCK, type: int, values: [1024, 4096], tag: b, auto: \"4096\"}\n"
            "params:\n"
            "  - {name: x, type: const T*, divisibility: auto}\n"
            "  - {name: bias, type: const f32*, divisibility: 16}\n"
            "  - {name: out, type: T*, divisibility: auto}\n"
            "  - {name: n, type: i32, divisibility: auto}\n"
            "  - {name: unit, type: i64, equal_to_1: auto}\n"
            "launch:\n  grid: [\"cdiv(n, BLOCK)\"]\n"
            "tune:\n  key: [n]\n  shapes: {n: [1024, 16384, 16385]}\n  params: {unit: 1}\n"
            "  buffers: {x: n, bias: n, out: n}\n");
  // Only equal_to_1: auto: an aligned variant, but no buffer to offset.
  dir.Write("one.yaml",
            "kernel: one\nlanguage: triton\nsource: rows.py\nentry: scale_rows\nvariants: each\n"
            "constexprs:\n  - {name: BLOCK, type: int, values: [1024], tag: b, auto: \"1024\"}\n"
            "params:\n  - {name: x, type: f32*}\n  - {name: n, type: i64, equal_to_1: auto}\n"
            "launch:\n  grid: [\"cdiv(n, BLOCK)\"]\n"
            "tune:\n  key: [n]\n  shapes: {n: [1, 2]}\n  buffers: {x: n}\n");
  dir.Write("rows.py", "# never compiled\n");
  kpack::Diagnostics diag;
  std::optional<kpack::Package> pkg = kpack::LoadPackage("kpack.yaml", {}, diag);
  REQUIRE(diag.Text() == "");
  std::vector<kpack::Specialization> specs = kpack::Expand(*pkg, diag);
  REQUIRE(diag.Text() == "");
  std::vector<kpack::TuneLayout> layouts = kpack::TuneLayouts(*pkg, specs);
  REQUIRE(layouts.size() == 2);
  CHECK(layouts[0].unaligned_twin);
  CHECK(layouts[0].probe_axes == std::vector<std::vector<int64_t>>{{4112}});  // none between 16384 and 16385
  CHECK_FALSE(layouts[1].unaligned_twin);
  CHECK(layouts[1].probe_axes == std::vector<std::vector<int64_t>>{{}});
  CHECK(layouts[1].probes == 0);

  std::string text = kpack::GenerateTuner(*pkg, specs, {"kpack.yaml", "tri.h"});
  CHECK(kpack::GenerateTuner(*pkg, specs, {"kpack.yaml", "tri.h"}) == text);
  // The launcher's own test, over the params it names in their C types.
  CHECK(text.find("/* The launcher's aligned variant runs when every divisibility: auto param (x, out and n) is a "
                  "multiple of 16 and every equal_to_1 param (unit) is 1. */\n"
                  "static int kpack_tune_k0_aligned(const int64_t *kpack_v, void *const *kpack_p) {\n"
                  "  (void)kpack_v;\n  (void)kpack_p;\n"
                  "  const void *const x = kpack_p[0];\n"
                  "  const void *const out = kpack_p[2];\n"
                  "  const int32_t n = (int32_t)kpack_v[3];\n"
                  "  const int64_t unit = (int64_t)kpack_v[4];\n"
                  "  return (((uint64_t)(uintptr_t)x | (uint64_t)(uintptr_t)out | (uint64_t)n) & 15) == 0 && "
                  "unit == 1;\n}\n") != std::string::npos);
  CHECK(text.find("kpack_tune_k0_launch_auto, kpack_tune_k0_aligned}") != std::string::npos);
  CHECK(text.find("kpack_tune_k1_launch_auto, NULL}") != std::string::npos);
  CHECK(text.find("kpack_tune_k1_aligned") == std::string::npos);
  // Only the divisibility: auto buffers move in the twin.
  CHECK(text.find("static const kpack_tune_buffer kpack_tune_k0_buffers[3] = {{\"x\", 0, KPACK_TUNE_FILL_DEFAULT, 1}, "
                  "{\"bias\", 1, KPACK_TUNE_FILL_DEFAULT, 0}, {\"out\", 2, KPACK_TUNE_FILL_DEFAULT, 1}};") !=
        std::string::npos);
  CHECK(text.find("static const kpack_tune_buffer kpack_tune_k1_buffers[1] = "
                  "{{\"x\", 0, KPACK_TUNE_FILL_DEFAULT, 0}};") != std::string::npos);
  // A key without probe values: a NULL row, no empty array.
  CHECK(text.find("static const int64_t kpack_tune_k0_probes_0[1] = {4112};") != std::string::npos);
  CHECK(text.find("static const int kpack_tune_k1_probe_sizes[1] = {0};\n"
                  "static const int64_t *const kpack_tune_k1_probes[1] = {NULL};\n") != std::string::npos);
  CHECK(text.find("kpack_tune_k1_probes_0") == std::string::npos);
}

TEST_CASE("a package without tune: sections gets tables that list nothing") {
  ScratchDir dir;
  dir.Write("package.yaml", kPackage);
  dir.Write("k.yaml", kKernel);
  dir.Write("va.cuh", "// template\n");
  kpack::Diagnostics diag;
  std::optional<kpack::Package> pkg = kpack::LoadPackage("package.yaml", {}, diag);
  REQUIRE(diag.Text() == "");
  std::vector<kpack::Specialization> specs = kpack::Expand(*pkg, diag);
  CHECK(kpack::TuneLayouts(*pkg, specs).empty());
  CHECK(kpack::GenerateTuner(*pkg, specs, {"package.yaml", "demo.h"}) ==
        "/* Generated by kpack " + std::string(kpack::kKpackVersion) +
            " from package.yaml: the tables of its tuning harness\n"
            "   (kpack_tune.h, docs/tuning.md). Do not edit. */\n"
            "#include \"demo.h\"\n#include \"kpack_tune.h\"\n\n#include <stdint.h>\n\n"
            "_Static_assert(KPACK_TUNE_ABI == 3, \"generated for kpack_tune.h ABI 3: use the kpack_tune_main.c and "
            "kpack_tune.h of the kpack that generated it\");\n\n"
            "const kpack_tune_package kpack_tune_tables = {KPACK_TUNE_ABI, \"demo\", \"" +
            std::string(kpack::kKpackVersion) + "\", 0, NULL};\n");
}
