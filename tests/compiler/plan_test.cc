// The plan pass and the expansion it starts from, for Triton kernels with
// `divisibility: auto` params: each specialization is planned twice, the
// unhinted build and its aligned variant, with the hints in the request;
// with `width: auto` params too, four times, the i32 builds with i32 in
// the request.
#include <catch2/catch.hpp>

#include <algorithm>

#include "expand.h"
#include "pack.h"
#include "plan.h"
#include "test_util.h"
#include "triton.h"

using kpack::testing::ScratchDir;

namespace {

struct Planned {
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;
  kpack::Plan plan;
  std::string errors;
};

// A Triton kernel of two specializations whose params are `params`,
// built with the manifest's `variants:`.
void LoadTriton(Planned& out, const std::string& params, const std::string& variants = "each") {
  ScratchDir dir;
  dir.Write("package.yaml", "package: demo\narchs: [sm_80, sm_90]\nkernels: [k.yaml]\n");
  dir.Write("k.yaml",
            "kernel: k\nlanguage: triton\nsource: k.py\nentry: k\nvariants: " + variants + "\nconstexprs:\n"
            "  - {name: T, type: dtype, values: [f16, f32]}\n"
            "params:\n" + params + "launch: {grid: [rows]}\n");
  dir.Write("k.py", "");
  kpack::Diagnostics diag;
  out.pkg = kpack::LoadPackage("package.yaml", {}, diag);
  if (out.pkg) out.specs = kpack::Expand(*out.pkg, diag);
  out.errors = diag.Text();
  if (out.errors.empty()) out.plan = kpack::MakePlan(out.specs, kpack::ToolVersions{"", "triton 3.6.0 (fake)"});
}

constexpr const char* kAutoParams =
    "  - {name: x, type: const T*, divisibility: auto}\n"
    "  - {name: bias, type: const f32*, divisibility: 16}\n"
    "  - {name: rows, type: i32}\n"
    "  - {name: stride, type: i64, divisibility: auto}\n";

}  // namespace

TEST_CASE("divisibility: auto expands each specialization into itself and its aligned variant") {
  Planned p;
  LoadTriton(p, kAutoParams);
  REQUIRE(p.errors == "");
  // The variants come after every specialization: specialization i keeps
  // fatbin i.
  REQUIRE(p.specs.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    INFO("spec " << i);
    CHECK(p.specs[i].aligned == (i >= 2));
    CHECK(p.specs[i].name == (i % 2 == 0 ? "k_f16" : "k_f32"));
    CHECK(p.specs[i].launcher == (i % 2 == 0 ? "demo_k_f16" : "demo_k_f32"));
    CHECK(p.specs[i].symbol == "k");
  }
  CHECK(p.specs[2].base == 0);
  CHECK(p.specs[3].base == 1);
  CHECK(p.specs[0].Describe() == "T=f16");
  CHECK(p.specs[2].Describe() == "T=f16; aligned variant");
  CHECK(p.specs[0].Stem() == "k_f16");
  CHECK(p.specs[2].Stem() == "k_f16.aligned");
  const kpack::Kernel& k = *p.specs[0].kernel;
  // The fallback keeps only the promise; the variant hints every auto param.
  CHECK(p.specs[0].Divisibility(k.params[0]) == 0);
  CHECK(p.specs[0].Divisibility(k.params[1]) == 16);
  CHECK(p.specs[0].Divisibility(k.params[2]) == 0);
  CHECK(p.specs[0].Divisibility(k.params[3]) == 0);
  CHECK(p.specs[2].Divisibility(k.params[0]) == 16);
  CHECK(p.specs[2].Divisibility(k.params[1]) == 16);
  CHECK(p.specs[2].Divisibility(k.params[2]) == 0);
  CHECK(p.specs[2].Divisibility(k.params[3]) == 16);
}

TEST_CASE("the plan has units for both variants, each with its hints in the Triton request") {
  Planned p;
  LoadTriton(p, kAutoParams);
  REQUIRE(p.errors == "");
  std::vector<std::string> names;
  for (const kpack::Unit& u : p.plan.units) names.push_back(u.name);
  // Grouped by specialization, so that pack makes one fatbin per variant.
  CHECK(names == std::vector<std::string>{"k_f16.sm_80", "k_f16.sm_90a", "k_f32.sm_80", "k_f32.sm_90a",
                                          "k_f16.aligned.sm_80", "k_f16.aligned.sm_90a", "k_f32.aligned.sm_80",
                                          "k_f32.aligned.sm_90a"});
  CHECK(p.plan.units[4].spec == &p.specs[2]);
  CHECK(p.plan.units[0].source ==
        "{\"arch\":80,\"constexprs\":{},\"entry\":\"k\",\"options\":{\"num_stages\":3,\"num_warps\":4},"
        "\"params\":[{\"name\":\"x\",\"triton_type\":\"*fp16\"},"
        "{\"divisibility\":16,\"name\":\"bias\",\"triton_type\":\"*fp32\"},"
        "{\"name\":\"rows\",\"triton_type\":\"i32\"},{\"name\":\"stride\",\"triton_type\":\"i64\"}],"
        "\"source\":\"k.py\",\"source_name\":\"k.py\"}");
  CHECK(p.plan.units[4].source ==
        "{\"arch\":80,\"constexprs\":{},\"entry\":\"k\",\"options\":{\"num_stages\":3,\"num_warps\":4},"
        "\"params\":[{\"divisibility\":16,\"name\":\"x\",\"triton_type\":\"*fp16\"},"
        "{\"divisibility\":16,\"name\":\"bias\",\"triton_type\":\"*fp32\"},"
        "{\"name\":\"rows\",\"triton_type\":\"i32\"},"
        "{\"divisibility\":16,\"name\":\"stride\",\"triton_type\":\"i64\"}],"
        "\"source\":\"k.py\",\"source_name\":\"k.py\"}");
  // Different requests, different cache entries.
  CHECK(p.plan.units[0].key != p.plan.units[4].key);
  CHECK(kpack::CountUnits(p.plan) == "8 units (4 of aligned variants)");
}

TEST_CASE("without divisibility: auto there is no variant") {
  Planned p;
  LoadTriton(p, "  - {name: x, type: const T*, divisibility: 16}\n  - {name: rows, type: i32}\n");
  REQUIRE(p.errors == "");
  REQUIRE(p.specs.size() == 2);
  CHECK_FALSE(p.specs[0].aligned);
  CHECK_FALSE(p.specs[1].aligned);
  CHECK(p.plan.units.size() == 4);
  CHECK(kpack::CountUnits(p.plan) == "4 units");
}

TEST_CASE("width: auto adds an i32 variant of each build, with i32 in its Triton request") {
  Planned p;
  LoadTriton(p, "  - {name: x, type: const T*, divisibility: auto}\n"
                "  - {name: rows, type: i64, width: auto}\n"
                "  - {name: stride, type: i64, divisibility: auto, width: auto}\n"
                "  - {name: big, type: i64}\n");
  REQUIRE(p.errors == "");
  // Two specializations, then for each its aligned, i32 and aligned i32
  // variants.
  REQUIRE(p.specs.size() == 8);
  const char* stems[] = {"k_f16",          "k_f32",         "k_f16.aligned", "k_f16.i32",
                         "k_f16.aligned.i32", "k_f32.aligned", "k_f32.i32",     "k_f32.aligned.i32"};
  for (size_t i = 0; i < 8; ++i) {
    INFO("spec " << i);
    CHECK(p.specs[i].Stem() == stems[i]);
    CHECK(p.specs[i].launcher == (p.specs[i].Stem().rfind("k_f16", 0) == 0 ? "demo_k_f16" : "demo_k_f32"));
    CHECK(p.specs[i].base == (i < 2 ? i : i < 5 ? 0 : 1));  // a build is its own base
  }
  CHECK(p.specs[3].VariantIndex() == 2);
  CHECK(p.specs[4].VariantIndex() == 3);
  CHECK(p.specs[3].Describe() == "T=f16; i32 variant");
  CHECK(p.specs[4].Describe() == "T=f16; aligned i32 variant");
  const kpack::Kernel& k = *p.specs[0].kernel;
  // Only width: auto params narrow, and only in the i32 variants.
  CHECK(p.specs[0].TypeOf(k.params[1]).scalar == kpack::Scalar::kI64);
  CHECK(p.specs[3].TypeOf(k.params[1]).scalar == kpack::Scalar::kI32);
  CHECK(p.specs[4].TypeOf(k.params[2]).scalar == kpack::Scalar::kI32);
  CHECK(p.specs[4].TypeOf(k.params[3]).scalar == kpack::Scalar::kI64);
  CHECK(p.specs[2].TypeOf(k.params[2]).scalar == kpack::Scalar::kI64);
  REQUIRE(p.plan.units.size() == 16);
  CHECK(p.plan.units[6].name == "k_f16.i32.sm_80");
  CHECK(p.plan.units[6].source ==
        "{\"arch\":80,\"constexprs\":{},\"entry\":\"k\",\"options\":{\"num_stages\":3,\"num_warps\":4},"
        "\"params\":[{\"name\":\"x\",\"triton_type\":\"*fp16\"},"
        "{\"name\":\"rows\",\"triton_type\":\"i32\"},{\"name\":\"stride\",\"triton_type\":\"i32\"},"
        "{\"name\":\"big\",\"triton_type\":\"i64\"}],"
        "\"source\":\"k.py\",\"source_name\":\"k.py\"}");
  CHECK(p.plan.units[8].name == "k_f16.aligned.i32.sm_80");
  CHECK(p.plan.units[8].source ==
        "{\"arch\":80,\"constexprs\":{},\"entry\":\"k\",\"options\":{\"num_stages\":3,\"num_warps\":4},"
        "\"params\":[{\"divisibility\":16,\"name\":\"x\",\"triton_type\":\"*fp16\"},"
        "{\"name\":\"rows\",\"triton_type\":\"i32\"},"
        "{\"divisibility\":16,\"name\":\"stride\",\"triton_type\":\"i32\"},"
        "{\"name\":\"big\",\"triton_type\":\"i64\"}],"
        "\"source\":\"k.py\",\"source_name\":\"k.py\"}");
  CHECK(kpack::CountUnits(p.plan) == "16 units (12 of aligned and i32 variants)");
}

TEST_CASE("width: auto alone gives one i32 variant per specialization") {
  Planned p;
  LoadTriton(p, "  - {name: x, type: const T*}\n  - {name: rows, type: i64, width: auto}\n");
  REQUIRE(p.errors == "");
  REQUIRE(p.specs.size() == 4);
  CHECK((p.specs[2].narrow && !p.specs[2].aligned && p.specs[2].base == 0));
  CHECK((p.specs[3].narrow && !p.specs[3].aligned && p.specs[3].base == 1));
  CHECK(p.specs[3].Stem() == "k_f32.i32");
  CHECK(kpack::CountUnits(p.plan) == "8 units (4 of i32 variants)");
}

TEST_CASE("variants: jit builds the JIT's usual build and the general one, not every kind") {
  Planned p;
  LoadTriton(p, "  - {name: x, type: const T*, divisibility: auto}\n"
                "  - {name: rows, type: i64, width: auto}\n"
                "  - {name: stride, type: i64, divisibility: auto, width: auto}\n", "jit");
  REQUIRE(p.errors == "");
  // Each specialization, then its one fully specialized variant.
  REQUIRE(p.specs.size() == 4);
  CHECK(p.specs[2].Stem() == "k_f16.aligned.i32");
  CHECK((p.specs[2].base == 0 && p.specs[3].base == 1));
  CHECK(p.specs[3].NameWithVariant() == "k_f32 (aligned i32 variant)");
  CHECK(kpack::CountUnits(p.plan) == "8 units (4 of aligned and i32 variants)");
}

TEST_CASE("variants: none builds the params as typed, and refuses auto params") {
  Planned p;
  LoadTriton(p, "  - {name: x, type: const T*}\n  - {name: rows, type: i64}\n", "none");
  REQUIRE(p.errors == "");
  CHECK(p.specs.size() == 2);
  LoadTriton(p, "  - {name: x, type: const T*, divisibility: auto}\n  - {name: rows, type: i64}\n", "none");
  CHECK(p.errors == "k.yaml:9:45: error: 'x' asks for a variant, but the kernel says variants: none\n");
}

TEST_CASE("the Triton version keys Triton units and names their fatbins") {
  Planned p;
  LoadTriton(p, "  - {name: x, type: const T*}\n  - {name: rows, type: i64}\n", "none");
  REQUIRE(p.errors == "");
  kpack::Plan newer = kpack::MakePlan(p.specs, kpack::ToolVersions{"", "triton 3.9.0 python 3.11.7\n"});
  CHECK(p.plan.triton_version == "3.6.0");
  CHECK(newer.triton_version == "3.9.0");
  REQUIRE(newer.units.size() == p.plan.units.size());
  for (size_t i = 0; i < newer.units.size(); ++i) {
    CHECK(newer.units[i].source == p.plan.units[i].source);  // the same request,
    CHECK(newer.units[i].key != p.plan.units[i].key);        // compiled by another Triton
    CHECK(newer.units[i].config_key != p.plan.units[i].config_key);
  }
  REQUIRE(newer.groups[0].batches.size() == 2);  // sm_80, sm_90
  kpack::FatbinJob job =
      kpack::MakeFatbinJob(newer, 0, {"a.cubin", "b.cubin"}, kpack::PackOptions{"demo", "work", "", {}});
  const std::string ident = "--ident=kpack:demo:k:k_f16:release:triton-3.9.0";
  CHECK(std::find(job.argv.begin(), job.argv.end(), ident) != job.argv.end());
  CHECK(kpack::TritonVersionNumber("triton 3.6.0 python 3.11.7") == "3.6.0");
  CHECK(kpack::TritonVersionNumber("") == "");
  CHECK(kpack::TritonVersionNumber("python 3.11.7") == "");
}
