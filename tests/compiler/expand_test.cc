// The expand pass: product sizes, exclusions, names, limits and collisions.
#include <catch2/catch.hpp>

#include "expand.h"
#include "test_util.h"

using kpack::testing::ScratchDir;

namespace {

struct Loaded {
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;
  std::string errors;
};

// Loads a package with one kernel whose constexprs section is `constexprs`.
Loaded Load(const std::string& constexprs, const std::string& extra = "", const std::string& package_extra = "") {
  ScratchDir dir;
  dir.Write("package.yaml", "package: demo\narchs: [sm_80]\nkernels: [k.yaml]\n" + package_extra);
  dir.Write("k.yaml", "kernel: k\nsource: k.cuh\nentry: k\nconstexprs:\n" + constexprs +
                          "params:\n  - {name: n, type: i64}\nlaunch: {grid: 1, block: 32}\n" + extra);
  dir.Write("k.cuh", "");
  Loaded out;
  kpack::Diagnostics diag;
  out.pkg = kpack::LoadPackage("package.yaml", {}, diag);
  if (out.pkg) out.specs = kpack::Expand(*out.pkg, diag);
  out.errors = diag.Text();
  return out;
}

std::vector<std::string> Names(const Loaded& l) {
  std::vector<std::string> out;
  for (const auto& s : l.specs) out.push_back(s.name);
  return out;
}

}  // namespace

TEST_CASE("the product of three axes") {
  Loaded l = Load("  - {name: T, type: dtype, values: [f32, f16, bf16]}\n"
                  "  - {name: BLOCK, type: int, values: [64, 128, 256, 512]}\n"
                  "  - {name: CAUSAL, type: bool, values: [true, false], tag: causal}\n");
  REQUIRE(l.errors == "");
  CHECK(l.specs.size() == 3 * 4 * 2);
  CHECK(l.specs.front().name == "k_f32_block64_causal");
  CHECK(l.specs[1].name == "k_f32_block64_nocausal");
  CHECK(l.specs.back().name == "k_bf16_block512_nocausal");
  CHECK(l.specs.front().launcher == "demo_k_f32_block64_causal");
  CHECK(l.specs.front().symbol == "kpack_demo_k_f32_block64_causal");
  CHECK(l.specs.front().Describe() == "T=f32, BLOCK=64, CAUSAL=true");
}

TEST_CASE("exclusions remove every matching combination") {
  Loaded l = Load("  - {name: T, type: dtype, values: [f32, f16, bf16]}\n"
                  "  - {name: BLOCK, type: int, values: [64, 128, 256, 512], tag: b}\n",
                  "exclude:\n  - {T: f32}\n  - {T: f16, BLOCK: 64}\n");
  REQUIRE(l.errors == "");
  CHECK(l.specs.size() == 12 - 4 - 1);
  CHECK(Names(l) == std::vector<std::string>{"k_f16_b128", "k_f16_b256", "k_f16_b512", "k_bf16_b64",
                                             "k_bf16_b128", "k_bf16_b256", "k_bf16_b512"});
}

TEST_CASE("negative ints get a C-safe name") {
  Loaded l = Load("  - {name: SHIFT, type: int, values: [-4, 4], tag: s}\n");
  REQUIRE(l.errors == "");
  CHECK(Names(l) == std::vector<std::string>{"k_sm4", "k_s4"});
}

TEST_CASE("everything excluded is an error") {
  Loaded l = Load("  - {name: T, type: dtype, values: [f32]}\n", "exclude:\n  - {T: f32}\n");
  CHECK(l.errors == "k.yaml:1:9: error: every specialization of kernel 'k' is excluded\n");
}

TEST_CASE("a product over the limit is an error") {
  Loaded l = Load("  - {name: A, type: int, values: [1, 2, 3, 4]}\n  - {name: B, type: int, values: [1, 2, 3]}\n", "",
                  "max_specializations: 10\n");
  CHECK(l.errors ==
        "k.yaml:1:9: error: kernel 'k' expands to more than 10 specializations (max_specializations in the "
        "package file)\n");
}

TEST_CASE("an astronomically large product does not overflow") {
  std::string axes;
  for (int i = 0; i < 40; ++i)
    axes += "  - {name: A" + std::to_string(i) + ", type: int, values: [1, 2, 3, 4, 5, 6, 7, 8]}\n";
  Loaded l = Load(axes);
  CHECK(l.errors ==
        "k.yaml:1:9: error: kernel 'k' expands to more than 4096 specializations (max_specializations in the "
        "package file)\n");
}

TEST_CASE("generated names that collide are an error") {
  // A bool tagged "configs" names a launcher demo_k_configs, which is the
  // name of the kernel's configs array.
  Loaded l = Load("  - {name: C, type: bool, values: [true], tag: configs}\n");
  CHECK(l.errors ==
        "k.yaml:1:9: error: generated name 'demo_k_configs' of specialization C=true of 'k' collides with "
        "kernel 'k'\n");
}

TEST_CASE("a cluster of fewer than 1 or more than 8 blocks is refused once per kernel") {
  ScratchDir dir;
  dir.Write("package.yaml", "package: demo\narchs: [sm_90]\nkernels: [k.yaml]\n");
  auto load = [&](const std::string& cluster) {
    dir.Write("k.yaml", "kernel: k\nsource: k.cuh\nentry: k\nconstexprs:\n"
                        "  - {name: C, type: int, values: [1, 2, 4, 8]}\n"
                        "params:\n  - {name: n, type: i64}\n"
                        "launch:\n  grid: 1\n  block: 32\n  cluster: " + cluster + "\n");
    dir.Write("k.cuh", "");
    kpack::Diagnostics diag;
    std::optional<kpack::Package> pkg = kpack::LoadPackage("package.yaml", {}, diag);
    REQUIRE(pkg);
    std::vector<kpack::Specialization> specs = kpack::Expand(*pkg, diag);
    return diag.Text();
  };
  CHECK(load("[C, 1, 1]") == "");
  CHECK(load("[C, 2]") ==
        "k.yaml:11:3: error: specialization k_c8: the cluster is 8x2; every dimension must be at least 1 and the "
        "cluster at most 8 blocks (the portable size)\n");
  CHECK(load("[C - 1]") ==
        "k.yaml:11:3: error: specialization k_c1: the cluster is 0; every dimension must be at least 1 and the "
        "cluster at most 8 blocks (the portable size)\n");
}
