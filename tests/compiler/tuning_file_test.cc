// Tuning files (tuning_reader.cc): the package file's `tuning:` list, each
// file's format, and after the expand pass staleness (an error, or with
// --allow-stale-tuning a warning and the tables dropped) and agreement with
// the manifest and the builds; every message word for word at its
// file:line:col.  The tables they become are tested in
// tuned_codegen_test.cc.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "codegen_text.h"
#include "expand.h"
#include "test_util.h"
#include "tune_hash.h"
#include "tuned_table_gen.h"
#include "tuning_reader.h"

using kpack::testing::Replace;
using kpack::testing::ScratchDir;

namespace {

// A tuned kernel: T (f32, f16, bf16; bf16 excluded) and BLOCK, whose auto
// rule the tables replace; f32 has no BLOCK 512.
const char* kTuned =
    "kernel: softmax\n"                                                         // 1
    "source: sm.cuh\n"                                                          // 2
    "entry: sm\n"                                                               // 3
    "constexprs:\n"                                                             // 4
    "  - {name: T, type: dtype, values: [f32, f16, bf16]}\n"                    // 5
    "  - {name: BLOCK, type: int, values: [128, 256, 512], tag: b, auto: \"256\"}\n"  // 6
    "params:\n"                                                                 // 7
    "  - {name: x, type: const T*}\n"                                           // 8
    "  - {name: rows, type: i64}\n"                                             // 9
    "  - {name: cols, type: i64}\n"                                             // 10
    "exclude:\n"                                                                // 11
    "  - {T: f32, BLOCK: 512}\n"                                                // 12
    "  - {T: bf16}\n"                                                           // 13
    "launch:\n"                                                                 // 14
    "  grid: [rows]\n"                                                          // 15
    "  block: [BLOCK]\n"                                                        // 16
    "tune:\n"                                                                   // 17
    "  key: [rows, cols]\n"                                                     // 18
    "  shapes:\n"                                                               // 19
    "    rows: [1, 64]\n"                                                       // 20
    "    cols: [128, 1024]\n"                                                   // 21
    "  buffers:\n"                                                              // 22
    "    x: rows * cols\n";                                                     // 23

// Its tuning file; HASH is replaced by the manifest's hash.
const char* kFile =
    "# Written by kpack tune\n"                                                 // 1
    "kpack_tuning: 1\n"                                                         // 2
    "package: demo\n"                                                           // 3
    "gpu: NVIDIA H100 80GB HBM3\n"                                              // 4
    "sm: 90\n"                                                                  // 5
    "driver: \"580.159.04 (CUDA 13.0)\"\n"                                      // 6
    "kpack_version: 0.1.0\n"                                                    // 7
    "repeats: 25\n"                                                             // 8
    "kernels:\n"                                                                // 9
    "  - kernel: softmax\n"                                                     // 10
    "    manifest_hash: HASH\n"                                                 // 11
    "    key: [rows, cols]\n"                                                   // 12
    "    shapes: {rows: [1, 64], cols: [128, 1024]}\n"                          // 13
    "    tuned: [BLOCK]\n"                                                      // 14
    "    tables:\n"                                                             // 15
    "      - for: {T: f16}\n"                                                   // 16
    "        results:\n"                                                        // 17
    "          - {rows: 1, cols: 128, best: \"BLOCK=128\", margin: 1.1, us: {\"BLOCK=128\": 2.0, \"BLOCK=256\": 2.2}}\n"
    "          - {rows: 1, cols: 1024, best: \"BLOCK=256\", margin: 1.1, us: {\"BLOCK=256\": 3.0, \"BLOCK=512\": 3.3}}\n"
    "          - {rows: 64, cols: 128, us: {}}\n"                               // 20
    "          - {rows: 64, cols: 1024, best: \"BLOCK=512\", margin: 1.0, us: {\"BLOCK=512\": 5.0}}\n";  // 21

const char* kPackageFile = "package: demo\narchs: [sm_80]\nkernels: [k.yaml]\ntuning: [t.yaml]\n";

struct Loaded {
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;
  std::string errors;  // of the load pass, then (when it loaded) CheckTunings
  std::string hash;    // the manifest's TuneManifestHash
};

// softmax's TuneManifestHash, for `kernel` (written as k.yaml, in the
// current directory).
std::string HashOf(const std::string& kernel) {
  ScratchDir dir;
  dir.Write("package.yaml", "package: demo\narchs: [sm_80]\nkernels: [k.yaml]\n");
  dir.Write("k.yaml", kernel);
  dir.Write("sm.cuh", "// template\n");
  dir.Write("sm.py", "# a Triton kernel's source, never read here\n");
  kpack::Diagnostics diag;
  std::optional<kpack::Package> pkg = kpack::LoadPackage("package.yaml", {}, diag);
  REQUIRE(diag.Text() == "");
  std::vector<kpack::Specialization> specs = kpack::Expand(*pkg, diag);
  return kpack::TuneManifestHash(pkg->kernels[0], kpack::codegen::SpecsOf(pkg->kernels[0], specs));
}

// Loads package.yaml (listing k.yaml and t.yaml) with `file` as t.yaml,
// HASH in it replaced by the hash of `kernel`; expands and checks.
Loaded Load(const std::string& file, const std::string& kernel = kTuned, bool allow_stale = false,
            const std::string& package = kPackageFile) {
  Loaded out;
  out.hash = HashOf(kernel);
  std::string text = file;
  if (size_t at = text.find("HASH"); at != std::string::npos) text.replace(at, 4, out.hash);
  ScratchDir dir;
  dir.Write("package.yaml", package);
  dir.Write("k.yaml", kernel);
  dir.Write("sm.cuh", "// template\n");
  dir.Write("sm.py", "# a Triton kernel's source, never read here\n");
  dir.Write("t.yaml", text);
  kpack::Diagnostics diag;
  out.pkg = kpack::LoadPackage("package.yaml", {}, diag);
  if (out.pkg) {
    out.specs = kpack::Expand(*out.pkg, diag);
    kpack::CheckTunings(*out.pkg, out.specs, allow_stale, diag);
  }
  out.errors = diag.Text();
  return out;
}

std::string Errors(const std::string& file) { return Load(file).errors; }

// `text` with every `from` replaced by `to` (at least one: see Replace).
std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  text = Replace(text, from, to);
  for (size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), to);
  return text;
}

}  // namespace

TEST_CASE("a tuning file is read into the package's tunings") {
  Loaded l = Load(kFile);
  REQUIRE(l.errors == "");
  REQUIRE(l.pkg->tunings.size() == 1);
  const kpack::TuningFile& f = l.pkg->tunings[0];
  CHECK(f.path == "t.yaml");
  CHECK(f.listed == "t.yaml");
  CHECK(f.gpu == "NVIDIA H100 80GB HBM3");
  CHECK(f.sm == 90);
  CHECK(f.driver == "580.159.04 (CUDA 13.0)");
  CHECK(f.kpack_version == "0.1.0");
  REQUIRE(f.kernels.size() == 1);
  const kpack::TunedKernel& tk = f.kernels[0];
  CHECK(tk.kernel == "softmax");
  CHECK(tk.manifest_hash == l.hash);
  CHECK(tk.tuned == std::vector<std::string>{"BLOCK"});
  CHECK(tk.labels == std::vector<std::string>{"BLOCK=128", "BLOCK=256", "BLOCK=512"});
  CHECK(tk.candidates == std::vector<std::vector<int64_t>>{{128}, {256}, {512}});
  REQUIRE(tk.tables.size() == 1);
  const kpack::TunedTable& t = tk.tables[0];
  REQUIRE(t.combo.size() == 1);
  CHECK(t.combo[0].dtype == kpack::Scalar::kF16);
  REQUIRE(t.ranking.size() == 4);
  CHECK(t.ranking[0] == std::vector<std::pair<size_t, double>>{{0, 2.0}, {1, 2.2}});
  CHECK(t.ranking[2].empty());
  CHECK(t.ranking[3] == std::vector<std::pair<size_t, double>>{{2, 5.0}});
  CHECK(kpack::Margin(t.ranking[0]) == Approx(1.1));
  CHECK(kpack::Margin(t.ranking[3]) == 1.0);
  CHECK(kpack::Margin(t.ranking[2]) == 0.0);
  CHECK(!tk.stale);
  CHECK(kpack::codegen::TablesFor(*l.pkg, l.pkg->kernels[0]).size() == 1);
}

TEST_CASE("a tie for the fastest keeps the file's best first; the ranking is by time") {
  Loaded l = Load(Replace(kFile, "us: {\"BLOCK=128\": 2.0, \"BLOCK=256\": 2.2}",
                          "us: {\"BLOCK=256\": 2.0, \"BLOCK=512\": 2.5, \"BLOCK=128\": 2.0}"));
  REQUIRE(l.errors == "");
  const kpack::TunedKernel& tk = l.pkg->tunings[0].kernels[0];
  CHECK(tk.labels == std::vector<std::string>{"BLOCK=256", "BLOCK=512", "BLOCK=128"});
  CHECK(tk.tables[0].ranking[0] == std::vector<std::pair<size_t, double>>{{2, 2.0}, {0, 2.0}, {1, 2.5}});
}

TEST_CASE("the package file's tuning: list") {
  auto with = [](const std::string& tuning) {
    return Load(kFile, kTuned, false, "package: demo\narchs: [sm_80]\nkernels: [k.yaml]\ntuning: " + tuning + "\n")
        .errors;
  };
  CHECK(with("t.yaml") == "package.yaml:4:9: error: tuning must be a list of tuning files (written by kpack tune)\n");
  CHECK(with("[[t.yaml]]") == "package.yaml:4:10: error: each entry of tuning must be a string\n");
  CHECK(with("[u.yaml]") == "package.yaml:4:10: error: tuning file 'u.yaml' not found (looked for u.yaml)\n");
  CHECK(with("[t.yaml, ./t.yaml]") ==
        "package.yaml:4:18: error: tuning file './t.yaml' is listed twice (first at package.yaml:4:10)\n");
  CHECK(with("[../t.yaml]") ==
        "package.yaml:4:10: error: tuning file '../t.yaml' is outside the project root '.' (kpack reads only files "
        "inside the project; pass --allow-outside-root to lift this)\n");
  CHECK(with("[]") == "");
}

TEST_CASE("a tuning file's keys, version and package") {
  CHECK(Errors(Replace(kFile, "gpu:", "gpus:")) ==
        "t.yaml:4:1: error: unknown key 'gpus' in a tuning file (expected one of: kpack_tuning, package, gpu, sm, "
        "driver, kpack_version, repeats, kernels)\n"
        "t.yaml:2:1: error: a tuning file is missing required key 'gpu'\n");
  CHECK(Errors(Replace(kFile, "sm: 90\n", "")) == "t.yaml:2:1: error: a tuning file is missing required key 'sm'\n");
  CHECK(Errors(Replace(kFile, "kpack_tuning: 1", "kpack_tuning: 2")) ==
        "t.yaml:2:15: error: kpack_tuning 2 is a format this kpack does not read (it reads kpack_tuning: 1); run this "
        "kpack's kpack tune again\n");
  CHECK(Errors(Replace(kFile, "kpack_tuning: 1", "kpack_tuning: one")) ==
        "t.yaml:2:15: error: kpack_tuning must be an integer\n");
  CHECK(Errors(Replace(kFile, "package: demo", "package: other")) ==
        "t.yaml:3:10: error: this tuning file is for package 'other', not 'demo' (package.yaml)\n");
  CHECK(Errors(Replace(kFile, "gpu: NVIDIA H100 80GB HBM3", "gpu: \"\"")) ==
        "t.yaml:4:6: error: gpu must name the device, as cuDeviceGetName does (\"NVIDIA H100 80GB HBM3\")\n");
  CHECK(Errors(Replace(kFile, "sm: 90", "sm: 9")) ==
        "t.yaml:5:5: error: sm must be 10 * major + minor of the device (90 for sm_90)\n");
  CHECK(Errors(Replace(kFile, "repeats: 25", "repeats: 0")) == "t.yaml:8:10: error: repeats must be at least 1\n");
  CHECK(Errors(Replace(kFile, "driver: \"580.159.04 (CUDA 13.0)\"", "driver: [580]")) ==
        "t.yaml:6:9: error: driver must be a string\n");
  CHECK(Errors(Replace(kFile, "kernels:\n", "kernels: 3\nunused:\n")) ==
        "t.yaml:10:1: error: unknown key 'unused' in a tuning file (expected one of: kpack_tuning, package, gpu, sm, "
        "driver, kpack_version, repeats, kernels)\n"
        "t.yaml:9:10: error: kernels must be a list of tuned kernels\n");
}

TEST_CASE("a tuned kernel: its name, hash, grid and tuned constexprs") {
  CHECK(Errors(Replace(kFile, "kernel: softmax", "kernel: soft")) ==
        "t.yaml:10:13: error: package 'demo' has no kernel 'soft'\n");
  CHECK(Load(Replace(kFile, "HASH", "0123456789abcdef"), Replace(kTuned, "tune:\n  key: [rows, cols]\n  shapes:\n"
                                                                          "    rows: [1, 64]\n    cols: [128, 1024]\n"
                                                                          "  buffers:\n    x: rows * cols\n", ""))
            .errors == "t.yaml:10:13: error: kernel 'softmax' has no tune: section in its manifest (k.yaml)\n");
  const std::string kernel = std::string(kFile).substr(std::string(kFile).find("  - kernel: softmax"));
  CHECK(Errors(std::string(kFile) + kernel) ==
        "t.yaml:22:13: error: kernel 'softmax' is listed twice (first at t.yaml:10:13)\n");
  CHECK(Errors(Replace(kFile, "manifest_hash: HASH", "manifest_hash: 0123456789ABCDEF")) ==
        "t.yaml:11:20: error: manifest_hash must be 16 lowercase hex digits, as kpack tune writes it\n");
  CHECK(Errors(Replace(kFile, "    tuned: [BLOCK]\n", "")) ==
        "t.yaml:10:5: error: a tuned kernel is missing required key 'tuned'\n");
  CHECK(Errors(Replace(kFile, "    tuned: [BLOCK]\n", "    tuned: [BLOCK]\n    best: 1\n")) ==
        "t.yaml:15:5: error: unknown key 'best' in a tuned kernel (expected one of: kernel, manifest_hash, key, shapes, "
        "tuned, tables)\n");
  CHECK(Errors(Replace(kFile, "key: [rows, cols]", "key: [rows, rows]")) ==
        "t.yaml:12:17: error: duplicate key param 'rows'\n");
  CHECK(Errors(Replace(kFile, "key: [rows, cols]", "key: []")) == "t.yaml:12:10: error: key must not be empty\n");
  CHECK(Errors(Replace(kFile, "shapes: {rows: [1, 64], cols: [128, 1024]}", "shapes: {rows: [1, 64]}")) ==
        "t.yaml:13:13: error: shapes is missing required key 'cols'\n");
  CHECK(Errors(Replace(kFile, "shapes: {rows: [1, 64], cols: [128, 1024]}",
                       "shapes: {rows: [1, 64], cols: [128, 1024], n: [1]}")) ==
        "t.yaml:13:48: error: unknown key 'n' in shapes (expected one of: rows, cols)\n");
  CHECK(Errors(Replace(kFile, "rows: [1, 64], cols", "rows: [64, 1], cols")) ==
        "t.yaml:13:25: error: shapes of 'rows' must be positive and ascending, each value once (1 after 64)\n");
  CHECK(Errors(Replace(kFile, "rows: [1, 64], cols", "rows: [0, 64], cols")) ==
        "t.yaml:13:21: error: shapes of 'rows' must be positive and ascending, each value once (0)\n");
  CHECK(Errors(Replace(kFile, "rows: [1, 64], cols", "rows: [], cols")) ==
        "t.yaml:13:20: error: shapes of 'rows' must not be empty\n");
  CHECK(Errors(Replace(kFile, "tuned: [BLOCK]", "tuned: [BLOCK, BLOCK]")) ==
        "t.yaml:14:20: error: duplicate tuned constexpr 'BLOCK'\n");
  CHECK(Errors(Replace(kFile, "    tables:\n", "    tables: {}\n    unused:\n")) ==
        "t.yaml:16:5: error: unknown key 'unused' in a tuned kernel (expected one of: kernel, manifest_hash, key, "
        "shapes, tuned, tables)\n");
}

TEST_CASE("a table's results: one per shape in grid order, times, best and margin") {
  const std::string first = "          - {rows: 1, cols: 128, best: \"BLOCK=128\", margin: 1.1, us: {\"BLOCK=128\": 2.0, "
                            "\"BLOCK=256\": 2.2}}\n";
  CHECK(Errors(Replace(kFile, first, "")) ==
        "t.yaml:18:11: error: results has 3 entries; the grid of rows x cols: 2 x 2 has 4 shapes, one result each in "
        "grid order\n");
  CHECK(Errors(Replace(kFile, "{rows: 1, cols: 1024,", "{rows: 64, cols: 1024,")) ==
        "t.yaml:19:13: error: result 2 is at rows 64, cols 1024; in grid order (row-major over key [rows, cols], the "
        "last fastest) it must be rows 1, cols 1024\n");
  CHECK(Errors(Replace(kFile, "{rows: 64, cols: 128, us: {}}", "{rows: 64, us: {}}")) ==
        "t.yaml:20:13: error: a result is missing required key 'cols'\n");
  CHECK(Errors(Replace(kFile, "{rows: 64, cols: 128, us: {}}", "{rows: 64, cols: 128, us: {}, speed: 1}")) ==
        "t.yaml:20:43: error: unknown key 'speed' in a result (expected one of: rows, cols, best, margin, us)\n");
  CHECK(Errors(Replace(kFile, "\"BLOCK=256\": 2.2", "\"BLOCK=256\": -2.2")) ==
        "t.yaml:18:102: error: the time of 'BLOCK=256' is negative (-2.2 us)\n");
  CHECK(Errors(Replace(kFile, "\"BLOCK=256\": 2.2", "\"BLOCK=256\": fast")) ==
        "t.yaml:18:102: error: the time of 'BLOCK=256' must be a number of microseconds\n");
  CHECK(Errors(Replace(kFile, "\"BLOCK=256\": 2.2", "\"BLOCK=256\": .nan")) ==
        "t.yaml:18:102: error: the time of 'BLOCK=256' must be a number of microseconds\n");
  CHECK(Errors(Replace(kFile, "\"BLOCK=256\": 2.2", "\"BLOCK=256\": 1.5")) ==
        "t.yaml:18:40: error: best 'BLOCK=128' (2 us) is not the fastest: 'BLOCK=256' took 1.5 us\n");
  CHECK(Errors(Replace(kFile, "best: \"BLOCK=128\", margin: 1.1, ", "")) ==
        "t.yaml:18:13: error: a result with times must name its fastest candidate as best\n");
  CHECK(Errors(Replace(kFile, "best: \"BLOCK=128\"", "best: \"BLOCK=512\"")) ==
        "t.yaml:18:40: error: best 'BLOCK=512' has no time in us\n");
  CHECK(Errors(Replace(kFile, "{rows: 64, cols: 128, us: {}}", "{rows: 64, cols: 128, best: \"BLOCK=128\", us: {}}")) ==
        "t.yaml:20:41: error: best names a candidate, but no candidate has a time here (us is empty)\n");
  CHECK(Errors(Replace(kFile, "margin: 1.1, us: {\"BLOCK=128\"", "margin: big, us: {\"BLOCK=128\"")) ==
        "t.yaml:18:61: error: margin must be a number (the runner-up's time over the best's)\n");
  CHECK(Errors(Replace(kFile, "\"BLOCK=256\": 2.2", "\"BLOCK 256\": 2.2")) ==
        "t.yaml:18:90: error: 'BLOCK 256' is not a candidate label: it must be BLOCK=VALUE (tuned: BLOCK)\n");
  CHECK(Errors(Replace(kFile, "\"BLOCK=256\": 2.2", "\"BLOCK=128\": 2.2")) ==
        "t.yaml:18:89: error: duplicate key 'BLOCK=128' in us\n");
  CHECK(Errors(Replace(kFile, "{rows: 64, cols: 128, us: {}}", "{rows: 64, cols: 128, us: []}")) ==
        "t.yaml:20:39: error: us must map each candidate label to its time in microseconds ({} where none could "
        "run)\n");
  CHECK(Errors(Replace(kFile, "      - for: {T: f16}\n", "      - for: [f16]\n")) ==
        "t.yaml:16:14: error: for must be a mapping of constexpr names to values ({} for a kernel without such "
        "constexprs)\n");
  // Margins are for people: beyond being numbers they are not checked.
  CHECK(Errors(Replace(kFile, "margin: 1.1, us: {\"BLOCK=128\"", "margin: 7, us: {\"BLOCK=128\"")) == "");
  // With empty times, best and margin may be null.
  CHECK(Errors(Replace(kFile, "{rows: 64, cols: 128, us: {}}", "{rows: 64, cols: 128, best: null, margin: null, us: {}}")) ==
        "");
}

TEST_CASE("a tuning of another version of the manifest is stale: an error, or with --allow-stale-tuning a warning") {
  // BLOCK's rule changed since: the hash of another manifest.
  const std::string changed = Replace(kTuned, "auto: \"256\"", "auto: \"cols <= 512 ? 128 : 256\"");
  const std::string file = Replace(kFile, "HASH", HashOf(kTuned));
  CHECK(Load(file, changed).errors ==
        "t.yaml:11:20: error: softmax was tuned against another version of its manifest (k.yaml); run kpack tune "
        "again, or build with --allow-stale-tuning to use its rules\n");
  Loaded l = Load(file, changed, true);
  CHECK(l.errors == "t.yaml:11:20: warning: softmax's tuning for NVIDIA H100 80GB HBM3 is stale (its manifest "
                    "changed); the auto dispatcher uses its rules there\n");
  REQUIRE(l.pkg);
  const kpack::TunedKernel& tk = l.pkg->tunings[0].kernels[0];
  CHECK(tk.stale);
  CHECK(tk.tables.empty());
  CHECK(kpack::codegen::TablesFor(*l.pkg, l.pkg->kernels[0]).empty());
  // A stale file is stale only: what else changed is not reported.
  const std::string grown = Replace(kTuned, "values: [128, 256, 512]", "values: [128, 256, 512, 1024]");
  CHECK(Load(Replace(file, "cols: [128, 1024]}", "cols: [128, 1024]}"), Replace(grown, "[1, 64]", "[1, 32]"), true)
            .errors == "t.yaml:11:20: warning: softmax's tuning for NVIDIA H100 80GB HBM3 is stale (its manifest "
                       "changed); the auto dispatcher uses its rules there\n");
  // Exclusions count: a build more or less is another manifest.
  CHECK(Load(file, Replace(kTuned, "  - {T: f32, BLOCK: 512}\n", "")).errors ==
        "t.yaml:11:20: error: softmax was tuned against another version of its manifest (k.yaml); run kpack tune "
        "again, or build with --allow-stale-tuning to use its rules\n");
  // Comments and docs do not.
  CHECK(Load(file, Replace(kTuned, "entry: sm\n", "entry: sm\ndoc: rows of a matrix  # a comment\n")).errors == "");
}

TEST_CASE("a tuning that is not stale must agree with the manifest and the builds") {
  // Another key, shapes or tuned list than the manifest's, with the
  // manifest's hash: a file edited by hand.
  const std::string renamed = ReplaceAll(kFile, "cols", "n");
  CHECK(Errors(renamed) == "t.yaml:12:10: error: key [rows, n] is not softmax's tune: key [rows, cols] (k.yaml:17:1)\n");
  CHECK(Errors(Replace(Replace(Replace(kFile, "rows: [1, 64], cols", "rows: [1, 32], cols"), "{rows: 64, cols: 128",
                               "{rows: 32, cols: 128"),
                       "{rows: 64, cols: 1024", "{rows: 32, cols: 1024")) ==
        "t.yaml:13:13: error: shapes rows: [1, 32] are not softmax's tune: shapes rows: [1, 64] (k.yaml:20:5)\n");
  CHECK(Errors(ReplaceAll(kFile, "BLOCK", "TILE")) == "t.yaml:14:12: error: tuned [TILE] is not softmax's auto constexprs, in their order [BLOCK]\n");
  // Labels name values of the tuned constexprs.
  CHECK(Errors(Replace(kFile, "\"BLOCK=512\": 3.3", "\"BLOCK=1000\": 3.3")) ==
        "t.yaml:19:91: error: 'BLOCK=1000': 1000 is not a value of BLOCK (128, 256, 512)\n");
  // `for`: exactly the constexprs callers choose without auto, with values
  // that were built.
  CHECK(Errors(Replace(kFile, "for: {T: f16}", "for: {T: f16, BLOCK: 128}")) ==
        "t.yaml:16:30: error: 'BLOCK' in for is not a constexpr of softmax that callers choose without auto (T)\n");
  CHECK(Errors(Replace(kFile, "for: {T: f16}", "for: {}")) ==
        "t.yaml:16:9: error: for is missing 'T' (a table's for names a value of each of T)\n");
  CHECK(Errors(Replace(kFile, "for: {T: f16}", "for: {T: f64}")) ==
        "t.yaml:16:18: error: 'f64' is not a value of T (f32, f16, bf16)\n");
  CHECK(Errors(Replace(kFile, "for: {T: f16}", "for: {T: bf16}")) ==
        "t.yaml:16:18: error: no specialization of softmax was built with T=bf16\n");
  CHECK(Errors(Replace(kFile, "for: {T: f16}", "for: {T: f32}")) ==
        "t.yaml:19:91: error: candidate 'BLOCK=512' was not built for T=f32\n");
  const std::string table = std::string(kFile).substr(std::string(kFile).find("      - for: {T: f16}"));
  CHECK(Errors(std::string(kFile) + table) ==
        "t.yaml:22:9: error: a second table for T=f16 (the first is at t.yaml:16:9)\n");
  // A second table, for f32, without BLOCK 512: fine.
  Loaded l = Load(std::string(kFile) + ReplaceAll(Replace(table, "{T: f16}", "{T: f32}"), "BLOCK=512", "BLOCK=128"));
  CHECK(l.errors == "");
  CHECK(l.pkg->tunings[0].kernels[0].tables.size() == 2);
}

namespace {

// kFile with probes: shapes between the grid's values (rows 1..64, cols
// 128..1024), the second where nothing may run.
const std::string kProbes =
    std::string(kFile) +
    "        probes:\n"                                                                                       // 22
    "          - {rows: 8, cols: 368, best: \"BLOCK=256\", margin: 1.2, us: {\"BLOCK=128\": 3.6, \"BLOCK=256\": 3.0}}\n"
    "          - {rows: 32, cols: 200, us: {}}\n";                                                            // 24

// kTuned as a Triton kernel whose launcher picks an aligned variant (x is
// `divisibility: auto`); its lines as kTuned's up to the tune: section.
std::string TritonTuned() {
  return Replace(Replace(Replace(kTuned, "source: sm.cuh\n", "language: triton\nsource: sm.py\n"),
                         "{name: x, type: const T*}", "{name: x, type: const T*, divisibility: auto}"),
                 "  block: [BLOCK]\n", "");
}

// kFile's table for f16 again, as the unaligned variant's.
std::string UnalignedTable() {
  const std::string table = std::string(kFile).substr(std::string(kFile).find("      - for: {T: f16}"));
  return Replace(table, "      - for: {T: f16}\n", "      - for: {T: f16}\n        variant: unaligned\n");
}

}  // namespace

TEST_CASE("a table's probes are read into the model") {
  Loaded l = Load(kProbes);
  REQUIRE(l.errors == "");
  const kpack::TunedTable& t = l.pkg->tunings[0].kernels[0].tables[0];
  CHECK(!t.unaligned);
  REQUIRE(t.ranking.size() == 4);
  REQUIRE(t.probes.size() == 2);
  CHECK(t.probes[0].at == std::vector<int64_t>{8, 368});
  CHECK(t.probes[0].ranking == std::vector<std::pair<size_t, double>>{{1, 3.0}, {0, 3.6}});
  CHECK(t.probes[0].loc.ToString() == "t.yaml:23:13");
  CHECK(t.probes[1].at == std::vector<int64_t>{32, 200});
  CHECK(t.probes[1].ranking.empty());
  // `probes:` with none, or null, is none.
  CHECK(Load(std::string(kFile) + "        probes: []\n").errors == "");
  CHECK(Load(std::string(kFile) + "        probes:\n").errors == "");
  // A probe on a key of one value is at that value.
  const std::string one =
      Replace(Replace(Replace(kFile, "rows: [1, 64], cols", "rows: [64], cols"),
                      "          - {rows: 1, cols: 128, best: \"BLOCK=128\", margin: 1.1, us: {\"BLOCK=128\": 2.0, "
                      "\"BLOCK=256\": 2.2}}\n",
                      ""),
              "          - {rows: 1, cols: 1024, best: \"BLOCK=256\", margin: 1.1, us: {\"BLOCK=256\": 3.0, "
              "\"BLOCK=512\": 3.3}}\n",
              "") +
      "        probes:\n          - {rows: 64, cols: 368, us: {}}\n";
  const std::string one_kernel = Replace(kTuned, "rows: [1, 64]", "rows: [64]");
  CHECK(Load(one, one_kernel).errors == "");
  CHECK(Load(Replace(one, "{rows: 64, cols: 368", "{rows: 8, cols: 368"), one_kernel).errors ==
        "t.yaml:21:20: error: probe at rows 8, cols 368: rows 8 is not the one value of its grid (rows: [64]); a probe "
        "lies inside the grid's cells, strictly between two neighbouring values on every key (on a key of one value, "
        "at that value)\n");
}

TEST_CASE("a probe is checked as a result is, and must lie between the grid's values, once") {
  CHECK(Errors(Replace(kProbes, "{rows: 8, cols: 368,", "{rows: 64, cols: 368,")) ==
        "t.yaml:23:20: error: probe at rows 64, cols 368: rows 64 is not strictly between two neighbouring values of "
        "its grid (rows: [1, 64]); a probe lies inside the grid's cells, strictly between two neighbouring values on "
        "every key (on a key of one value, at that value)\n");
  CHECK(Errors(Replace(kProbes, "{rows: 8, cols: 368,", "{rows: 8, cols: 4096,")) ==
        "t.yaml:23:29: error: probe at rows 8, cols 4096: cols 4096 is not strictly between two neighbouring values of "
        "its grid (cols: [128, 1024]); a probe lies inside the grid's cells, strictly between two neighbouring values "
        "on every key (on a key of one value, at that value)\n");
  CHECK(Errors(Replace(kProbes, "{rows: 32, cols: 200,", "{rows: 8, cols: 368,")) ==
        "t.yaml:24:13: error: a second probe at rows 8, cols 368 (the first is at t.yaml:23:13)\n");
  CHECK(Errors(Replace(kProbes, "{rows: 32, cols: 200,", "{rows: 32,")) ==
        "t.yaml:24:13: error: a probe is missing required key 'cols'\n");
  CHECK(Errors(Replace(kProbes, "{rows: 32, cols: 200,", "{rows: 32, cols: 200, at: 1,")) ==
        "t.yaml:24:35: error: unknown key 'at' in a probe (expected one of: rows, cols, best, margin, us)\n");
  CHECK(Errors(Replace(kProbes, "{rows: 32, cols: 200,", "{rows: 32, cols: wide,")) ==
        "t.yaml:24:30: error: the value of 'cols' must be an integer\n");
  CHECK(Errors(Replace(kProbes, "\"BLOCK=256\": 3.0}", "\"BLOCK=256\": 4.0}")) ==
        "t.yaml:23:40: error: best 'BLOCK=256' (4 us) is not the fastest: 'BLOCK=128' took 3.6 us\n");
  CHECK(Errors(Replace(kProbes, "\"BLOCK=256\": 3.0}", "\"BLOCK=256\": -3.0}")) ==
        "t.yaml:23:102: error: the time of 'BLOCK=256' is negative (-3 us)\n");
  CHECK(Errors(Replace(kProbes, "best: \"BLOCK=256\", margin: 1.2, ", "")) ==
        "t.yaml:23:13: error: a probe with times must name its fastest candidate as best\n");
  CHECK(Errors(std::string(kFile) + "        probes: {rows: 8}\n") ==
        "t.yaml:22:17: error: probes must be a list, one entry per shape tuned between the grid's values\n");
  CHECK(Errors(Replace(kFile, "        results:\n", "        probe: []\n        results:\n")) ==
        "t.yaml:17:9: error: unknown key 'probe' in a table (expected one of: for, variant, results, probes)\n");
  // A probe's candidates must have been built, as a result's: BLOCK=512
  // (no build for f32) only in a probe of the f32 table.
  const std::string f32 = ReplaceAll(Replace(Replace(kFile, "for: {T: f16}", "for: {T: f32}"),
                                             "\"BLOCK=512\": 3.3", "\"BLOCK=128\": 3.3"),
                                     "\"BLOCK=512\"", "\"BLOCK=256\"") +
                          "        probes:\n          - {rows: 8, cols: 368, best: \"BLOCK=512\", margin: 1.2, "
                          "us: {\"BLOCK=512\": 3.0}}\n";
  CHECK(Errors(f32) == "t.yaml:23:72: error: candidate 'BLOCK=512' was not built for T=f32\n");
}

TEST_CASE("an unaligned variant's table: variant: unaligned, for a kernel with an aligned variant, once") {
  const std::string triton = TritonTuned();
  Loaded l = Load(std::string(kProbes) + UnalignedTable(), triton);
  REQUIRE(l.errors == "");
  const std::vector<kpack::TunedTable>& tables = l.pkg->tunings[0].kernels[0].tables;
  REQUIRE(tables.size() == 2);
  CHECK(!tables[0].unaligned);
  CHECK(tables[0].probes.size() == 2);
  CHECK(tables[1].unaligned);
  CHECK(tables[1].variant_loc.ToString() == "t.yaml:26:18");
  CHECK(tables[1].combo.at(0).dtype == kpack::Scalar::kF16);
  CHECK(tables[1].ranking == tables[0].ranking);
  CHECK(tables[1].probes.empty());
  // Only `unaligned`.
  CHECK(Load(std::string(kFile) + Replace(UnalignedTable(), "variant: unaligned", "variant: aligned"), triton)
            .errors ==
        "t.yaml:23:18: error: variant must be 'unaligned' (leave it out of the aligned variant's table, and of a kernel "
        "without variants)\n");
  CHECK(Load(std::string(kFile) + Replace(UnalignedTable(), "variant: unaligned", "variant: [unaligned]"), triton)
            .errors ==
        "t.yaml:23:18: error: variant must be 'unaligned' (leave it out of the aligned variant's table, and of a kernel "
        "without variants)\n");
  // A kernel without an aligned variant has no unaligned one.
  CHECK(Errors(std::string(kFile) + UnalignedTable()) ==
        "t.yaml:23:18: error: variant: unaligned, but softmax has no aligned variant (no divisibility: auto or "
        "equal_to_1: auto param)\n");
  CHECK(Errors(Replace(kFile, "        results:\n", "        variant: unaligned\n        results:\n")) ==
        "t.yaml:17:18: error: variant: unaligned, but softmax has no aligned variant (no divisibility: auto or "
        "equal_to_1: auto param)\n");
  // One table per combination and variant.
  CHECK(Load(std::string(kFile) + UnalignedTable() + UnalignedTable(), triton).errors ==
        "t.yaml:29:9: error: a second unaligned-variant table for T=f16 (the first is at t.yaml:22:9)\n");
  const std::string table = std::string(kFile).substr(std::string(kFile).find("      - for: {T: f16}"));
  CHECK(Load(std::string(kFile) + UnalignedTable() + table, triton).errors ==
        "t.yaml:29:9: error: a second table for T=f16 (the first is at t.yaml:16:9)\n");
  // Alone, without the aligned variant's: allowed (the rules serve aligned calls).
  CHECK(Load(Replace(kFile, "        results:\n", "        variant: unaligned\n        results:\n"), triton).errors ==
        "");
}
