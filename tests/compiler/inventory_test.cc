// The inventory of the golden package, from a plan with made-up binaries and
// facts: every specialization and unit is listed with its facts, the
// build-dependent -I flag is left out, and the output is deterministic.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

#include "fs_util.h"
#include "inventory.h"
#include "manifest.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "llvm/Support/JSON.h"
#pragma GCC diagnostic pop

namespace {

struct Built {
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;
  kpack::Plan plan;
  std::vector<kpack::CompiledUnit> compiled;
  std::vector<kpack::UnitFacts> facts;
  std::vector<kpack::PackedSpec> packed;
  std::vector<kpack::PackedBlob> blobs;

  std::string Inventory() {
    return kpack::GenerateInventory({&*pkg, "manifests/golden/kpack.yaml", "0.1.0", 1, "nvcc\nBuild cuda_13.0\n",
                                     "", "", &plan, &compiled, &facts, &packed, &blobs});
  }
};

Built BuildPackage(const std::string& manifest) {
  Built b;
  const char* data = std::getenv("KPACK_TEST_DATA");
  REQUIRE(data != nullptr);
  std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(data);
  kpack::Diagnostics diag;
  b.pkg = kpack::LoadPackage(manifest, {}, diag);
  REQUIRE(diag.Text() == "");
  b.specs = kpack::Expand(*b.pkg, diag);
  std::filesystem::current_path(previous);
  b.plan = kpack::MakePlan(b.specs, kpack::ToolVersions{"nvcc 13", ""});
  for (size_t i = 0; i < b.plan.units.size(); ++i) {
    b.compiled.push_back(kpack::CompiledUnit{"cubin of " + b.plan.units[i].name, "", {}});
    b.facts.push_back(kpack::UnitFacts{static_cast<uint32_t>(10 + i), 64, 0, 128, false, false});
  }
  for (const kpack::Specialization& s : b.specs) {
    b.packed.push_back(kpack::PackedSpec{&s, b.blobs.size(), {kpack::Arch{80}, kpack::Arch{90}}, {}, "release"});
    b.blobs.push_back(kpack::PackedBlob{s.Stem(), "fatbin of " + s.name});
  }
  return b;
}

Built BuildGolden() { return BuildPackage("manifests/golden/kpack.yaml"); }

}  // namespace

TEST_CASE("the inventory lists every specialization and unit with its facts") {
  Built b = BuildGolden();
  std::string text = b.Inventory();
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  REQUIRE(static_cast<bool>(parsed));
  const llvm::json::Object& root = *parsed->getAsObject();
  CHECK(*root.getString("format") == "kpack-inventory/1");
  CHECK(*root.getString("package") == "golden");
  CHECK(*root.getString("prefix") == "gk");
  CHECK(*root.getString("build_mode") == "release");
  CHECK(*root.getObject("toolchain")->getString("nvcc") == "Build cuda_13.0");
  CHECK(*root.getInteger("num_specializations") == static_cast<int64_t>(b.specs.size()));
  CHECK(*root.getInteger("num_units") == static_cast<int64_t>(b.plan.units.size()));
  const llvm::json::Object& scale = *root.getArray("kernels")->front().getAsObject();
  CHECK(*scale.getString("name") == "scale");
  const llvm::json::Object& spec = *scale.getArray("specializations")->front().getAsObject();
  CHECK(*spec.getString("name") == b.specs[0].name);
  CHECK(*spec.getString("launcher") == b.specs[0].launcher);
  CHECK(*spec.getObject("fatbin")->getString("blake3") == kpack::HashHex("fatbin of " + b.specs[0].name));
  const llvm::json::Array& units = *spec.getArray("units");
  REQUIRE(units.size() == 2);
  const llvm::json::Object& unit = *units[1].getAsObject();
  CHECK(*unit.getString("arch") == "sm_90");
  CHECK(*unit.getInteger("registers") == 11);
  CHECK(*unit.getInteger("static_shared_bytes") == 64);
  CHECK(*unit.getString("blake3") == kpack::HashHex("cubin of " + b.plan.units[1].name));
  std::string flags;
  for (const llvm::json::Value& f : *unit.getArray("flags")) flags += std::string(*f.getAsString()) + " ";
  CHECK(flags == "-cubin -arch=sm_90 -O3 -std=c++17 ");  // no -I<dir>
  CHECK(!unit.getInteger("num_stages"));  // a Triton option
  // The manifest's shared_mem, as written (golden scale.yaml); Triton
  // kernels have none (Triton sizes its own shared memory).
  CHECK(*scale.getString("launch_shared_mem") == "BLOCK * sizeof(T) + 16");
  CHECK(*root.getArray("kernels")->operator[](1).getAsObject()->getString("launch_shared_mem") == "0");
  const llvm::json::Object& rows = *root.getArray("kernels")->back().getAsObject();
  REQUIRE(*rows.getString("language") == "triton");
  CHECK(!rows.getString("launch_shared_mem"));
  // Each Triton unit records its num_stages (tri.yaml leaves Triton's 3).
  for (const llvm::json::Value& sp : *rows.getArray("specializations"))
    for (const llvm::json::Value& u : *sp.getAsObject()->getArray("units")) {
      CHECK(*u.getAsObject()->getInteger("num_stages") == 3);
      CHECK(!u.getAsObject()->getArray("flags"));
    }
  CHECK(text.find(std::filesystem::current_path().string()) == std::string::npos);
}

TEST_CASE("the inventory is deterministic and records debug specializations") {
  Built a = BuildGolden(), b = BuildGolden();
  CHECK(a.Inventory() == b.Inventory());
  a.packed[0].build_mode = "debug";
  std::string text = a.Inventory();
  CHECK(text.find("\"build_mode\": \"debug\"") != std::string::npos);
  CHECK(text.find("\"num_debug_specializations\": 1") != std::string::npos);
}

TEST_CASE("the inventory names each kernel's dispatcher, and its auto dispatcher with the rules") {
  Built b = BuildPackage("manifests/auto/kpack.yaml");
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(b.Inventory());
  REQUIRE(static_cast<bool>(parsed));
  const llvm::json::Array& kernels = *parsed->getAsObject()->getArray("kernels");
  const llvm::json::Object& norm = *kernels[0].getAsObject();
  CHECK(*norm.getString("dispatcher") == "ak_norm");
  CHECK(*norm.getObject("auto")->getString("dispatcher") == "ak_norm_auto");
  const llvm::json::Object& rules = *norm.getObject("auto")->getObject("rules");
  CHECK(rules.size() == 2);
  CHECK(*rules.getString("VEC") == "gcd(16 / sizeof(T), d)");
  CHECK(*rules.getString("WIDE") == "log2(d) / 12");
  CHECK(*kernels[1].getAsObject()->getObject("auto")->getObject("rules")->getString("BLOCK") ==
        "max(next_pow2(n), 128)");
  // A kernel without rules has no auto dispatcher.
  Built golden = BuildGolden();
  parsed = llvm::json::parse(golden.Inventory());
  REQUIRE(static_cast<bool>(parsed));
  const llvm::json::Object& scale = *parsed->getAsObject()->getArray("kernels")->front().getAsObject();
  CHECK(*scale.getString("dispatcher") == "gk_scale");
  CHECK(!scale.getObject("auto"));
}
