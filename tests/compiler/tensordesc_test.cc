// `type: tensordesc` params (compiler/tensordesc.h) and Triton's num_ctas:
// what the load pass accepts, every error word for word, the C API of a
// launcher, Triton's signature type, the kernel's parameter layout and the
// metadata Triton's helper hands back.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "check.h"
#include "codegen.h"
#include "codegen_text.h"
#include "expand.h"
#include "manifest.h"
#include "tensordesc.h"
#include "test_util.h"
#include "triton.h"

namespace {

using kpack::testing::Replace;
using kpack::testing::ScratchDir;

const char* kGemm =
    "kernel: mm\n"                                                                   // 1
    "language: triton\n"                                                             // 2
    "source: mm.py\n"                                                                // 3
    "entry: mm\n"                                                                    // 4
    "variants: none\n"                                                               // 5
    "constexprs:\n"                                                                  // 6
    "  - {name: T, type: dtype, values: [bf16]}\n"                                   // 7
    "  - {name: BM, type: int, values: [128], tag: m}\n"                             // 8
    "  - {name: BK, type: int, values: [64], tag: k}\n"                              // 9
    "params:\n"                                                                      // 10
    "  - {name: a, type: const tensordesc, dtype: T, block: [BM, BK]}\n"             // 11
    "  - {name: c, type: tensordesc, dtype: f32, block: [BM, 32], padding: nan}\n"   // 12
    "  - {name: M, type: i32}\n"                                                     // 13
    "launch:\n"                                                                      // 14
    "  grid: [\"cdiv(M, BM)\"]\n";                                                   // 15

const char* kPackage90 = "package: demo\narchs: [sm_90]\nkernels: [k.yaml]\n";

struct Loaded {
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;
  std::string errors;
};

Loaded Load(const std::string& kernel, const std::string& package = kPackage90) {
  ScratchDir dir;
  dir.Write("package.yaml", package);
  dir.Write("k.yaml", kernel);
  dir.Write("mm.py", "");
  dir.Write("mm.cuh", "");
  kpack::Diagnostics diag;
  Loaded out;
  out.pkg = kpack::LoadPackage("package.yaml", {}, diag);
  if (out.pkg) out.specs = kpack::Expand(*out.pkg, diag);
  out.errors = diag.Text();
  return out;
}

std::string Errors(const std::string& kernel, const std::string& package = kPackage90) {
  return Load(kernel, package).errors;
}

// kGemm's param line 11 replaced by `line`.
std::string WithA(const std::string& line) {
  return Replace(kGemm, "  - {name: a, type: const tensordesc, dtype: T, block: [BM, BK]}\n", line + "\n");
}

// kGemm as a CUDA kernel.
std::string Cuda(const std::string& kernel) {
  return Replace(Replace(Replace(Replace(kernel, "language: triton", "language: cuda"), "source: mm.py", "source: mm.cuh"),
                         "variants: none\n", ""),
                 "  grid: [\"cdiv(M, BM)\"]\n", "  grid: [\"cdiv(M, BM)\"]\n  block: [128]\n");
}

}  // namespace

TEST_CASE("a tensordesc param: its base, shape and strides in the C API, its block in Triton's signature") {
  Loaded l = Load(kGemm);
  REQUIRE(l.errors == "");
  const kpack::Specialization& s = l.specs.at(0);
  const kpack::Param& a = s.kernel->params.at(0);
  const kpack::Param& c = s.kernel->params.at(1);
  REQUIRE(a.tensordesc);
  CHECK(a.type.is_pointer);
  CHECK(a.type.is_const);
  CHECK(!c.type.is_const);
  CHECK(c.tensordesc->padding_nan);
  CHECK(kpack::codegen::TypedParam(s, a) ==
        "const kpack_bf16 *a, const int64_t a_shape[2], const int64_t a_strides[2]");
  CHECK(kpack::codegen::TypedParam(s, c) == "float *c, const int64_t c_shape[2], const int64_t c_strides[2]");
  CHECK(kpack::codegen::DispatchParam(a) == "const void *a, const int64_t a_shape[2], const int64_t a_strides[2]");
  CHECK(kpack::ParamArgNames(a) == std::vector<std::string>{"a", "a_shape", "a_strides"});
  CHECK(kpack::ParamArgNames(s.kernel->params.at(2)) == std::vector<std::string>{"M"});
  // Exactly as Python's str() of the block list, which Triton parses.
  CHECK(kpack::TritonDescType(s, a) == "tensordesc<bf16[128, 64]>");
  CHECK(kpack::TritonDescType(s, c) == "tensordesc<fp32[128, 32]>");
  // The map (128 bytes, 64-byte aligned), 2 i32 shapes, 2 i64 strides,
  // each descriptor; then M and Triton's two scratch pointers.
  CHECK(kpack::ExpectedLayout(s, 2) == std::vector<std::pair<uint32_t, uint32_t>>{
                                           {0, 128}, {128, 4}, {132, 4}, {136, 8}, {144, 8},
                                           {192, 128}, {320, 4}, {324, 4}, {328, 8}, {336, 8},
                                           {344, 4}, {352, 8}, {360, 8}});
  // A CUDA kernel receives the map only.
  Loaded cuda = Load(Cuda(Replace(WithA("  - {name: a, type: const tensordesc, dtype: T, block: [BM, BK], swizzle: 128B}"),
                                  "  - {name: c, type: tensordesc, dtype: f32, block: [BM, 32], padding: nan}\n", "")));
  REQUIRE(cuda.errors == "");
  CHECK(kpack::ExpectedLayout(cuda.specs.at(0)) == std::vector<std::pair<uint32_t, uint32_t>>{{0, 128}, {128, 4}});
  kpack::DescLayout layout = kpack::CudaDescLayout(cuda.specs.at(0), cuda.specs.at(0).kernel->params.at(0));
  CHECK(layout == kpack::DescLayout{9, 2, {128, 64}, 3});
  CHECK(kpack::DescLayoutText(layout) == "box [128, 64], swizzle 128B");
  // The launcher encodes the CUDA kernel's map with the manifest's box and swizzle.
  const std::string launcher = kpack::GenerateLauncherSource(*cuda.pkg, cuda.specs, {"package.yaml", "demo.h"});
  CHECK(launcher.find("  /* a: a TMA descriptor, box [128, 64], swizzle 128B. */\n"
                      "  static const kpack_tensor_map_spec kpack_tmspec_a = {9u, 2u, 2u, {128u, 64u}, 3u, 0u};\n") !=
        std::string::npos);
}

TEST_CASE("a tensordesc param the manifest gets wrong is an error at its line") {
  CHECK(Errors(WithA("  - {name: a, type: tensordesc, block: [BM]}")) ==
        "k.yaml:11:5: error: tensordesc param 'a' needs dtype and block\n");
  CHECK(Errors(WithA("  - {name: a, type: tensordesc, dtype: U, block: [BM]}")) ==
        "k.yaml:11:40: error: dtype 'U' of tensordesc param 'a' is neither a dtype constexpr nor one of: f32, f16, "
        "bf16, f64, i8, i16, i32, i64, u8, u16, u32, u64\n");
  CHECK(Errors(WithA("  - {name: a, type: tensordesc, dtype: T, block: []}")) ==
        "k.yaml:11:50: error: block of tensordesc param 'a' must be a list of 1 to 5 expressions\n");
  CHECK(Errors(WithA("  - {name: a, type: tensordesc, dtype: T, block: [1, 2, 3, 4, 5, 6]}")) ==
        "k.yaml:11:50: error: block of tensordesc param 'a' must be a list of 1 to 5 expressions\n");
  CHECK(Errors(WithA("  - {name: a, type: tensordesc, dtype: T, block: [BM, M]}")) ==
        "k.yaml:11:55: error: 'M' is a runtime parameter; only constexprs are allowed here\n");
  CHECK(Errors(WithA("  - {name: a, type: tensordesc, dtype: T, block: [BM], padding: inf}")) ==
        "k.yaml:11:65: error: padding must be zero or nan (what a load outside the tensor reads)\n");
  CHECK(Errors(WithA("  - {name: a, type: tensordesc, dtype: T, block: [BM], swizzle: 128B}")) ==
        "k.yaml:11:65: error: swizzle applies to CUDA kernels only: Triton chooses the swizzle of 'a' when it "
        "compiles the kernel\n");
  CHECK(Errors(WithA("  - {name: a, type: tensordesc, dtype: T, block: [BM], divisibility: 16}")) ==
        "k.yaml:11:70: error: 'a' is a tensordesc: divisibility, width and equal_to_1 do not apply\n");
  CHECK(Errors(WithA("  - {name: a, type: const T*, block: [BM]}")) ==
        "k.yaml:11:38: error: block applies to tensordesc params only ('a' is const T*)\n");
  // Triton passes host descriptors as TMA maps from sm_90 on.
  CHECK(Errors(kGemm, "package: demo\narchs: [sm_80, sm_90]\nkernels: [k.yaml]\n") ==
        "k.yaml:11:5: error: tensordesc param 'a': Triton passes host tensor descriptors as TMA maps on sm_90 and "
        "later only, and the kernel is built for sm_80; list archs: from sm_90\n"
        "k.yaml:12:5: error: tensordesc param 'c': Triton passes host tensor descriptors as TMA maps on sm_90 and "
        "later only, and the kernel is built for sm_80; list archs: from sm_90\n");
  // A CUDA kernel's shared-memory layout is the manifest's to give.
  CHECK(Errors(Cuda(kGemm)) ==
        "k.yaml:10:5: error: tensordesc param 'a' of a CUDA kernel needs swizzle (none, 32B, 64B or 128B): the "
        "kernel's shared-memory layout\n"
        "k.yaml:11:5: error: tensordesc param 'c' of a CUDA kernel needs swizzle (none, 32B, 64B or 128B): the "
        "kernel's shared-memory layout\n");
  CHECK(Errors(Cuda(WithA("  - {name: a, type: tensordesc, dtype: T, block: [BM], swizzle: 256B}"))) ==
        "k.yaml:10:65: error: swizzle must be none, 32B, 64B or 128B\n");
}

TEST_CASE("a tensordesc whose C parameters collide, or whose padding cannot be, is refused") {
  CHECK(Errors(Replace(kGemm, "  - {name: M, type: i32}\n", "  - {name: M, type: i32}\n  - {name: a_shape, type: i32}\n")) ==
        "k.yaml:11:5: error: tensordesc param 'a' takes the C parameter 'a_shape', which is also the name of a param "
        "or constexpr; rename one\n");
  CHECK(Errors(WithA("  - {name: a, type: tensordesc, dtype: i32, block: [BM], padding: nan}")) ==
        "k.yaml:11:67: error: padding: nan needs a floating-point dtype ('a' is i32)\n");
}

TEST_CASE("a descriptor layout the driver would refuse on every launch is named") {
  using kpack::CheckDescLayout;
  using kpack::DescLayout;
  using kpack::Scalar;
  CHECK(CheckDescLayout(DescLayout{9, 2, {128, 64}, 3}, false, Scalar::kBF16) == "");
  CHECK(CheckDescLayout(DescLayout{7, 4, {32, 64}, 0}, false, Scalar::kF32) == "");  // no swizzle: no span
  CHECK(CheckDescLayout(DescLayout{9, 2, {64, 128}, 3}, false, Scalar::kBF16) ==
        "its box's inner dimension is 256 bytes, wider than the 128-byte swizzle span");
  CHECK(CheckDescLayout(DescLayout{9, 2, {64, 32}, 1}, false, Scalar::kBF16) ==
        "its box's inner dimension is 64 bytes, wider than the 32-byte swizzle span");
  CHECK(CheckDescLayout(DescLayout{9, 2, {64, 4}, 0}, false, Scalar::kBF16) ==
        "its box's inner dimension is 8 bytes, not a multiple of 16 (TMA needs 16)");
  CHECK(CheckDescLayout(DescLayout{9, 2, {512, 64}, 3}, false, Scalar::kBF16) ==
        "its box [512, 64] has a dimension outside 1..256 (TMA's limit)");
  CHECK(CheckDescLayout(DescLayout{3, 4, {64, 32}, 3}, true, Scalar::kI32) ==
        "padding: nan needs a floating-point dtype, and this build's is i32");
}

TEST_CASE("Triton's metadata of a unit: clusters, scratch and each descriptor's TMA layout") {
  std::string error;
  std::optional<kpack::TritonMeta> meta = kpack::ParseTritonMeta(
      R"({"name": "mm", "shared": 8200, "num_warps": 4, "num_ctas": 2, "hidden_pointer_params": 2,
          "global_scratch": [128, 128], "profile_scratch": [0, 1],
          "tensordesc": [{"data_type": 9, "elem_bytes": 2, "box": [32, 64], "swizzle": 3}]})",
      &error);
  REQUIRE(meta);
  CHECK(meta->num_ctas == 2);
  CHECK(meta->global_scratch == kpack::TritonScratch{128, 128});
  CHECK(meta->profile_scratch == kpack::TritonScratch{0, 1});
  CHECK(meta->descs == std::vector<kpack::DescLayout>{{9, 2, {32, 64}, 3}});
  // Older metadata (no clusters, scratch or descriptors) means none.
  meta = kpack::ParseTritonMeta(R"({"name": "k", "shared": 0, "num_warps": 4, "hidden_pointer_params": 2})", &error);
  REQUIRE(meta);
  CHECK(meta->num_ctas == 1);
  CHECK(meta->global_scratch == kpack::TritonScratch{0, 1});
  CHECK(meta->descs.empty());
  const std::string head = R"({"name": "k", "shared": 0, "num_warps": 4, "hidden_pointer_params": 2, )";
  CHECK(!kpack::ParseTritonMeta(head + R"("num_ctas": 32})", &error));
  CHECK(error == "Triton metadata has num_ctas 32 (expected 1 to 16)");
  CHECK(!kpack::ParseTritonMeta(head + R"("global_scratch": [128, 3]})", &error));
  CHECK(error == "Triton metadata has a malformed global_scratch (expected [bytes per CTA, power-of-two alignment])");
  CHECK(!kpack::ParseTritonMeta(head + R"("tensordesc": [{"data_type": 9, "elem_bytes": 2, "box": [512], "swizzle": 3}]})",
                                &error));
  CHECK(error == "Triton metadata has a malformed tensordesc entry 0");
}

TEST_CASE("a CUDA kernel's descriptors get the driver's element types") {
  CHECK(kpack::TensorMapDataType(kpack::Scalar::kBF16) == 9);
  CHECK(kpack::TensorMapDataType(kpack::Scalar::kF32) == 7);
  CHECK(kpack::TensorMapDataType(kpack::Scalar::kI8) == 0);
}
