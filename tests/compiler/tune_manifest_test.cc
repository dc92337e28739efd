// `tune:` in kernel manifests (tune_reader.cc): every field as the model
// holds it, and every message word for word at its file:line:col, for CUDA
// kernels and for a Triton kernel whose source adds the constexprs `valid`
// reads (through the fake describer).
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "fake_describer.h"
#include "test_util.h"

using kpack::testing::Config;
using kpack::testing::FakeDescriber;
using kpack::testing::Replace;
using kpack::testing::ScratchDir;
using kpack::testing::Signature;

namespace {

// A kernel with every kind of param a tune section deals with; lines
// numbered for the messages' positions.
const char* kTuned =
    "kernel: softmax\n"                                                                   // 1
    "source: va.cuh\n"                                                                    // 2
    "entry: softmax\n"                                                                    // 3
    "constexprs:\n"                                                                       // 4
    "  - {name: T, type: dtype, values: [f32, f16]}\n"                                    // 5
    "  - {name: BLOCK, type: int, values: [256, 512], auto: \"cols <= 1024 ? 256 : 512\"}\n"  // 6
    "params:\n"                                                                           // 7
    "  - {name: in, type: const T*}\n"                                                    // 8
    "  - {name: out, type: T*}\n"                                                         // 9
    "  - {name: idx, type: const i32*}\n"                                                 // 10
    "  - {name: offs, type: const i64*}\n"                                                // 11
    "  - {name: mask, type: u8*}\n"                                                       // 12
    "  - {name: ws, type: f32*}\n"                                                        // 13
    "  - {name: rows, type: i64}\n"                                                       // 14
    "  - {name: cols, type: i32}\n"                                                       // 15
    "  - {name: stride, type: i64}\n"                                                     // 16
    "  - {name: eps, type: f32}\n"                                                        // 17
    "  - {name: flag, type: bool}\n"                                                      // 18
    "  - {name: split, type: u16, launch_only: true}\n"                                   // 19
    "launch:\n"                                                                           // 20
    "  grid: [rows]\n"                                                                    // 21
    "  block: [BLOCK]\n"                                                                  // 22
    "tune:\n"                                                                             // 23
    "  key: [rows, cols]\n"                                                               // 24
    "  shapes:\n"                                                                         // 25
    "    rows: [1, 64, 1024]\n"                                                           // 26
    "    cols: [128, 1024]\n"                                                             // 27
    "  params:\n"                                                                         // 28
    "    split: \"cdiv(cols, 64)\"\n"                                                     // 29
    "    stride: split * 64\n"                                                            // 30
    "    eps: 0\n"                                                                        // 31
    "    flag: 1\n"                                                                       // 32
    "  buffers:\n"                                                                        // 33
    "    out: rows * stride\n"                                                            // 34
    "    in: {count: rows * stride, fill: random}\n"                                      // 35
    "    idx: {count: rows, fill: {range: [0, cols]}}\n"                                  // 36
    "    offs: {count: rows + 1, fill: {step: stride}}\n"                                 // 37
    "    mask: {count: rows, fill: {value: 1}}\n"                                         // 38
    "    ws: {count: rows, fill: zero}\n"                                                 // 39
    "  valid: \"BLOCK >= cols / 4 && sizeof(T) <= 4\"\n";                                 // 40

struct Loaded {
  std::optional<kpack::Package> pkg;
  std::string errors;
  const kpack::Kernel& kernel() const { return pkg->kernels.at(0); }
};

// Loads package.yaml + k.yaml (va.cuh, va.py beside it); with `source`, a
// describer gives those facts of va.py's va.
Loaded Load(const std::string& kernel, const kpack::TritonSourceInfo* source = nullptr) {
  ScratchDir dir;
  dir.Write("package.yaml", "package: demo\narchs: [sm_80]\nkernels: [k.yaml]\n");
  dir.Write("k.yaml", kernel);
  dir.Write("va.cuh", "// template\n");
  dir.Write("va.py", "# facts from the fake describer\n");
  FakeDescriber describer;
  kpack::LoadOptions options;
  if (source) {
    describer.Add("va", *source);
    options.describer = &describer;
  }
  kpack::Diagnostics diag;
  Loaded out;
  out.pkg = kpack::LoadPackage("package.yaml", options, diag);
  out.errors = diag.Text();
  return out;
}

std::string Errors(const std::string& kernel) { return Load(kernel).errors; }

// kTuned with its first `from` replaced by `to`.
std::string Tuned(const std::string& from, const std::string& to) { return Replace(kTuned, from, to); }

// The suffix of every message about what a tune value may read.
const std::string kReads = "; tune params and buffers read only the key params and the tune params listed before them";

}  // namespace

TEST_CASE("tune: every field, as the model holds it") {
  Loaded l = Load(kTuned);
  REQUIRE(l.errors == "");
  REQUIRE(l.kernel().tune);
  const kpack::Tune& t = *l.kernel().tune;
  CHECK(t.loc.ToString() == "k.yaml:23:1");

  // The axes in key: order, each with its values.
  REQUIRE(t.key.size() == 2);
  CHECK(t.key[0].param == "rows");
  CHECK(t.key[0].values == std::vector<int64_t>{1, 64, 1024});
  CHECK(t.key[0].loc.ToString() == "k.yaml:26:5");
  CHECK(t.key[1].param == "cols");
  CHECK(t.key[1].values == std::vector<int64_t>{128, 1024});

  // Params in the order listed (each reads those before it): launch-only,
  // float and bool params take values too.
  REQUIRE(t.params.size() == 4);
  const char* params[] = {"split", "stride", "eps", "flag"};
  const char* values[] = {"cdiv(cols, 64)", "split * 64", "0", "1"};
  for (size_t i = 0; i < 4; ++i) {
    INFO(params[i]);
    CHECK(t.params[i].param == params[i]);
    CHECK(kpack::FormatExpr(t.params[i].value) == values[i]);
  }
  CHECK(t.params[0].loc.ToString() == "k.yaml:29:5");

  // Buffers in param order, whatever the manifest's, with each fill.
  REQUIRE(t.buffers.size() == 6);
  const char* buffers[] = {"in", "out", "idx", "offs", "mask", "ws"};
  const char* counts[] = {"rows * stride", "rows * stride", "rows", "rows + 1", "rows", "rows"};
  using Kind = kpack::TuneFill::Kind;
  const Kind kinds[] = {Kind::kRandom, Kind::kDefault, Kind::kRange, Kind::kStep, Kind::kValue, Kind::kZero};
  for (size_t i = 0; i < 6; ++i) {
    INFO(buffers[i]);
    CHECK(t.buffers[i].param == buffers[i]);
    CHECK(kpack::FormatExpr(t.buffers[i].count) == counts[i]);
    CHECK(t.buffers[i].fill.kind == kinds[i]);
  }
  CHECK(t.buffers[1].loc.ToString() == "k.yaml:34:5");
  CHECK(t.buffers[1].fill.loc.ToString() == "k.yaml:34:5");  // the default: at the buffer
  CHECK(t.buffers[0].fill.loc.ToString() == "k.yaml:35:38");
  REQUIRE(t.buffers[2].fill.lo);
  REQUIRE(t.buffers[2].fill.hi);
  CHECK(kpack::FormatExpr(*t.buffers[2].fill.lo) == "0");
  CHECK(kpack::FormatExpr(*t.buffers[2].fill.hi) == "cols");
  CHECK_FALSE(t.buffers[2].fill.value);
  REQUIRE(t.buffers[3].fill.value);
  CHECK(kpack::FormatExpr(*t.buffers[3].fill.value) == "stride");
  REQUIRE(t.buffers[4].fill.value);
  CHECK(kpack::FormatExpr(*t.buffers[4].fill.value) == "1");
  CHECK_FALSE(t.buffers[0].fill.value);

  REQUIRE(t.valid);
  CHECK(kpack::FormatExpr(*t.valid) == "BLOCK >= cols / 4 && sizeof(T) <= 4");

  // valid is optional; without tune: none.
  Loaded bare = Load(Tuned("  valid: \"BLOCK >= cols / 4 && sizeof(T) <= 4\"\n", ""));
  REQUIRE(bare.errors == "");
  CHECK_FALSE(bare.kernel().tune->valid);
  const std::string untuned = std::string(kTuned).substr(0, std::string(kTuned).find("tune:\n"));
  Loaded none = Load(untuned);
  REQUIRE(none.errors == "");
  CHECK_FALSE(none.kernel().tune);
}

TEST_CASE("tune: the section and its key") {
  const std::string untuned = std::string(kTuned).substr(0, std::string(kTuned).find("tune:\n"));
  // Tuning chooses the auto constexprs: a kernel needs one.
  CHECK(Errors(Tuned(", auto: \"cols <= 1024 ? 256 : 512\"", "")) ==
        "k.yaml:23:1: error: tune: softmax has no auto constexpr to choose; give one an auto: rule (the auto "
        "dispatcher runs it where no tuning applies)\n");
  CHECK(Errors(untuned + "tune: 3\n") == "k.yaml:23:7: error: tune must be a mapping\n");
  CHECK(Errors(Tuned("  key: [rows, cols]\n", "  key: [rows, cols]\n  grid: 1\n")) ==
        "k.yaml:25:3: error: unknown key 'grid' in tune (expected one of: key, shapes, params, buffers, valid)\n");
  // Without a key, the shapes and the params' completeness are not checked.
  CHECK(Errors(Tuned("  key: [rows, cols]\n", "")) == "k.yaml:24:3: error: tune is missing required key 'key'\n");
  CHECK(Errors(Tuned("  key: [rows, cols]\n", "  key: []\n")) == "k.yaml:24:8: error: tune key must not be empty\n");
  CHECK(Errors(Tuned("  key: [rows, cols]\n", "  key: rows\n")) == "k.yaml:24:8: error: tune key must be a list\n");
  CHECK(Errors(Tuned("  key: [rows, cols]\n", "  key: [rows, cols, rows]\n")) ==
        "k.yaml:24:21: error: tune key lists 'rows' twice\n");
  // A bad key is reported once: it needs no shapes, and is no param's
  // business.
  CHECK(Errors(Tuned("  key: [rows, cols]\n", "  key: [rows, cols, m]\n")) ==
        "k.yaml:24:21: error: tune key names unknown param 'm'\n");
  CHECK(Errors(Tuned("  key: [rows, cols]\n", "  key: [rows, cols, BLOCK]\n")) ==
        "k.yaml:24:21: error: tune key names constexpr 'BLOCK', not a param\n");
  CHECK(Errors(Tuned("  key: [rows, cols]\n", "  key: [rows, cols, in]\n")) ==
        "k.yaml:24:21: error: tune key 'in' must be an integer param, not const T*\n");
  CHECK(Errors(Tuned("  key: [rows, cols]\n", "  key: [rows, cols, eps]\n")) ==
        "k.yaml:24:21: error: tune key 'eps' must be an integer param, not f32\n");
  CHECK(Errors(Tuned("  key: [rows, cols]\n", "  key: [rows, cols, flag]\n")) ==
        "k.yaml:24:21: error: tune key 'flag' must be an integer param, not bool\n");
  // A launch-only integer may be a key; later values read it as any key.
  Loaded split = Load(Replace(Replace(Tuned("  key: [rows, cols]\n", "  key: [rows, cols, split]\n"),
                                      "    cols: [128, 1024]\n", "    cols: [128, 1024]\n    split: [1, 2]\n"),
                              "    split: \"cdiv(cols, 64)\"\n", ""));
  REQUIRE(split.errors == "");
  CHECK(split.kernel().tune->key.at(2).values == std::vector<int64_t>{1, 2});
  CHECK(split.kernel().tune->params.size() == 3);
}

TEST_CASE("tune: shapes") {
  // Exactly the key params.
  CHECK(Errors(Tuned("    cols: [128, 1024]\n", "    cols: [128, 1024]\n    stride: [1]\n")) ==
        "k.yaml:28:5: error: tune shapes names 'stride', which is not in tune key\n");
  CHECK(Errors(Tuned("    cols: [128, 1024]\n", "")) ==
        "k.yaml:25:3: error: tune shapes is missing 'cols' (every key param needs its values)\n");
  CHECK(Errors(Tuned("    cols: [128, 1024]\n", "    rows: [2]\n")) ==
        "k.yaml:27:5: error: duplicate key 'rows' in tune shapes\n"
        "k.yaml:25:3: error: tune shapes is missing 'cols' (every key param needs its values)\n");
  CHECK(Errors(Tuned("  shapes:\n    rows: [1, 64, 1024]\n    cols: [128, 1024]\n", "  shapes: [1, 2]\n")) ==
        "k.yaml:25:11: error: tune shapes must be a mapping\n");
  // Ascending, distinct, positive integers of the param's type.
  const std::string rows = "    rows: [1, 64, 1024]\n";
  CHECK(Errors(Tuned(rows, "    rows: [1, 1024, 64]\n")) ==
        "k.yaml:26:21: error: tune shape 64 of 'rows' comes after 1024; list the values in ascending order\n");
  CHECK(Errors(Tuned(rows, "    rows: [1, 64, 64]\n")) ==
        "k.yaml:26:19: error: tune shape 64 of 'rows' is listed twice\n");
  CHECK(Errors(Tuned(rows, "    rows: [0, 64]\n")) == "k.yaml:26:12: error: tune shape 0 of 'rows' must be positive\n");
  CHECK(Errors(Tuned(rows, "    rows: [-4, 64]\n")) ==
        "k.yaml:26:12: error: tune shape -4 of 'rows' must be positive\n");
  CHECK(Errors(Tuned(rows, "    rows: [1, 2.5]\n")) ==
        "k.yaml:26:15: error: a tune shape of 'rows' must be an integer\n");
  CHECK(Errors(Tuned(rows, "    rows: [1, n]\n")) ==
        "k.yaml:26:15: error: a tune shape of 'rows' must be an integer\n");
  CHECK(Errors(Tuned(rows, "    rows: 64\n")) == "k.yaml:26:11: error: tune shapes of 'rows' must be a list\n");
  CHECK(Errors(Tuned("    cols: [128, 1024]\n", "    cols: []\n")) ==
        "k.yaml:27:11: error: tune shapes of 'cols' must not be empty\n");
  // cols is an i32.
  CHECK(Errors(Tuned("    cols: [128, 1024]\n", "    cols: [128, 2147483647]\n")) == "");
  CHECK(Errors(Tuned("    cols: [128, 1024]\n", "    cols: [128, 2147483648]\n")) ==
        "k.yaml:27:17: error: tune shape 2147483648 of 'cols' does not fit in its type (i32)\n");

  // At most 4096 shapes.
  auto list = [](int n) {
    std::string out = "[";
    for (int i = 1; i <= n; ++i) out += (i > 1 ? ", " : "") + std::to_string(i);
    return out + "]";
  };
  auto grid = [&](int a, int b) {
    return Tuned("    rows: [1, 64, 1024]\n    cols: [128, 1024]\n",
                 "    rows: " + list(a) + "\n    cols: " + list(b) + "\n");
  };
  CHECK(Errors(grid(64, 64)) == "");
  CHECK(Errors(grid(65, 64)) ==
        "k.yaml:25:3: error: tune shapes make a grid of 4160 shapes (65 x 64), more than the 4096 kpack tune "
        "measures\n");
}

TEST_CASE("tune: params") {
  // Every scalar param that is not a key, named when missing.
  CHECK(Errors(Tuned("    eps: 0\n    flag: 1\n", "")) ==
        "k.yaml:28:3: error: tune params is missing 'eps' and 'flag' (every scalar param that is not a key needs a "
        "value)\n");
  CHECK(Errors(Tuned("    flag: 1\n", "")) ==
        "k.yaml:28:3: error: tune params is missing 'flag' (every scalar param that is not a key needs a value)\n");
  const std::string last = "    flag: 1\n";
  CHECK(Errors(Tuned(last, last + "    m: 2\n")) == "k.yaml:33:5: error: tune params names unknown param 'm'\n");
  CHECK(Errors(Tuned(last, last + "    BLOCK: 2\n")) ==
        "k.yaml:33:5: error: tune params names constexpr 'BLOCK', not a param\n");
  CHECK(Errors(Tuned(last, last + "    in: 2\n")) ==
        "k.yaml:33:5: error: tune params names pointer param 'in'; give it a buffer under tune buffers\n");
  CHECK(Errors(Tuned(last, last + "    rows: 2\n")) ==
        "k.yaml:33:5: error: tune params names key param 'rows', whose values are the tune shapes\n");
  CHECK(Errors(Tuned(last, last + "    eps: 1\n")) == "k.yaml:33:5: error: duplicate key 'eps' in tune params\n");
  // Not a mapping: the one error (what the values may read is unknown).
  CHECK(Errors(Tuned("  params:\n    split: \"cdiv(cols, 64)\"\n    stride: split * 64\n    eps: 0\n    flag: 1\n",
                     "  params: [eps]\n")) == "k.yaml:28:11: error: tune params must be a mapping\n");
}

TEST_CASE("tune: what a param's value, a buffer's count and a fill may read") {
  // The launch language: its names, functions and syntax.
  const std::string eps = "    eps: 0\n";
  CHECK(Errors(Tuned(eps, "    eps: m + 1\n")) == "k.yaml:31:10: error: unknown name 'm' in expression\n");
  CHECK(Errors(Tuned(eps, "    eps: \"1 +\"\n")) ==
        "k.yaml:31:14: error: expected a number, a name or '(' in expression\n");
  CHECK(Errors(Tuned(eps, "    eps: [1]\n")) ==
        "k.yaml:31:10: error: tune param 'eps' must be an integer expression\n");
  CHECK(Errors(Tuned(eps, "    eps: in\n")) ==
        "k.yaml:31:10: error: 'in' is a pointer parameter; it can only be compared with NULL: p == NULL or p != "
        "NULL\n");
  CHECK(Errors(Tuned("    flag: 1\n", "    flag: eps\n")) ==
        "k.yaml:32:11: error: 'eps' is not an integer parameter\n");
  // Then only what a shape knows: the key params and the tune params
  // listed before.
  CHECK(Errors(Tuned(eps, "    eps: \"in != NULL\"\n")) ==
        "k.yaml:31:11: error: 'in' is a pointer param" + kReads + "\n");
  CHECK(Errors(Tuned(eps, "    eps: device.num_sms\n")) ==
        "k.yaml:31:10: error: 'device.num_sms' is a property of the device" + kReads + "\n");
  CHECK(Errors(Tuned(eps, "    eps: BLOCK\n")) == "k.yaml:31:10: error: 'BLOCK' is a constexpr" + kReads + "\n");
  CHECK(Errors(Tuned("    split: \"cdiv(cols, 64)\"\n", "    split: \"cdiv(stride, 64)\"\n")) ==
        "k.yaml:29:18: error: 'stride' has no value yet" + kReads + "\n");
  CHECK(Errors(Tuned("    flag: 1\n", "    flag: flag\n")) ==
        "k.yaml:32:11: error: 'flag' has no value yet" + kReads + "\n");
  // Counts and fills read every tune param, no constexpr.
  CHECK(Errors(Tuned("    out: rows * stride\n", "    out: rows * BLOCK\n")) ==
        "k.yaml:34:17: error: 'BLOCK' is a constexpr" + kReads + "\n");
  CHECK(Errors(Tuned("    out: rows * stride\n", "    out: rows * sizeof(T)\n")) ==
        "k.yaml:34:24: error: 'T' is a constexpr" + kReads + "\n");
  CHECK(Errors(Tuned("{value: 1}", "{value: BLOCK}")) == "k.yaml:38:39: error: 'BLOCK' is a constexpr" + kReads + "\n");
  CHECK(Errors(Tuned("{range: [0, cols]}", "{range: [0, n]}")) ==
        "k.yaml:36:42: error: unknown name 'n' in expression\n");
}

TEST_CASE("tune: buffers and fills") {
  // Every pointer param, named when missing.
  CHECK(Errors(Tuned("    ws: {count: rows, fill: zero}\n", "")) ==
        "k.yaml:33:3: error: tune buffers is missing 'ws' (every pointer param needs a buffer)\n");
  CHECK(Errors(Tuned("    mask: {count: rows, fill: {value: 1}}\n    ws: {count: rows, fill: zero}\n", "")) ==
        "k.yaml:33:3: error: tune buffers is missing 'mask' and 'ws' (every pointer param needs a buffer)\n");
  const std::string ws = "    ws: {count: rows, fill: zero}\n";
  CHECK(Errors(Tuned(ws, ws + "    m: 1\n")) == "k.yaml:40:5: error: tune buffers names unknown param 'm'\n");
  CHECK(Errors(Tuned(ws, ws + "    T: 1\n")) == "k.yaml:40:5: error: tune buffers names constexpr 'T', not a param\n");
  CHECK(Errors(Tuned(ws, ws + "    stride: 1\n")) ==
        "k.yaml:40:5: error: tune buffers names scalar param 'stride'; give it a value under tune params\n");
  CHECK(Errors(Tuned(ws, ws + "    rows: 1\n")) ==
        "k.yaml:40:5: error: tune buffers names key param 'rows', whose values are the tune shapes\n");
  CHECK(Errors(Tuned(ws, ws + "    ws: 1\n")) == "k.yaml:40:5: error: duplicate key 'ws' in tune buffers\n");
  CHECK(Errors(Tuned(ws, "    ws: [rows]\n")) ==
        "k.yaml:39:9: error: tune buffer 'ws' must be a count expression or a mapping {count: COUNT, fill: FILL}\n");
  CHECK(Errors(Tuned(ws, "    ws: {count: rows, fill: zero, size: 2}\n")) ==
        "k.yaml:39:35: error: unknown key 'size' in tune buffer 'ws' (expected one of: count, fill)\n");
  CHECK(Errors(Tuned(ws, "    ws: {fill: zero}\n")) ==
        "k.yaml:39:9: error: tune buffer 'ws' is missing required key 'count'\n");
  CHECK(Errors(Tuned(ws, "    ws: {count: [rows]}\n")) ==
        "k.yaml:39:17: error: the count of tune buffer 'ws' must be an integer expression\n");

  // Fills: range, value and step write integers.
  CHECK(Errors(Tuned(ws, "    ws: {count: rows, fill: {value: 1}}\n")) ==
        "k.yaml:39:30: error: fill value applies to integer buffers only ('ws' is f32*)\n");
  CHECK(Errors(Tuned(ws, "    ws: {count: rows, fill: {step: rows}}\n")) ==
        "k.yaml:39:30: error: fill step applies to integer buffers only ('ws' is f32*)\n");
  CHECK(Errors(Tuned("fill: random}", "fill: {range: [0, 2]}}")) ==
        "k.yaml:35:39: error: fill range applies to integer buffers only ('in' is const T*, and T may be f32)\n");
  CHECK(Errors(Tuned(ws, "    ws: {count: rows, fill: ones}\n")) ==
        "k.yaml:39:29: error: unknown fill 'ones' of tune buffer 'ws' (expected random, zero, {range: [LO, HI]}, "
        "{value: E} or {step: E})\n");
  CHECK(Errors(Tuned(ws, "    ws: {count: rows, fill: [zero]}\n")) ==
        "k.yaml:39:29: error: the fill of tune buffer 'ws' must be random, zero, {range: [LO, HI]}, {value: E} or "
        "{step: E}\n");
  CHECK(Errors(Tuned("{value: 1}", "{ramp: 1}")) ==
        "k.yaml:38:32: error: unknown key 'ramp' in the fill of tune buffer 'mask' (expected one of: range, value, "
        "step)\n");
  CHECK(Errors(Tuned("{value: 1}", "{value: 1, step: 2}")) ==
        "k.yaml:38:31: error: the fill of tune buffer 'mask' takes one of range, value or step\n");
  CHECK(Errors(Tuned("{value: 1}", "{}")) ==
        "k.yaml:38:31: error: the fill of tune buffer 'mask' takes one of range, value or step\n");
  CHECK(Errors(Tuned("{range: [0, cols]}", "{range: [0]}")) ==
        "k.yaml:36:38: error: fill range of tune buffer 'idx' must be a list [LO, HI] of two expressions\n");
  // random and zero fill any buffer.
  CHECK(Errors(Tuned("fill: {value: 1}}", "fill: random}")) == "");
  CHECK(Errors(Tuned(ws, "    ws: {count: rows, fill: random}\n")) == "");
}

TEST_CASE("tune: valid") {
  const std::string valid = "BLOCK >= cols / 4 && sizeof(T) <= 4";
  CHECK(Errors(Tuned(valid, "BLOK >= cols / 4")) == "k.yaml:40:11: error: unknown name 'BLOK' in expression\n");
  // Pointers against NULL and launch-only params, as the auto rules.
  CHECK(Errors(Tuned(valid, "in != NULL && split > 0 && flag")) == "");
  CHECK(Errors(Tuned(valid, "BLOCK * 4 <= device.max_shared_mem")) ==
        "k.yaml:40:24: error: 'device.max_shared_mem' is a property of the device; tune's valid reads only params "
        "and constexprs (the tuner and the auto dispatcher must agree)\n");
  CHECK(Errors(Tuned("  valid: \"" + valid + "\"\n", "  valid: [BLOCK]\n")) ==
        "k.yaml:40:10: error: tune valid must be an integer expression\n");
}

namespace {

// A Triton kernel tuned over n whose autotune configs (num_warps 4 and 8)
// come from its source.
const char* kTriton =
    "kernel: va\n"                                                                    // 1
    "language: triton\n"                                                              // 2
    "source: va.py\n"                                                                 // 3
    "entry: va\n"                                                                     // 4
    "constexprs:\n"                                                                   // 5
    "  - {name: BLOCK, type: int, values: [128, 256], auto: \"n <= 128 ? 128 : 256\"}\n"  // 6
    "params:\n"                                                                       // 7
    "  - {name: x, type: const f32*}\n"                                               // 8
    "  - {name: out, type: f32*}\n"                                                   // 9
    "  - {name: n, type: i64}\n"                                                      // 10
    "launch:\n"                                                                       // 11
    "  grid: [\"cdiv(n, BLOCK)\"]\n"                                                  // 12
    "tune:\n"                                                                         // 13
    "  key: [n]\n"                                                                    // 14
    "  shapes: {n: [1024, 65536]}\n"                                                  // 15
    "  buffers: {x: n, out: n}\n"                                                     // 16
    "  valid: \"BLOCK * num_warps <= 2048\"\n";                                       // 17

kpack::TritonSourceInfo Autotuned(const std::string& def = "def va(x, out, n, BLOCK: tl.constexpr):") {
  kpack::TritonSourceInfo info;
  info.line = 5;
  info.params = Signature("va.py", 5, def);
  info.inputs = {"va.py"};
  kpack::TritonAutotuneFacts a;
  a.loc = kpack::SourceLoc{"va.py", 3, 2};
  a.key = {"n"};
  a.configs = {Config({}, 4), Config({}, 8)};
  info.autotunes = {a};
  return info;
}

}  // namespace

TEST_CASE("tune: a Triton kernel's valid reads what its source adds") {
  const kpack::TritonSourceInfo source = Autotuned();
  Loaded l = Load(kTriton, &source);
  REQUIRE(l.errors == "");
  REQUIRE(l.kernel().tune);
  CHECK(kpack::FormatExpr(*l.kernel().tune->valid) == "BLOCK * num_warps <= 2048");
  // No params but the key: none to list.
  CHECK(l.kernel().tune->params.empty());
  // Without the source, num_warps is no name of the kernel.
  CHECK(Load(kTriton).errors == "k.yaml:17:19: error: unknown name 'num_warps' in expression\n");
  // A computed constexpr exists only in the typed launcher, after the auto
  // dispatcher (which evaluates valid) chose.
  const kpack::TritonSourceInfo even = Autotuned("def va(x, out, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):");
  CHECK(Load(Replace(Replace(kTriton, "params:\n", "  - {name: EVEN, type: bool, rule: \"floormod(n, 16) == 0\"}\n"
                                                   "params:\n"),
                     "num_warps <= 2048", "num_warps <= 2048 || EVEN"),
             &even)
            .errors == "k.yaml:18:40: error: 'EVEN' is computed by the typed launcher (rule at k.yaml:7:36), after "
                       "the auto dispatcher chose; tune's valid cannot read it\n");
}

TEST_CASE("tune: a Triton kernel's autotune key and configs are a ready tuning section") {
  // No auto: rule, no key: the autotune configs' num_warps becomes the auto
  // constexpr (the first config's 4 where no table applies), the autotune
  // key the tune key.
  const std::string plain = Replace(Replace(Replace(kTriton, ", auto: \"n <= 128 ? 128 : 256\"", ""), "  key: [n]\n", ""),
                                    "  valid: \"BLOCK * num_warps <= 2048\"\n", "");
  const kpack::TritonSourceInfo source = Autotuned();
  Loaded l = Load(plain, &source);
  REQUIRE(l.errors == "");
  const kpack::Kernel& k = l.kernel();
  REQUIRE(k.tune);
  REQUIRE(k.tune->key.size() == 1);
  CHECK(k.tune->key[0].param == "n");
  CHECK(k.tune->key[0].values == std::vector<int64_t>{1024, 65536});
  const kpack::Constexpr* warps = k.FindConstexpr("num_warps");
  REQUIRE(warps);
  REQUIRE(warps->Auto());
  CHECK(kpack::FormatExpr(*warps->auto_rule) == "4");
  // BLOCK stays the caller's: no config sets it.
  CHECK_FALSE(k.FindConstexpr("BLOCK")->Auto());
  // An autotune key that is no integer param needs a key: of its own.
  kpack::TritonSourceInfo by_pointer = Autotuned();
  by_pointer.autotunes[0].key = {"x"};
  CHECK(Load(plain, &by_pointer).errors ==
        "k.yaml:13:1: error: tune: va's autotune key 'x' is not an integer param (const f32*); give tune a key:\n");
  // Without tune:, the caller keeps choosing the configs.
  Loaded untuned = Load(Replace(plain, "tune:\n  shapes: {n: [1024, 65536]}\n  buffers: {x: n, out: n}\n", ""), &source);
  REQUIRE(untuned.errors == "");
  CHECK_FALSE(untuned.kernel().FindConstexpr("num_warps")->Auto());
}
