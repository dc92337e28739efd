// The tuning file kpack tune writes (tuning_writer.cc): its text word for
// word for a small fixed result set, the numbers' spelling, the winner and
// margin of a shape, and the file name of a GPU.
#include <catch2/catch.hpp>

#include <string>

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
