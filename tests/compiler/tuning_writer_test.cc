// The tuning file kpack tune writes (tuning_writer.cc): its text word for
// word for a small fixed result set (with probes and an unaligned
// variant's table too, read back by tuning_reader.cc), the numbers'
// spelling, the winner and margin of a shape, and the file name of a GPU.
#include <catch2/catch.hpp>

#include <string>

#include "manifest.h"
#include "test_util.h"
#include "tuning_merge.h"
#include "tuning_reader.h"
#include "tuning_writer.h"

namespace {

// Two kernels: softmax with a dtype (two tables, one shape where nothing
// may run, one candidate missing where it is not valid) and pick with no
// constexpr but the tuned one.
kpack::TuneResults Fixture() {
  kpack::TuneResults r;
  r.package = "kernels";
  r.manifest_label = "manifests/kpack.yaml";
  r.gpu = "NVIDIA H100 80GB HBM3";
  r.sm = 90;
  r.driver = "580.159.04 (CUDA 13.0)";
  r.kpack_version = "0.1.0";
  r.repeats = 25;
  kpack::TunedResultKernel softmax;
  softmax.kernel = "softmax";
  softmax.manifest_hash = "0123456789abcdef";
  softmax.key = {{"rows", {1, 64}}, {"cols", {128, 1024}}};
  softmax.tuned = {"BLOCK"};
  softmax.candidates = {"BLOCK=256", "BLOCK=512", "BLOCK=1024"};
  kpack::TunedResultTable f16;
  f16.combo = {{"T", "f16"}};
  f16.label = "T=f16";
  f16.us = {{2.913, 3.154, 3.9},
            {4.0, 3.2, std::nullopt},
            {std::nullopt, std::nullopt, std::nullopt},
            {10.04, 12.5, 11.0}};
  kpack::TunedResultTable f32 = f16;
  f32.combo = {{"T", "f32"}};
  f32.label = "T=f32";
  f32.us = {{1.5, 1.5, 1.5}, {1234.56, 999.9, 0.04567}, {7.0, std::nullopt, std::nullopt}, {2, 3, 4}};
  softmax.tables = {f16, f32};
  kpack::TunedResultKernel pick;
  pick.kernel = "pick";
  pick.manifest_hash = "1234567890123456";  // only digits: quoted
  pick.key = {{"len", {16}}};
  pick.tuned = {"TILE"};
  pick.candidates = {"TILE=16"};
  kpack::TunedResultTable all;
  all.us = {{5.5}};
  pick.tables = {all};
  r.kernels = {softmax, pick};
  return r;
}

}  // namespace

TEST_CASE("tuning file: the text, word for word") {
  CHECK(
      kpack::FormatTuningFile(Fixture()) ==
      "# Written by `kpack tune` from manifests/kpack.yaml; run it again rather than editing (docs/tuning.md).\n"
      "# us: median microseconds per launch; best: the fastest; margin: the runner-up's time over best's.\n"
      "kpack_tuning: 1\n"
      "package: kernels\n"
      "gpu: NVIDIA H100 80GB HBM3\n"
      "sm: 90\n"
      "driver: \"580.159.04 (CUDA 13.0)\"\n"
      "kpack_version: 0.1.0\n"
      "repeats: 25\n"
      "kernels:\n"
      "  - kernel: softmax\n"
      "    manifest_hash: 0123456789abcdef\n"
      "    key: [rows, cols]\n"
      "    shapes: {rows: [1, 64], cols: [128, 1024]}\n"
      "    tuned: [BLOCK]\n"
      "    tables:\n"
      "      - for: {T: f16}\n"
      "        results:\n"
      "          - {rows: 1, cols: 128, best: \"BLOCK=256\", margin: 1.083, us: {\"BLOCK=256\": 2.91, \"BLOCK=512\": "
      "3.15, \"BLOCK=1024\": 3.9}}\n"
      "          - {rows: 1, cols: 1024, best: \"BLOCK=512\", margin: 1.250, us: {\"BLOCK=256\": 4, \"BLOCK=512\": "
      "3.2}}\n"
      "          - {rows: 64, cols: 128, us: {}}\n"
      "          - {rows: 64, cols: 1024, best: \"BLOCK=256\", margin: 1.096, us: {\"BLOCK=256\": 10, \"BLOCK=512\": "
      "12.5, \"BLOCK=1024\": 11}}\n"
      "      - for: {T: f32}\n"
      "        results:\n"
      "          - {rows: 1, cols: 128, best: \"BLOCK=256\", margin: 1.000, us: {\"BLOCK=256\": 1.5, \"BLOCK=512\": "
      "1.5, \"BLOCK=1024\": 1.5}}\n"
      "          - {rows: 1, cols: 1024, best: \"BLOCK=1024\", margin: 21894.022, us: {\"BLOCK=256\": 1235, "
      "\"BLOCK=512\": 1000, \"BLOCK=1024\": 0.0457}}\n"
      "          - {rows: 64, cols: 128, best: \"BLOCK=256\", margin: 1.000, us: {\"BLOCK=256\": 7}}\n"
      "          - {rows: 64, cols: 1024, best: \"BLOCK=256\", margin: 1.500, us: {\"BLOCK=256\": 2, \"BLOCK=512\": 3, "
      "\"BLOCK=1024\": 4}}\n"
      "  - kernel: pick\n"
      "    manifest_hash: \"1234567890123456\"\n"
      "    key: [len]\n"
      "    shapes: {len: [16]}\n"
      "    tuned: [TILE]\n"
      "    tables:\n"
      "      - for: {}\n"
      "        results:\n"
      "          - {len: 16, best: \"TILE=16\", margin: 1.000, us: {\"TILE=16\": 5.5}}\n");
}

TEST_CASE("tuning file: times with 3 significant digits, never an exponent") {
  CHECK(kpack::FormatMicroseconds(2.913) == "2.91");
  CHECK(kpack::FormatMicroseconds(3.9) == "3.9");
  CHECK(kpack::FormatMicroseconds(3.0) == "3");
  CHECK(kpack::FormatMicroseconds(12.345) == "12.3");
  CHECK(kpack::FormatMicroseconds(123.45) == "123");
  CHECK(kpack::FormatMicroseconds(1234.56) == "1235");
  CHECK(kpack::FormatMicroseconds(2500000.4) == "2500000");
  CHECK(kpack::FormatMicroseconds(0.04567) == "0.0457");
  CHECK(kpack::FormatMicroseconds(0.000123456) == "0.000123");
  CHECK(kpack::FormatMicroseconds(9.996) == "10");
  CHECK(kpack::FormatMicroseconds(0) == "0");
}

TEST_CASE("tuning file: the winner and margin by the printed times") {
  // 2.914 and 2.911 both print 2.91: a tie, to the earlier candidate, and
  // a margin of 1 rather than 2.911 / 2.914.
  kpack::ShapeWinner tie = kpack::WinnerOf({2.914, 2.911});
  CHECK(tie.best == 0u);
  CHECK(tie.margin == 1.0);
  // The margin of the measured times: 3.154 / 2.913, not 3.15 / 2.91.
  CHECK(kpack::WinnerOf({3.154, 2.913}).margin == Approx(3.154 / 2.913));
  kpack::ShapeWinner clear = kpack::WinnerOf({std::nullopt, 4.0, 2.0, 3.0});
  CHECK(clear.best == 2u);
  CHECK(clear.margin == 1.5);
  kpack::ShapeWinner one = kpack::WinnerOf({std::nullopt, 7.0});
  CHECK(one.best == 1u);
  CHECK(one.margin == 1.0);
  CHECK(!kpack::WinnerOf({std::nullopt, std::nullopt}).best);
}

TEST_CASE("tuning file: named after the GPU") {
  CHECK(kpack::GpuSlug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3");
  CHECK(kpack::GpuSlug("NVIDIA A100-SXM4-40GB") == "nvidia-a100-sxm4-40gb");
  CHECK(kpack::GpuSlug("  NVIDIA  GeForce RTX 4090 (rev. 2) ") == "nvidia-geforce-rtx-4090-rev-2");
  CHECK(kpack::GpuSlug("../..") == "gpu");
}

namespace {

// Fixture()'s softmax with two probes (each table's last two rows) and,
// after each combination's table, its unaligned variant's.
kpack::TuneResults WithProbesAndVariants() {
  kpack::TuneResults r = Fixture();
  r.kernels.pop_back();  // pick
  kpack::TunedResultKernel& k = r.kernels[0];
  k.probes = {{8, 368}, {32, 200}};
  std::vector<kpack::TunedResultTable> tables;
  for (kpack::TunedResultTable t : k.tables) {
    t.us.push_back({3.6, 3.0, std::nullopt});
    t.us.push_back({std::nullopt, std::nullopt, std::nullopt});
    tables.push_back(t);
    t.unaligned = true;
    for (auto& shape : t.us)
      for (std::optional<double>& us : shape)
        if (us) *us *= 2;
    tables.push_back(t);
  }
  k.tables = tables;
  return r;
}

// A manifest the file above fits (but for its hash): softmax, a Triton
// kernel with an aligned variant, tuned over rows x cols.
const char* kSoftmax =
    "kernel: softmax\n"
    "language: triton\n"
    "source: sm.py\n"
    "entry: sm\n"
    "constexprs:\n"
    "  - {name: T, type: dtype, values: [f16, f32]}\n"
    "  - {name: BLOCK, type: int, values: [256, 512, 1024], auto: \"256\"}\n"
    "params:\n"
    "  - {name: x, type: const T*, divisibility: auto}\n"
    "  - {name: rows, type: i64}\n"
    "  - {name: cols, type: i64}\n"
    "launch:\n"
    "  grid: [rows]\n"
    "tune:\n"
    "  key: [rows, cols]\n"
    "  shapes: {rows: [1, 64], cols: [128, 1024]}\n"
    "  buffers: {x: rows * cols}\n";

}  // namespace

TEST_CASE("tuning file: probes after each table's results, and the unaligned variant's tables") {
  const std::string text = kpack::FormatTuningFile(WithProbesAndVariants());
  CHECK(text.substr(text.find("    tables:\n")) ==
        "    tables:\n"
        "      - for: {T: f16}\n"
        "        results:\n"
        "          - {rows: 1, cols: 128, best: \"BLOCK=256\", margin: 1.083, us: {\"BLOCK=256\": 2.91, \"BLOCK=512\": "
        "3.15, \"BLOCK=1024\": 3.9}}\n"
        "          - {rows: 1, cols: 1024, best: \"BLOCK=512\", margin: 1.250, us: {\"BLOCK=256\": 4, \"BLOCK=512\": "
        "3.2}}\n"
        "          - {rows: 64, cols: 128, us: {}}\n"
        "          - {rows: 64, cols: 1024, best: \"BLOCK=256\", margin: 1.096, us: {\"BLOCK=256\": 10, \"BLOCK=512\": "
        "12.5, \"BLOCK=1024\": 11}}\n"
        "        probes:\n"
        "          - {rows: 8, cols: 368, best: \"BLOCK=512\", margin: 1.200, us: {\"BLOCK=256\": 3.6, \"BLOCK=512\": "
        "3}}\n"
        "          - {rows: 32, cols: 200, us: {}}\n"
        "      - for: {T: f16}\n"
        "        variant: unaligned\n"
        "        results:\n"
        "          - {rows: 1, cols: 128, best: \"BLOCK=256\", margin: 1.083, us: {\"BLOCK=256\": 5.83, \"BLOCK=512\": "
        "6.31, \"BLOCK=1024\": 7.8}}\n"
        "          - {rows: 1, cols: 1024, best: \"BLOCK=512\", margin: 1.250, us: {\"BLOCK=256\": 8, \"BLOCK=512\": "
        "6.4}}\n"
        "          - {rows: 64, cols: 128, us: {}}\n"
        "          - {rows: 64, cols: 1024, best: \"BLOCK=256\", margin: 1.096, us: {\"BLOCK=256\": 20.1, \"BLOCK=512\": "
        "25, \"BLOCK=1024\": 22}}\n"
        "        probes:\n"
        "          - {rows: 8, cols: 368, best: \"BLOCK=512\", margin: 1.200, us: {\"BLOCK=256\": 7.2, \"BLOCK=512\": "
        "6}}\n"
        "          - {rows: 32, cols: 200, us: {}}\n"
        "      - for: {T: f32}\n"
        "        results:\n"
        "          - {rows: 1, cols: 128, best: \"BLOCK=256\", margin: 1.000, us: {\"BLOCK=256\": 1.5, \"BLOCK=512\": "
        "1.5, \"BLOCK=1024\": 1.5}}\n"
        "          - {rows: 1, cols: 1024, best: \"BLOCK=1024\", margin: 21894.022, us: {\"BLOCK=256\": 1235, "
        "\"BLOCK=512\": 1000, \"BLOCK=1024\": 0.0457}}\n"
        "          - {rows: 64, cols: 128, best: \"BLOCK=256\", margin: 1.000, us: {\"BLOCK=256\": 7}}\n"
        "          - {rows: 64, cols: 1024, best: \"BLOCK=256\", margin: 1.500, us: {\"BLOCK=256\": 2, \"BLOCK=512\": 3, "
        "\"BLOCK=1024\": 4}}\n"
        "        probes:\n"
        "          - {rows: 8, cols: 368, best: \"BLOCK=512\", margin: 1.200, us: {\"BLOCK=256\": 3.6, \"BLOCK=512\": "
        "3}}\n"
        "          - {rows: 32, cols: 200, us: {}}\n"
        "      - for: {T: f32}\n"
        "        variant: unaligned\n"
        "        results:\n"
        "          - {rows: 1, cols: 128, best: \"BLOCK=256\", margin: 1.000, us: {\"BLOCK=256\": 3, \"BLOCK=512\": 3, "
        "\"BLOCK=1024\": 3}}\n"
        "          - {rows: 1, cols: 1024, best: \"BLOCK=1024\", margin: 21894.022, us: {\"BLOCK=256\": 2469, "
        "\"BLOCK=512\": 2000, \"BLOCK=1024\": 0.0913}}\n"
        "          - {rows: 64, cols: 128, best: \"BLOCK=256\", margin: 1.000, us: {\"BLOCK=256\": 14}}\n"
        "          - {rows: 64, cols: 1024, best: \"BLOCK=256\", margin: 1.500, us: {\"BLOCK=256\": 4, \"BLOCK=512\": 6, "
        "\"BLOCK=1024\": 8}}\n"
        "        probes:\n"
        "          - {rows: 8, cols: 368, best: \"BLOCK=512\", margin: 1.200, us: {\"BLOCK=256\": 7.2, \"BLOCK=512\": "
        "6}}\n"
        "          - {rows: 32, cols: 200, us: {}}\n");
  // A kernel without probes has no probes: key (Fixture's pick and softmax).
  CHECK(kpack::FormatTuningFile(Fixture()).find("probes") == std::string::npos);
  CHECK(kpack::FormatTuningFile(Fixture()).find("variant") == std::string::npos);
  CHECK(kpack::FormatTuningFile(WithProbesAndVariants()) == text);
}

TEST_CASE("tuning file: what the writer writes, the reader reads back") {
  kpack::testing::ScratchDir dir;
  dir.Write("kpack.yaml", "package: kernels\narchs: [sm_90]\nkernels: [k.yaml]\n");
  dir.Write("k.yaml", kSoftmax);
  dir.Write("sm.py", "# never read\n");
  dir.Write("t.yaml", kpack::FormatTuningFile(WithProbesAndVariants()));
  kpack::Diagnostics diag;
  std::optional<kpack::Package> pkg = kpack::LoadPackage("kpack.yaml", {}, diag);
  REQUIRE(pkg);
  std::optional<kpack::TuningFile> file = kpack::ReadTuningFile("t.yaml", "t.yaml", *pkg, {}, diag);
  CHECK(diag.Text() == "");
  REQUIRE(file);
  REQUIRE(file->kernels.size() == 1);
  const kpack::TunedKernel& tk = file->kernels[0];
  CHECK(tk.labels == std::vector<std::string>{"BLOCK=256", "BLOCK=512", "BLOCK=1024"});
  REQUIRE(tk.tables.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    INFO("table " << i);
    const kpack::TunedTable& t = tk.tables[i];
    const double scale = i % 2 ? 2 : 1;
    CHECK(t.unaligned == (i % 2 == 1));
    CHECK(t.for_text == std::vector<std::pair<std::string, std::string>>{{"T", i < 2 ? "f16" : "f32"}});
    CHECK(t.ranking.size() == 4);
    REQUIRE(t.probes.size() == 2);
    CHECK(t.probes[0].at == std::vector<int64_t>{8, 368});
    CHECK(t.probes[0].ranking == std::vector<std::pair<size_t, double>>{{1, 3.0 * scale}, {0, 3.6 * scale}});
    CHECK(t.probes[1].at == std::vector<int64_t>{32, 200});
    CHECK(t.probes[1].ranking.empty());
  }
}

// ---- kpack tune --kernel: merging into the file of the GPU (tuning_merge.h) ----

namespace {

const char* kHeader =
    "# Written by `kpack tune` from kpack.yaml; run it again rather than editing (docs/tuning.md).\n"
    "kpack_tuning: 1\npackage: tiny\ngpu: NVIDIA H100 80GB HBM3\nsm: 90\ndriver: \"D1\"\nkernels:\n";

std::string Entry(const std::string& name, const std::string& hash) {
  return "  - kernel: " + name + "\n    manifest_hash: " + hash + "\n    key: [n]\n    shapes: {n: [1, 2]}\n" +
         "    tuned: [BLOCK]\n    tables:\n      - for: {}\n        results:\n" +
         "          - {n: 1, best: \"BLOCK=1\", us: {\"BLOCK=1\": 1}}\n";
}

}  // namespace

TEST_CASE("tuning merge: the re-tuned kernels take their entries' places, the others stay byte for byte") {
  const std::string existing = std::string(kHeader) + Entry("a", "aaaa") + Entry("b", "bbbb") + Entry("c", "cccc");
  std::string fresh = std::string(kHeader) + Entry("b", "b222") + Entry("d", "d222");
  fresh = kpack::testing::Replace(fresh, "driver: \"D1\"", "driver: \"D2\"");
  const kpack::TuningMerge m = kpack::MergeTuningText("t/h100.yaml", existing, fresh);
  REQUIRE(m.error == "");
  CHECK(m.kept == std::vector<std::string>{"a", "c"});
  // The fresh header (its driver), a, the new b in b's place, c, then d.
  CHECK(m.text == kpack::testing::Replace(kHeader, "driver: \"D1\"", "driver: \"D2\"") + Entry("a", "aaaa") +
                      Entry("b", "b222") + Entry("c", "cccc") + Entry("d", "d222"));
  // Merging the same run again changes nothing.
  CHECK(kpack::MergeTuningText("t/h100.yaml", m.text, fresh).text == m.text);
}

TEST_CASE("tuning merge: a file it cannot merge into is a located error") {
  const std::string fresh = std::string(kHeader) + Entry("a", "a222");
  CHECK(kpack::MergeTuningText("t/h100.yaml", "kpack_tuning: 1\n", fresh).error ==
        "t/h100.yaml:1:1: error: not a tuning file as kpack tune writes it (no 'kernels:' line), so --kernel cannot "
        "merge into it; tune every kernel (without --kernel) to write it anew, or write elsewhere (-o)");
  CHECK(kpack::MergeTuningText("t/h100.yaml", std::string(kHeader) + Entry("a", "aaaa") + "# edited\n", fresh).error ==
        "t/h100.yaml:17:1: error: this line is not part of a kernel's entry as kpack tune writes it, so --kernel "
        "cannot merge into it; tune every kernel (without --kernel) to write it anew, or write elsewhere (-o)");
  CHECK(kpack::MergeTuningText("t/h100.yaml",
                               kpack::testing::Replace(kHeader, "gpu: NVIDIA H100 80GB HBM3", "gpu: NVIDIA H100 PCIe") +
                                   Entry("a", "aaaa"),
                               fresh)
            .error == "t/h100.yaml:4:1: error: this tuning file is for gpu 'NVIDIA H100 PCIe', and this run tuned gpu "
                      "'NVIDIA H100 80GB HBM3'; tune every kernel (without --kernel) to write it anew, or write "
                      "elsewhere (-o)");
  CHECK(kpack::MergeTuningText("t/h100.yaml", kpack::testing::Replace(kHeader, "package: tiny", "package: big"), fresh)
            .error == "t/h100.yaml:3:1: error: this tuning file is for package 'big', and this run tuned package "
                      "'tiny'; tune every kernel (without --kernel) to write it anew, or write elsewhere (-o)");
}
