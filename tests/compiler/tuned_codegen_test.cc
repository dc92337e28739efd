// The decision tables kpack generates (tuned_table_gen.cc) into the auto
// dispatchers of the tuned package (tests/compiler/manifests/tuned: scale,
// whose valid reads sizeof(T), and pick, whose key of 20 values is binary
// searched), from its two tuning files, against golden files (tk.h,
// tk_launch.c); tests/runtime/tuned_launch_test.cc runs that launcher
// against the fake driver.  Also the inventory's and `kpack inspect`'s
// view of the tables, the regions of the lookup and the minimax ranking of
// the cells between grid shapes, on hand-made tables.
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
#include "golden_util.h"
#include "inspect.h"
#include "inventory.h"
#include "json_util.h"
#include "manifest.h"
#include "plan.h"
#include "tune_hash.h"
#include "tuned_table_gen.h"
#include "tuning_reader.h"

namespace {

using kpack::testing::CompareGolden;
using kpack::testing::DataDir;

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
  CHECK(Has(header, " * table chooses them instead: the candidate, valid for this call, whose worst\n"
                    " * slowdown over the tuned shapes that enclose this call's rows and n is least\n"
                    " * (docs/tuning.md).\n"));
  CHECK(Has(header, "kpack_status tk_scale_auto(kpack_stream stream, kpack_dtype T, const void *x, void *out, "
                    "int64_t rows, uint32_t n);\n"));
  // Tunings in package order; pick is in the H100's file only.
  CHECK(Has(launcher, "    static const char *const kpack_gpus[2] = {\"NVIDIA H100 80GB HBM3\", \"NVIDIA A100-SXM4-80GB\"};\n"
                      "    static const int kpack_sms[2] = {90, 80};\n"
                      "    static kpack_tuning_set kpack_tunings = {2, kpack_gpus, kpack_sms, {0}, NULL, 0};\n"));
  CHECK(Has(launcher, "    static const char *const kpack_gpus[1] = {\"NVIDIA H100 80GB HBM3\"};\n"));
  CHECK(Has(launcher, "kpack_tuning_select(\"scale_auto\", &kpack_tunings, &kpack_tuning);\n"));
  // Regions by comparisons against the grid values in the params' own
  // types: rows (i64) [1, 64, 4096] has 5 regions, n (u32) [128, 1024,
  // 8192, 65536] 7.
  CHECK(Has(launcher, "      const size_t kpack_cell = (size_t)((rows > 1) + (rows >= 64) + (rows > 64) + (rows >= 4096)) * 7 + "
                      "(size_t)((n > 128u) + (n >= 1024u) + (n > 1024u) + (n >= 8192u) + (n > 8192u) + "
                      "(n >= 65536u));\n"));
  // pick's grid of 20 values (39 regions) is binary searched.
  CHECK(Has(launcher, "        static const int32_t kpack_grid[20] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, "
                      "4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288};\n"));
  CHECK(Has(launcher, "        if (kpack_lo < 20 && kpack_grid[kpack_lo] == len)\n"
                      "          kpack_at_len = 2 * kpack_lo;\n"
                      "        else if (kpack_lo == 0)\n"
                      "          kpack_at_len = 0;\n"
                      "        else if (kpack_lo == 20)\n"
                      "          kpack_at_len = 38;\n"
                      "        else\n"
                      "          kpack_at_len = 2 * kpack_lo - 1;\n"));
  // f32 has no table in the A100's file.
  CHECK(Has(launcher, "      } else if (T == KPACK_DTYPE_F32) {\n"
                      "        static const int32_t kpack_first[2] = {70, -1};"));
  // The never valid candidate (WIDE with BLOCK 128, candidate 0) is in no
  // ranking; valid is tested only for those it does not fold for.  rows 1:
  // the grid's rankings at the even regions (n 128, 1024, 8192, 65536);
  // between 1024 and 8192 candidate 2 (BLOCK=256, 1.0 and 1.1 of the
  // fastest) before 3 (1.2 at 1024, 1.0 at 8192); between 8192 and 65536
  // only candidate 3 (BLOCK=512 WIDE=false) ran at both.
  CHECK(Has(launcher, "          /* NVIDIA H100 80GB HBM3 (sm_90), T=f16 */\n"
                      "          {1, 255, 255}, {1, 255, 255}, {2, 255, 255}, {2, 255, 255}, {3, 2, 255}, {3, 255, 255}, "
                      "{4, 3, 5},\n"));
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

TEST_CASE("a key's regions: 2i at grid value i (and beyond the ends), 2i + 1 strictly between") {
  using kpack::codegen::RegionCount;
  using kpack::codegen::RegionOf;
  CHECK(RegionCount(1) == 1);
  CHECK(RegionCount(4) == 7);
  const std::vector<int64_t> grid = {128, 1024, 8192, 65536};
  CHECK(RegionOf(grid, 1) == 0);  // below the first: the first's
  CHECK(RegionOf(grid, 128) == 0);
  CHECK(RegionOf(grid, 129) == 1);
  CHECK(RegionOf(grid, 1023) == 1);
  CHECK(RegionOf(grid, 1024) == 2);
  CHECK(RegionOf(grid, 8191) == 3);
  CHECK(RegionOf(grid, 8192) == 4);
  CHECK(RegionOf(grid, 8304) == 5);  // the softmax cliff: not 8192's region
  CHECK(RegionOf(grid, 65536) == 6);
  CHECK(RegionOf(grid, INT64_MAX) == 6);  // beyond the last: the last's
  CHECK(RegionOf({7}, 0) == 0);
  CHECK(RegionOf({7}, 7) == 0);
  CHECK(RegionOf({7}, 8) == 0);
  const std::vector<int64_t> big = {1, INT64_MAX - 1, INT64_MAX};
  CHECK(RegionOf(big, INT64_MAX - 2) == 1);
  CHECK(RegionOf(big, INT64_MAX - 1) == 2);
  CHECK(RegionOf(big, INT64_MAX) == 4);
}

namespace {

using kpack::codegen::CellRanking;

std::vector<size_t> Order(const CellRanking& r) {
  std::vector<size_t> out;
  for (const auto& [c, score] : r) out.push_back(c);
  return out;
}

}  // namespace

TEST_CASE("minimax ranking: a cliff between grid shapes goes to the candidate good at both") {
  using kpack::codegen::MinimaxRanking;
  // cols 4096 and 8192 of a softmax: candidate 0 (BLOCK=8192, one pass
  // up to 8192) wins at 8192 but is 1.6x slower at 4096 (wasted lanes);
  // candidate 1 is 1.1x off the fastest at both.  Nearest-shape picked 0
  // for every cols near 8192, minimax takes 1 between them.
  const CellRanking at4096 = {{2, 10.0}, {1, 11.0}, {0, 16.0}};
  const CellRanking at8192 = {{0, 20.0}, {1, 22.0}, {2, 40.0}};
  const CellRanking between = MinimaxRanking({&at4096, &at8192});
  CHECK(Order(between) == std::vector<size_t>{1, 0, 2});
  CHECK(between[0].second == Approx(1.1));  // the worst ratio
  CHECK(between[1].second == Approx(1.6));
  CHECK(between[2].second == Approx(2.0));
  // At a grid shape, the shape's own ranking, as the file ordered it (its
  // best first among equal times, here 1 before 0).
  const CellRanking tied = {{1, 3.0}, {0, 3.0}, {2, 6.0}};
  CHECK(Order(MinimaxRanking({&tied})) == std::vector<size_t>{1, 0, 2});
  CHECK(MinimaxRanking({&tied})[2].second == Approx(2.0));
}

TEST_CASE("minimax ranking: equal worst ratios go by their sum, then by candidate") {
  using kpack::codegen::MinimaxRanking;
  // 0 and 1 are each 1.25 off at one corner; 2 is 1.25 off at one and 1.1
  // at the other (worst 1.25, greater sum); 3 is 1.5 off.
  const CellRanking a = {{0, 4.0}, {2, 4.4}, {1, 5.0}, {3, 6.0}};
  const CellRanking b = {{1, 8.0}, {0, 10.0}, {2, 10.0}, {3, 10.0}};
  CHECK(Order(MinimaxRanking({&a, &b})) == std::vector<size_t>{0, 1, 2, 3});
  CHECK(Order(MinimaxRanking({&b, &a})) == std::vector<size_t>{0, 1, 2, 3});  // corner order does not matter
  // Four corners (two keys between grid values): the worst of all four.
  // 1 and 2 are 1.25 at worst (sums 3.35 and 4.35); 0 and 3 are 2x off at
  // d, and 0's sum (5.25) is less than 3's (5.75).
  const CellRanking c = {{3, 1.0}, {0, 1.0}, {1, 1.0}, {2, 1.0}};
  const CellRanking d = {{2, 1.0}, {1, 1.1}, {0, 2.0}, {3, 2.0}};
  CHECK(Order(MinimaxRanking({&a, &b, &c, &d})) == std::vector<size_t>{1, 2, 0, 3});
}

TEST_CASE("minimax ranking: only candidates timed in every corner; none: the first corner with a ranking") {
  using kpack::codegen::MinimaxRanking;
  const CellRanking a = {{0, 1.0}, {1, 1.5}, {2, 1.6}};
  const CellRanking b = {{2, 2.0}, {1, 3.0}};  // 0 did not run here
  // 0, the fastest at a, is out; 1 is 1.5x off at both, 2 1.6x at a.
  CHECK(Order(MinimaxRanking({&a, &b})) == std::vector<size_t>{1, 2});
  const CellRanking c = {{0, 1.0}};
  const CellRanking empty;  // us: {}
  // No common candidate: the lower corner's ranking, or the next with one.
  CHECK(Order(MinimaxRanking({&c, &b})) == std::vector<size_t>{0});
  CHECK(Order(MinimaxRanking({&b, &c})) == std::vector<size_t>{2, 1});
  CHECK(Order(MinimaxRanking({&a, &empty})) == std::vector<size_t>{0, 1, 2});
  CHECK(Order(MinimaxRanking({&empty, &b})) == std::vector<size_t>{2, 1});
  CHECK(MinimaxRanking({&empty, &empty}).empty());  // the rules decide
  CHECK(MinimaxRanking({&empty}).empty());
}

TEST_CASE("region rankings: row-major over 2n - 1 regions per key, from each cell's corners") {
  using kpack::codegen::RegionRankings;
  // A 2 x 2 grid (rows-major): shapes (r0, c0) (r0, c1) (r1, c0) (r1, c1).
  const std::vector<CellRanking> grid = {
      {{0, 1.0}, {1, 2.0}}, {{1, 1.0}, {0, 3.0}}, {{0, 1.0}, {1, 1.2}}, {{1, 1.0}, {0, 1.1}}};
  const std::vector<CellRanking> cells = RegionRankings(grid, {{1, 4}, {64, 256}});
  REQUIRE(cells.size() == 9);
  CHECK(Order(cells[0]) == std::vector<size_t>{0, 1});  // (r0, c0)
  CHECK(Order(cells[1]) == std::vector<size_t>{1, 0});  // between c0 and c1 at r0: 1 is 2x, 0 3x
  CHECK(Order(cells[2]) == std::vector<size_t>{1, 0});  // (r0, c1)
  CHECK(Order(cells[3]) == std::vector<size_t>{0, 1});  // between r0 and r1 at c0: 0 is never off
  CHECK(Order(cells[4]) == std::vector<size_t>{1, 0});  // all four: 1 is 2x at worst, 0 3x
  CHECK(Order(cells[5]) == std::vector<size_t>{1, 0});
  CHECK(Order(cells[6]) == std::vector<size_t>{0, 1});  // (r1, c0)
  CHECK(Order(cells[7]) == std::vector<size_t>{0, 1});  // 0: 1.1 at worst, 1: 1.2
  CHECK(Order(cells[8]) == std::vector<size_t>{1, 0});  // (r1, c1)
  CHECK(RegionRankings({{{0, 1.0}}}, {{8}}).size() == 1);
}

TEST_CASE("region rankings: the probes' values split the lookup's regions; a cell cut off from them takes its grid cell's") {
  using kpack::codegen::LookupAxis;
  using kpack::codegen::ProbeRanking;
  using kpack::codegen::RegionRankings;
  CHECK(LookupAxis({1024, 16384}, {4112, 4112, 1024, 99999, 1}) == std::vector<int64_t>{1024, 4112, 16384});
  // One key, grid {1024, 16384}, probe 4112: 0 wins at 1024 and at the
  // probe, 1 at 16384 (where 0 is 1.5x).
  const std::vector<CellRanking> grid = {{{0, 1.0}, {1, 1.3}}, {{1, 4.0}, {0, 6.0}}};
  const CellRanking probe = {{0, 2.0}, {1, 2.2}};
  const std::vector<CellRanking> cells =
      RegionRankings(grid, {{1024, 16384}}, {ProbeRanking{{4112}, &probe}}, {{1024, 4112, 16384}});
  REQUIRE(cells.size() == 5);
  CHECK(Order(cells[0]) == std::vector<size_t>{0, 1});  // 1024
  CHECK(Order(cells[1]) == std::vector<size_t>{0, 1});  // (1024, 4112): 0 is the best at both
  CHECK(Order(cells[2]) == std::vector<size_t>{0, 1});  // the probe's own
  CHECK(Order(cells[3]) == std::vector<size_t>{1, 0});  // (4112, 16384): 1 is 1.1x at worst, 0 1.5x
  CHECK(cells[3][0].second == Approx(1.1));
  CHECK(Order(cells[4]) == std::vector<size_t>{1, 0});  // 16384
  // Two keys, grid {1, 4} x {1024, 16384}, the probe at (2, 4112): the
  // cell rows (2, 4), n (4112, 16384) holds the probe and (4, 16384); the
  // cell rows 4, n (4112, 16384) only (4, 16384): its grid cell's, rows 4
  // and n between 1024 and 16384, with the corners (4, 1024) and (4, 16384).
  const std::vector<CellRanking> grid2 = {grid[0], grid[1], {{1, 1.0}, {0, 1.05}}, grid[1]};
  const std::vector<CellRanking> cells2 =
      RegionRankings(grid2, {{1, 4}, {1024, 16384}}, {ProbeRanking{{2, 4112}, &probe}}, {{1, 2, 4}, {1024, 4112, 16384}});
  REQUIRE(cells2.size() == 25);
  CHECK(Order(cells2[3 * 5 + 3]) == std::vector<size_t>{1, 0});
  CHECK(cells2[3 * 5 + 3][0].second == Approx(1.1));
  CHECK(Order(cells2[4 * 5 + 3]) == std::vector<size_t>{1, 0});
  CHECK(cells2[4 * 5 + 3][1].second == Approx(1.5));  // 0: 1.05 at (4, 1024), 1.5 at (4, 16384)
  CHECK(cells2[4 * 5 + 3][0].second == Approx(1.0));
}

TEST_CASE("region rankings: a probe inside a cell counts as one more corner of that cell only") {
  using kpack::codegen::ProbeRanking;
  using kpack::codegen::RegionRankings;
  // One key, grid {1024, 4096}: candidate 0 wins at both ends, but at the
  // probe between them (a nearly empty second tile) it is 1.5x.
  const std::vector<CellRanking> grid = {{{0, 1.0}, {1, 1.1}}, {{0, 4.0}, {1, 4.2}}};
  const CellRanking cliff = {{1, 2.0}, {0, 3.0}}, empty;
  std::vector<CellRanking> cells = RegionRankings(grid, {{1024, 4096}}, {ProbeRanking{{2064}, &cliff}});
  REQUIRE(cells.size() == 3);
  CHECK(Order(cells[0]) == std::vector<size_t>{0, 1});  // at 1024: its own order
  CHECK(Order(cells[1]) == std::vector<size_t>{1, 0});  // between: 1 is 1.1x at worst, 0 1.5x at the probe
  CHECK(cells[1][0].second == Approx(1.1));
  CHECK(cells[1][1].second == Approx(1.5));
  CHECK(Order(cells[2]) == std::vector<size_t>{0, 1});  // at 4096
  // Without the probe, or with a probe that has no times, 0 wins between.
  CHECK(Order(RegionRankings(grid, {{1024, 4096}})[1]) == std::vector<size_t>{0, 1});
  CHECK(Order(RegionRankings(grid, {{1024, 4096}}, {ProbeRanking{{2064}, &empty}})[1]) == std::vector<size_t>{0, 1});
  // Two keys: the probe (rows 2, cols 2064) lies in cell (1, 1) of 3 x 3,
  // and changes nothing elsewhere.
  const std::vector<CellRanking> grid2 = {grid[0], grid[1], grid[0], grid[1]};
  cells = RegionRankings(grid2, {{1, 4}, {1024, 4096}}, {ProbeRanking{{2, 2064}, &cliff}});
  REQUIRE(cells.size() == 9);
  for (size_t cell = 0; cell < 9; ++cell)
    CHECK(Order(cells[cell]) == (cell == 4 ? std::vector<size_t>{1, 0} : std::vector<size_t>{0, 1}));
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
  std::vector<kpack::PackedBlob> blobs;
  for (const kpack::Specialization& s : l.specs) {
    packed.push_back(kpack::PackedSpec{&s, blobs.size(), {kpack::Arch{80}, kpack::Arch{90}}, {}, "release"});
    blobs.push_back(kpack::PackedBlob{s.Stem(), "fatbin of " + s.name});
  }
  return kpack::GenerateInventory({&*l.pkg, "manifests/tuned/kpack.yaml", "0.1.0", 1, "nvcc\nBuild cuda_13.0\n", "", "",
                                   &plan, &compiled, &facts, &packed, &blobs});
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
