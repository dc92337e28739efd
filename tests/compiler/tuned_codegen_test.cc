// The decision tables kpack generates (tuned_table_gen.cc) into the auto
// dispatchers of the tuned package (tests/compiler/manifests/tuned: scale,
// whose valid reads sizeof(T), and pick, whose key of 20 values is binary
// searched), from its two tuning files, against golden files (tk.h,
// tk_launch.c); tests/runtime/tuned_launch_test.cc runs that launcher
// against the fake driver.  Also the inventory's and `kpack inspect`'s
// view of the tables, and the exact thresholds of the nearest-shape lookup.
// After an intended change, rerun with KPACK_UPDATE_GOLDEN=1 and review the
// diff of tests/compiler/golden/tk*.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "codegen.h"
#include "codegen_text.h"
#include "expand.h"
#include "fs_util.h"
#include "inspect.h"
#include "inventory.h"
#include "json_util.h"
#include "manifest.h"
#include "plan.h"
#include "tune_hash.h"
#include "tuned_table_gen.h"
#include "tuning_reader.h"

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

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct Loaded {
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;
};

// The tuned package, loaded, expanded and checked against its tuning files.
Loaded LoadTuned() {
  std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(DataDir());
  kpack::Diagnostics diag;
  Loaded out;
  out.pkg = kpack::LoadPackage("manifests/tuned/kpack.yaml", {}, diag);
  std::filesystem::current_path(previous);
  REQUIRE(diag.Text() == "");
  out.specs = kpack::Expand(*out.pkg, diag);
  REQUIRE(diag.Text() == "");
  // After a change of the manifests, the tuning files need these hashes.
  std::string hashes;
  for (const kpack::Kernel& k : out.pkg->kernels)
    hashes += k.name + "'s manifest_hash is now " + kpack::TuneManifestHash(k, kpack::codegen::SpecsOf(k, out.specs)) + "\n";
  INFO(hashes);
  kpack::CheckTunings(*out.pkg, out.specs, false, diag);
  REQUIRE(diag.Text() == "");
  return out;
}

}  // namespace

TEST_CASE("the tuned package's header and launchers match the golden files") {
  Loaded l = LoadTuned();
  kpack::CodegenOptions options{"manifests/tuned/kpack.yaml", "tk.h"};
  const std::string header = kpack::GenerateHeader(*l.pkg, l.specs, options);
  CompareGolden("tk.h", header);
  const std::string launcher = kpack::GenerateLauncherSource(*l.pkg, l.specs, options);
  CompareGolden("tk_launch.c", launcher);
}

TEST_CASE("the tuned package's launchers, spelled out") {
  Loaded l = LoadTuned();
  kpack::CodegenOptions options{"manifests/tuned/kpack.yaml", "tk.h"};
  const std::string header = kpack::GenerateHeader(*l.pkg, l.specs, options);
  const std::string launcher = kpack::GenerateLauncherSource(*l.pkg, l.specs, options);
  // The header says a table may choose; the declaration is the rules'.
  CHECK(Has(header, " * table chooses them instead: the fastest candidate that is valid at the grid\n"
                    " * shape nearest to this call's rows and n (docs/tuning.md).\n"));
  CHECK(Has(header, "kpack_status tk_scale_auto(kpack_stream stream, kpack_dtype T, const void *x, void *out, "
                    "int64_t rows, uint32_t n);\n"));
  // Tunings in package order; pick is in the H100's file only.
  CHECK(Has(launcher, "    static const char *const kpack_gpus[2] = {\"NVIDIA H100 80GB HBM3\", \"NVIDIA A100-SXM4-80GB\"};\n"
                      "    static const int kpack_sms[2] = {90, 80};\n"
                      "    static kpack_tuning_set kpack_tunings = {2, kpack_gpus, kpack_sms, {0}, NULL, 0};\n"));
  CHECK(Has(launcher, "    static const char *const kpack_gpus[1] = {\"NVIDIA H100 80GB HBM3\"};\n"));
  CHECK(Has(launcher, "kpack_tuning_select(\"scale_auto\", &kpack_tunings, &kpack_tuning);\n"));
  // Thresholds in the params' own types: rows (i64) 8 and 512, n (u32)
  // 363, 2897 and 23171.
  CHECK(Has(launcher, "      const size_t kpack_cell = (size_t)((rows >= 8) + (rows >= 512)) * 4 + "
                      "(size_t)((n >= 363u) + (n >= 2897u) + (n >= 23171u));\n"));
  // pick's 19 thresholds are binary searched.
  CHECK(Has(launcher, "        static const int32_t kpack_thresholds[19] = {2, 3, 6, 12, 23, 46, 91, 182, 363, 725, "
                      "1449, 2897, 5793, 11586, 23171, 46341, 92682, 185364, 370728};\n"));
  // f32 has no table in the A100's file.
  CHECK(Has(launcher, "      } else if (T == KPACK_DTYPE_F32) {\n"
                      "        static const int32_t kpack_first[2] = {24, -1};"));
  // The never valid candidate (WIDE with BLOCK 128, candidate 0) is in no
  // ranking; valid is tested only for those it does not fold for.
  CHECK(Has(launcher, "          /* NVIDIA H100 80GB HBM3 (sm_90), T=f16 */\n"
                      "          {1, 255, 255}, {2, 255, 255}, {3, 2, 255}, {4, 3, 5},\n"));
  CHECK(Has(launcher, "              case 3:\n"
                      "                kpack_valid = (int64_t)(1 && (int64_t)(0 || (int64_t)((int64_t)n >= 1024)));\n"));
  CHECK(Has(launcher, "        return tk_scale(stream, T, kpack_candidates[kpack_pick][0], kpack_candidates[kpack_pick][1], "
                      "x, out, rows, n);\n"));
  // Then the rules, as without tuning files.
  CHECK(Has(launcher, "  BLOCK = 256;\n  WIDE = (int64_t)((int64_t)n >= 256);\n"
                      "  return tk_scale(stream, T, (int)BLOCK, (int)WIDE, x, out, rows, n);\n"));
}

TEST_CASE("a package without tuning files: the auto dispatcher of a kernel with tune: is the rules'") {
  std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(DataDir());
  kpack::Diagnostics diag;
  auto pkg = kpack::LoadPackage("manifests/tuned/kpack.yaml", {}, diag);
  std::filesystem::current_path(previous);
  REQUIRE(pkg);
  pkg->tunings.clear();
  auto specs = kpack::Expand(*pkg, diag);
  const std::string launcher = kpack::GenerateLauncherSource(*pkg, specs, {"manifests/tuned/kpack.yaml", "tk.h"});
  CHECK_FALSE(Has(launcher, "kpack_tuning"));
  CHECK(Has(launcher, "kpack_status tk_scale_auto(kpack_stream stream, kpack_dtype T, const void *x, void *out, "
                      "int64_t rows, uint32_t n) {\n  /* The auto constexprs, in the order their rules read each other. */\n"));
}

TEST_CASE("nearest-shape thresholds are ceil(sqrt(a * b)), exact for any int64 neighbours") {
  using kpack::codegen::NearestThreshold;
  CHECK(NearestThreshold(1, 64) == 8);        // 8 * 8 == 1 * 64: the midpoint goes up
  CHECK(NearestThreshold(64, 4096) == 512);
  CHECK(NearestThreshold(128, 1024) == 363);  // sqrt = 362.04
  CHECK(NearestThreshold(8192, 65536) == 23171);
  CHECK(NearestThreshold(1, 2) == 2);
  CHECK(NearestThreshold(2, 3) == 3);         // sqrt(6) = 2.45
  const int64_t max = INT64_MAX;
  CHECK(NearestThreshold(max - 1, max) == max);
  CHECK(NearestThreshold(1, max) == 3037000500);  // ceil(sqrt(2^63 - 1)) = 3037000499.98
  CHECK(NearestThreshold(int64_t{1} << 40, int64_t{1} << 42) == int64_t{1} << 41);
  // The defining property, v < t iff v * v < a * b, at t - 1 and t.
  const std::vector<std::pair<int64_t, int64_t>> pairs = {
      {3, 5}, {1000, 1001}, {999999937, 1000000007}, {max / 3, max / 2}, {4611686018427387904, max}};
  for (const auto& [a, b] : pairs) {
    using u128 = unsigned __int128;
    const int64_t t = NearestThreshold(a, b);
    INFO(a << " " << b << " -> " << t);
    CHECK(static_cast<u128>(t) * static_cast<u128>(t) >= static_cast<u128>(a) * static_cast<u128>(b));
    CHECK(static_cast<u128>(t - 1) * static_cast<u128>(t - 1) < static_cast<u128>(a) * static_cast<u128>(b));
  }
}

namespace {

// The tuned package's inventory, from made-up binaries (inventory_test.cc).
std::string TunedInventory(const Loaded& l) {
  kpack::Plan plan = kpack::MakePlan(l.specs, kpack::ToolVersions{"nvcc 13", ""});
  std::vector<kpack::CompiledUnit> compiled;
  std::vector<kpack::UnitFacts> facts;
  std::vector<kpack::PackedSpec> packed;
  for (size_t i = 0; i < plan.units.size(); ++i) {
    compiled.push_back(kpack::CompiledUnit{"cubin of " + plan.units[i].name, "", {}});
    facts.push_back(kpack::UnitFacts{32, 0, 0, 1024, false, false});
  }
  for (const kpack::Specialization& s : l.specs)
    packed.push_back(kpack::PackedSpec{&s, "fatbin of " + s.name, {kpack::Arch{80}, kpack::Arch{90}}, {}, "release"});
  return kpack::GenerateInventory({&*l.pkg, "manifests/tuned/kpack.yaml", "0.1.0", 1, "nvcc\nBuild cuda_13.0\n", "", "",
                                   &plan, &compiled, &facts, &packed});
}

}  // namespace

TEST_CASE("the inventory carries the decision tables; kpack inspect prints them") {
  Loaded l = LoadTuned();
  const std::string inventory = TunedInventory(l);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(inventory);
  REQUIRE(bool(parsed));
  const llvm::json::Object& scale = *(*parsed->getAsObject()->getArray("kernels"))[0].getAsObject();
  const llvm::json::Object& tuning = *scale.getObject("tuning");
  CHECK(kpack::JsonGetStrings(tuning, "key") == std::vector<std::string>{"rows", "n"});
  CHECK(kpack::JsonGetStrings(tuning, "tuned") == std::vector<std::string>{"BLOCK", "WIDE"});
  const llvm::json::Array& tables = *tuning.getArray("tables");
  REQUIRE(tables.size() == 3);  // the H100's f16 and f32, the A100's f16
  const llvm::json::Object& h100 = *tables[0].getAsObject();
  CHECK(kpack::JsonGetString(h100, "gpu") == "NVIDIA H100 80GB HBM3");
  CHECK(h100.getInteger("sm") == 90);
  CHECK(kpack::JsonGetString(h100, "file") == "tuning/nvidia-h100-80gb-hbm3.yaml");
  CHECK(kpack::JsonGetString(*h100.getObject("for"), "T") == "f16");
  const llvm::json::Array& results = *h100.getArray("results");
  REQUIRE(results.size() == 12);
  const llvm::json::Object& first = *results[0].getAsObject();
  CHECK(kpack::JsonGetString(first, "best") == "BLOCK=128 WIDE=true");
  CHECK(first.getObject("ns")->getInteger("BLOCK=256 WIDE=false") == 1500);
  CHECK((*first.getArray("shape"))[1].getAsInteger() == 128);
  CHECK(results[4].getAsObject()->get("best")->kind() == llvm::json::Value::Null);  // us: {}

  std::string error;
  std::optional<std::string> text = kpack::FormatInventoryTables(inventory, false, &error);
  REQUIRE(text);
  CompareGolden("tk_tables.txt", *text);
  CHECK(Has(*text, "scale: BLOCK, WIDE by rows, n (a grid of 3 x 4 shapes)\n"
                   "  NVIDIA H100 80GB HBM3 (sm_90), T=f16 (tuning/nvidia-h100-80gb-hbm3.yaml):\n"
                   "    rows     n  best                             margin\n"
                   "       1   128  BLOCK=128 WIDE=true               1.200\n"));
  CHECK(Has(*text, "      64   128  - (no candidate ran: the rules)       -\n"));
  CHECK(Has(*text, "    4096  1024  BLOCK=256 WIDE=false              1.000\n"));  // one candidate
  std::optional<std::string> as_json = kpack::FormatInventoryTables(inventory, true, &error);
  REQUIRE(as_json);
  CHECK(Has(*as_json, "\"margin\": \"1.200\""));
  CHECK(Has(*as_json, "\"file_kind\": \"inventory\""));

  // A stale tuning is listed as such.
  for (kpack::TuningFile& file : l.pkg->tunings)
    for (kpack::TunedKernel& tk : file.kernels)
      if (file.sm == 80) {
        tk.stale = true;
        tk.tables.clear();
      }
  text = kpack::FormatInventoryTables(TunedInventory(l), false, &error);
  REQUIRE(text);
  CHECK(Has(*text, "  NVIDIA A100-SXM4-80GB (sm_80) (tuning/nvidia-a100-sxm4-80gb.yaml): stale (its manifest "
                   "changed); the rules decide there\n"));

  CHECK_FALSE(kpack::FormatInventoryTables("{\"kernels\": []}", false, &error));
  CHECK(error == "not a kpack inventory (no \"format\": \"kpack-inventory/...\")");
  CHECK_FALSE(kpack::FormatInventoryTables("{", false, &error));
  CHECK(error.rfind("not a kpack inventory: ", 0) == 0);
}
