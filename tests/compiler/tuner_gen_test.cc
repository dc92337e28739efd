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
#include "manifest.h"
#include "test_util.h"
#include "tune_hash.h"
#include "tuner_gen.h"
#include "version.h"

using kpack::testing::kKernel;
using kpack::testing::kPackage;
using kpack::testing::ScratchDir;

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
  CHECK(norm.hash == kpack::TuneManifestHash(*norm.kernel, {norm.built[0][0], norm.built[0][1], norm.built[0][2],
                                                            norm.built[0][3], norm.built[1][0], norm.built[1][1],
                                                            norm.built[1][2], norm.built[1][3], norm.built[2][0],
                                                            norm.built[2][1]}));

  const kpack::TuneLayout& gather = layouts[1];
  CHECK(gather.combos.size() == 1);
  CHECK(gather.ComboLabel(0) == "");
  CHECK(gather.CandidateLabel(1) == "TILE=64");
  CHECK(gather.shapes == 2);
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
            "_Static_assert(KPACK_TUNE_ABI == 2, \"generated for kpack_tune.h ABI 2: use the kpack_tune_main.c and "
            "kpack_tune.h of the kpack that generated it\");\n\n"
            "const kpack_tune_package kpack_tune_tables = {KPACK_TUNE_ABI, \"demo\", \"" +
            std::string(kpack::kKpackVersion) + "\", 0, NULL};\n");
}
