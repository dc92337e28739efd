// The check pass on real cubins: the parameter layout of the manifest must be
// the one in the cubin's EIATTR_KPARAM_INFO, and mismatches name the
// manifest line of the parameter.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "check.h"
#include "fs_util.h"

namespace {

std::string Fixture(const std::string& name) {
  const char* dir = std::getenv("KPACK_READER_FIXTURES");
  REQUIRE(dir != nullptr);
  std::optional<std::string> bytes = kpack::ReadFile(std::string(dir) + "/" + name);
  REQUIRE(bytes);
  return *bytes;
}

kpack::Param MakeParam(const std::string& name, const std::string& type, kpack::Scalar scalar, bool pointer,
                       int line) {
  kpack::Param p;
  p.name = name;
  p.type_text = type;
  p.type.scalar = scalar;
  p.type.is_pointer = pointer;
  p.loc = kpack::SourceLoc{"k.yaml", line, 5};
  return p;
}

// The manifest of fixtures/readers_kernels.cu's mixed_params kernel:
// (__half* out, int32_t n, int64_t big, __half scale, bool flag, float alpha, const float* in).
kpack::Kernel MixedParams() {
  using kpack::Scalar;
  kpack::Kernel k;
  k.name = "mixed";
  k.loc = kpack::SourceLoc{"k.yaml", 1, 9};
  k.params_loc = kpack::SourceLoc{"k.yaml", 6, 1};
  k.params = {MakeParam("out", "f16*", Scalar::kF16, true, 7),    MakeParam("n", "i32", Scalar::kI32, false, 8),
              MakeParam("big", "i64", Scalar::kI64, false, 9),    MakeParam("scale", "f16", Scalar::kF16, false, 10),
              MakeParam("flag", "bool", Scalar::kBool, false, 11), MakeParam("alpha", "f32", Scalar::kF32, false, 12),
              MakeParam("in", "const f32*", Scalar::kF32, true, 13)};
  return k;
}

std::string Check(const kpack::Kernel& k, const std::string& cubin, const std::string& symbol, kpack::Arch arch,
                  kpack::UnitFacts* facts_out = nullptr, bool aligned = false, bool narrow = false) {
  kpack::Specialization s;
  s.kernel = &k;
  s.name = "mixed_x";
  s.symbol = symbol;
  s.aligned = aligned;
  s.narrow = narrow;
  kpack::Plan plan;
  kpack::Unit u;
  u.spec = &s;
  u.arch = arch;
  plan.units.push_back(u);
  std::vector<kpack::CompiledUnit> compiled(1);
  compiled[0].binary = Fixture(cubin);
  std::vector<kpack::UnitFacts> facts;
  kpack::Diagnostics diag;
  kpack::CheckUnits(plan, compiled, facts, diag);
  if (facts_out) *facts_out = facts[0];
  return diag.Text();
}

constexpr kpack::Arch kSm90{90, kpack::Arch::Variant::kPlain};

}  // namespace

TEST_CASE("the C ABI layout kpack expects") {
  kpack::Kernel k = MixedParams();
  kpack::Specialization s;
  s.kernel = &k;
  CHECK(kpack::ExpectedLayout(s) == std::vector<std::pair<uint32_t, uint32_t>>{
                                        {0, 8}, {8, 4}, {16, 8}, {24, 2}, {26, 1}, {28, 4}, {32, 8}});
}

TEST_CASE("a cubin whose layout matches passes and yields its facts") {
  kpack::UnitFacts facts;
  CHECK(Check(MixedParams(), "readers_sm90.cubin", "mixed_params", kSm90, &facts) == "");
  CHECK(facts.registers > 0);
  CHECK_FALSE(facts.has_debug_info);
}

TEST_CASE("a parameter the cubin lays out differently is an error at its manifest line") {
  kpack::Kernel k = MixedParams();
  k.params[1] = MakeParam("n", "i64", kpack::Scalar::kI64, false, 8);  // the kernel takes int32_t
  CHECK(Check(k, "readers_sm90.cubin", "mixed_params", kSm90) ==
        "k.yaml:8:5: error: specialization mixed_x (sm_90): parameter 'n' (i64) is at offset 8, size 4 in the "
        "cubin, but the launcher passes offset 8, size 8\n");
}

TEST_CASE("an aligned variant's cubin is checked like any other and named as the variant") {
  kpack::Kernel k = MixedParams();
  CHECK(Check(k, "readers_sm90.cubin", "mixed_params", kSm90, nullptr, true) == "");
  k.params[1] = MakeParam("n", "i64", kpack::Scalar::kI64, false, 8);
  CHECK(Check(k, "readers_sm90.cubin", "mixed_params", kSm90, nullptr, true) ==
        "k.yaml:8:5: error: specialization mixed_x (aligned variant, sm_90): parameter 'n' (i64) is at offset 8, "
        "size 4 in the cubin, but the launcher passes offset 8, size 8\n");
}

TEST_CASE("an i32 variant's cubin is checked with its width: auto params 4 bytes wide") {
  // The cubin's n is an int32_t: the i32 variant of an i64 `width: auto`
  // param matches it, the 64-bit build does not.
  kpack::Kernel k = MixedParams();
  k.params[1] = MakeParam("n", "i64", kpack::Scalar::kI64, false, 8);
  k.params[1].width_auto = true;
  kpack::Specialization narrow;
  narrow.kernel = &k;
  narrow.narrow = true;
  CHECK(kpack::ExpectedLayout(narrow) == std::vector<std::pair<uint32_t, uint32_t>>{
                                             {0, 8}, {8, 4}, {16, 8}, {24, 2}, {26, 1}, {28, 4}, {32, 8}});
  CHECK(Check(k, "readers_sm90.cubin", "mixed_params", kSm90, nullptr, false, true) == "");
  CHECK(Check(k, "readers_sm90.cubin", "mixed_params", kSm90, nullptr, true, true) == "");
  CHECK(Check(k, "readers_sm90.cubin", "mixed_params", kSm90) ==
        "k.yaml:8:5: error: specialization mixed_x (sm_90): parameter 'n' (i64) is at offset 8, size 4 in the "
        "cubin, but the launcher passes offset 8, size 8\n");
  // A param without width: auto keeps its type in the i32 variant.
  k.params[1].width_auto = false;
  CHECK(Check(k, "readers_sm90.cubin", "mixed_params", kSm90, nullptr, true, true) ==
        "k.yaml:8:5: error: specialization mixed_x (aligned i32 variant, sm_90): parameter 'n' (i64) is at offset "
        "8, size 4 in the cubin, but the launcher passes offset 8, size 8\n");
}

TEST_CASE("a missing parameter is an error at params") {
  kpack::Kernel k = MixedParams();
  k.params.pop_back();
  CHECK(Check(k, "readers_sm90.cubin", "mixed_params", kSm90) ==
        "k.yaml:6:1: error: specialization mixed_x (sm_90): the kernel takes 7 parameters but the manifest lists 6\n");
}

TEST_CASE("wrong arch and missing symbol") {
  CHECK(Check(MixedParams(), "readers_sm80.cubin", "mixed_params", kSm90) ==
        "k.yaml:1:9: error: specialization mixed_x (sm_90): the cubin is for sm_80, expected sm_90\n");
  CHECK(Check(MixedParams(), "readers_sm90a.cubin", "mixed_params", kSm90) ==
        "k.yaml:1:9: error: specialization mixed_x (sm_90): the cubin is for sm_90a, expected sm_90\n");
  CHECK(Check(MixedParams(), "readers_sm90.cubin", "kpack_missing", kSm90) ==
        "k.yaml:1:9: error: specialization mixed_x (sm_90): kernel symbol 'kpack_missing' is missing from the "
        "cubin\n");
}
