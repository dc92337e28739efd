// The auto dispatchers kpack generates (auto_dispatcher_gen.cc) for the auto
// package (tests/compiler/manifests/auto): a CUDA kernel whose VEC rule
// reads sizeof(T) and a param, and a Triton kernel whose BLOCK rule calls
// next_pow2 and whose SPLIT rule reads device.num_sms, against golden files
// (ak.h, ak_launch.c); tests/runtime/auto_launch_test.cc runs that launcher
// against the fake driver.  After an intended change, rerun with
// KPACK_UPDATE_GOLDEN=1 and review the diff of tests/compiler/golden/ak*.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "codegen.h"
#include "expand.h"
#include "fs_util.h"
#include "golden_util.h"
#include "manifest.h"
#include "test_util.h"

using kpack::testing::kKernel;
using kpack::testing::kPackage;
using kpack::testing::Replace;
using kpack::testing::ScratchDir;

namespace {

using kpack::testing::CompareGolden;
using kpack::testing::DataDir;

struct Generated {
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;
  std::string header, launcher;
};

// Loads, expands and generates package.yaml + k.yaml (va.cuh beside it)
// in a scratch directory.
Generated Generate(const std::string& kernel) {
  ScratchDir dir;
  dir.Write("package.yaml", kPackage);
  dir.Write("k.yaml", kernel);
  dir.Write("va.cuh", "// template\n");
  kpack::Diagnostics diag;
  Generated g;
  g.pkg = kpack::LoadPackage("package.yaml", {}, diag);
  REQUIRE(diag.Text() == "");
  g.specs = kpack::Expand(*g.pkg, diag);
  REQUIRE(diag.Text() == "");
  kpack::CodegenOptions options{"package.yaml", "demo.h"};
  g.header = kpack::GenerateHeader(*g.pkg, g.specs, options);
  g.launcher = kpack::GenerateLauncherSource(*g.pkg, g.specs, options);
  return g;
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

// tests/runtime/ak_blobs.c and auto_launch_test.cc rely on this order.
TEST_CASE("the auto package's specializations, in the order of their fatbins") {
  std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(DataDir());
  kpack::Diagnostics diag;
  auto pkg = kpack::LoadPackage("manifests/auto/kpack.yaml", {}, diag);
  std::filesystem::current_path(previous);
  REQUIRE(diag.Text() == "");
  auto specs = kpack::Expand(*pkg, diag);
  REQUIRE(diag.Text() == "");
  std::vector<std::string> names;
  for (const kpack::Specialization& s : specs) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{
                     "norm_v8_f16_wide",   "norm_v8_f16_nowide",  "norm_v8_bf16_wide",   "norm_v8_bf16_nowide",
                     "norm_v4_f16_wide",   "norm_v4_f16_nowide",  "norm_v4_bf16_wide",   "norm_v4_bf16_nowide",
                     "norm_v4_f32_wide",   "norm_v4_f32_nowide",  "norm_v2_f16_wide",    "norm_v2_f16_nowide",
                     "norm_v2_bf16_wide",  "norm_v2_bf16_nowide", "norm_v2_f32_wide",    "norm_v2_f32_nowide",
                     "rows_f16_w4_b128_s1", "rows_f16_w4_b128_s2", "rows_f16_w4_b256_s1", "rows_f16_w4_b256_s2",
                     "rows_f16_w4_b512_s1", "rows_f16_w4_b512_s2", "rows_f16_w8_b1024_s1", "rows_f16_w8_b1024_s2",
                     "rows_f32_w4_b128_s1", "rows_f32_w4_b128_s2", "rows_f32_w4_b256_s1", "rows_f32_w4_b256_s2",
                     "rows_f32_w4_b512_s1", "rows_f32_w4_b512_s2", "rows_f32_w8_b1024_s1", "rows_f32_w8_b1024_s2"});
  // num_warps is listed before BLOCK and computed after it.
  CHECK(pkg->kernels[1].AutoOrder() == std::vector<size_t>{2, 1, 3});
  CHECK(pkg->kernels[1].FindConstexpr("num_warps")->option);
}

TEST_CASE("the auto package's header and launchers match the golden files") {
  std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(DataDir());
  kpack::Diagnostics diag;
  auto pkg = kpack::LoadPackage("manifests/auto/kpack.yaml", {}, diag);
  std::filesystem::current_path(previous);
  REQUIRE(diag.Text() == "");
  auto specs = kpack::Expand(*pkg, diag);
  REQUIRE(diag.Text() == "");
  kpack::CodegenOptions options{"manifests/auto/kpack.yaml", "ak.h"};
  const std::string header = kpack::GenerateHeader(*pkg, specs, options);
  CompareGolden("ak.h", header);
  // Each Triton build gets 1000 + its index bytes of shared memory, so the
  // runtime test sees which build a launch ran.
  std::map<const kpack::Specialization*, kpack::TritonLaunch> triton;
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].kernel->language == kpack::Language::kTriton)
      triton[&specs[i]] = kpack::testing::TritonLaunchWith(
          static_cast<uint32_t>(1000 + i), static_cast<uint32_t>(specs[i].kernel->NumWarps(specs[i].values)));
  const std::string launcher = kpack::GenerateLauncherSource(*pkg, specs, options, triton);
  CompareGolden("ak_launch.c", launcher);

  // What the golden files must say, spelled out: the declarations take the
  // constexprs without auto (T; none of rows' but T), the params as the
  // dispatcher takes them, and pdl where the kernel has it.
  CHECK(Has(header, "kpack_status ak_norm_auto(kpack_stream stream, int pdl, kpack_dtype T, const void *x, void *out, "
                    "uint32_t d, uint32_t rows);\n"));
  CHECK(Has(header, " *   VEC = gcd(16 / sizeof(T), d)\n *   WIDE = log2(d) / 12\n"));
  CHECK(Has(header, "kpack_status ak_rows_auto(kpack_stream stream, kpack_dtype T, const void *x, void *out, "
                    "int64_t n, int64_t rows);\n"));
  CHECK(Has(header, " * (device.num_sms: of the calling thread's current device).\n"));
  CHECK(Has(launcher, "kpack_status ak_norm_auto(kpack_stream stream, int pdl, kpack_dtype T, const void *x, "
                      "void *out, uint32_t d, uint32_t rows) {\n"));
  // f16 and bf16 have one size, one branch; sizeof folded (16 / 2 = 8).
  CHECK(Has(launcher, "  if (T == KPACK_DTYPE_F16 || T == KPACK_DTYPE_BF16) {\n"
                      "    VEC = kpack_gcd_(8, (int64_t)d, &kpack_bad);\n"));
  CHECK(Has(launcher, "  } else if (T == KPACK_DTYPE_F32) {\n    VEC = kpack_gcd_(4, (int64_t)d, &kpack_bad);\n"));
  CHECK(Has(launcher, "    return kpack_fail_no_specialization(\"norm_auto\", \"T=f16, T=bf16, T=f32\", 1, kpack_names, "
                      "kpack_kinds, kpack_values);\n"));
  CHECK(Has(launcher, "  return ak_norm(stream, pdl, (int)VEC, T, (int)WIDE, x, out, d, rows);\n"));
  CHECK(Has(launcher, "kpack_device_attribute(\"rows_auto\", KPACK_DEVICE_ATTR_NUM_SMS, &kpack_device_num_sms)"));
  CHECK(Has(launcher, "  BLOCK = kpack_max_(kpack_next_pow2_((int64_t)n, &kpack_bad), 128);\n"));
  CHECK(Has(launcher, "  return ak_rows(stream, T, (int)num_warps, (int)BLOCK, (int)SPLIT, x, out, n, rows);\n"));
  // What the build proves is not tested at run time: VEC = gcd(8, d) is a
  // C int, num_warps (8 or 4) cannot fail; WIDE (log2(d) / 12, up to 2) and
  // BLOCK (next_pow2 of an i64) are tested.
  CHECK_FALSE(Has(launcher, "if (VEC < INT32_MIN"));
  CHECK_FALSE(Has(launcher, "kpack_bad_num_warps"));
  CHECK(Has(launcher, "  if (WIDE != 0 && WIDE != 1)\n"));
  CHECK(Has(launcher, "  if (BLOCK < INT32_MIN || BLOCK > INT32_MAX)\n"));
  CHECK(Has(launcher, "static inline int64_t kpack_next_pow2_("));  // the helpers the rules call
  CHECK(Has(launcher, "static inline int64_t kpack_log2_("));
}

TEST_CASE("a kernel without auto rules has no auto dispatcher") {
  Generated g = Generate(kKernel);
  CHECK_FALSE(Has(g.header, "_auto("));
  CHECK_FALSE(Has(g.launcher, "_auto("));
}

TEST_CASE("an auto dispatcher without dtype sizes computes once; its details escape % for printf") {
  Generated g = Generate(Replace(Replace(kKernel, "tag: b}", "tag: b, auto: \"n % 2 == 0 ? 128 : n\"}"),
                                 "  - {name: n, type: i64}\n",
                                 "  - {name: n, type: i64}\n  - {name: flag, type: bool}\n"));
  CHECK(Has(g.header, "kpack_status demo_vector_add_auto(kpack_stream stream, kpack_dtype T, const void *x, "
                      "const void *y, void *out, int64_t n, bool flag);\n"));
  CHECK(Has(g.launcher, "  BLOCK = ((int64_t)(kpack_mod_((int64_t)n, 2, &kpack_bad) == 0) ? 128 : (int64_t)n);\n"
                        "  kpack_bad_BLOCK = kpack_bad;\n  if (kpack_bad_BLOCK)\n"));
  CHECK(Has(g.launcher, "\"vector_add_auto: the rule of BLOCK, n %% 2 == 0 \\077 128 : n, failed (division by "
                        "zero, overflow or log2 of a value <= 0)\");\n"));
  CHECK(Has(g.launcher, "  if (BLOCK < INT32_MIN || BLOCK > INT32_MAX)\n"
                        "    return kpack_fail(KPACK_ERROR_INVALID_ARGUMENT, \"vector_add_auto: the rule of BLOCK, n %% "
                        "2 == 0 \\077 128 : n, gave %lld, which does not fit in a C int\", (long long)BLOCK);\n"));
  CHECK_FALSE(Has(g.launcher, "kpack_fail_no_specialization(\"vector_add_auto\""));
  CHECK(Has(g.launcher, "  return demo_vector_add(stream, T, (int)BLOCK, x, y, out, n, flag);\n"));
}

TEST_CASE("an auto dispatcher whose name another kernel has is a collision") {
  ScratchDir dir;
  dir.Write("package.yaml", "package: demo\narchs: [sm_80]\nkernels: [k.yaml, k2.yaml]\n");
  dir.Write("k.yaml", Replace(kKernel, "tag: b}", "tag: b, auto: 128}"));
  dir.Write("k2.yaml", Replace(kKernel, "kernel: vector_add", "kernel: vector_add_auto"));
  dir.Write("va.cuh", "// template\n");
  kpack::Diagnostics diag;
  auto pkg = kpack::LoadPackage("package.yaml", {}, diag);
  REQUIRE(diag.Text() == "");
  kpack::Expand(*pkg, diag);
  CHECK(diag.Text() == "k2.yaml:1:9: error: generated name 'demo_vector_add_auto' of kernel 'vector_add_auto' collides "
                       "with kernel 'vector_add' (its auto dispatcher)\n");
}

TEST_CASE("a bool the caller passes reads as 0 or 1 in the rules, as the dispatcher reads it") {
  Generated g = Generate(Replace(Replace(kKernel, "tag: b}", "tag: b, auto: \"128 + FLAG * 128\"}"),
                                 "params:\n", "  - {name: FLAG, type: bool, values: [true, false]}\nparams:\n"));
  // The declaration keeps the name; the definition reads it through its own.
  CHECK(Has(g.header, "kpack_status demo_vector_add_auto(kpack_stream stream, kpack_dtype T, int FLAG, const void *x, "
                      "const void *y, void *out, int64_t n);\n"));
  CHECK(Has(g.launcher, "kpack_status demo_vector_add_auto(kpack_stream stream, kpack_dtype T, int kpack_arg_FLAG, "
                        "const void *x, const void *y, void *out, int64_t n) {\n"
                        "  const int FLAG = kpack_arg_FLAG != 0;  /* a bool, as demo_vector_add() reads it */\n"));
  // 128 or 256: no range to test (the helpers' overflow flag is tested all
  // the same: which rules can fail is read from the C, not proved).
  CHECK(Has(g.launcher, "  BLOCK = kpack_add_(128, kpack_mul_((int64_t)FLAG, 128, &kpack_bad), &kpack_bad);\n"
                        "  kpack_bad_BLOCK = kpack_bad;\n"));
  CHECK_FALSE(Has(g.launcher, "if (BLOCK < INT32_MIN"));
  CHECK(Has(g.launcher, "  return demo_vector_add(stream, T, (int)BLOCK, FLAG, x, y, out, n);\n"));
}
