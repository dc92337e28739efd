// `auto:` rules in kernel manifests (kernel_reader.cc, auto_rules.cc): what
// a rule may read and on which constexprs, every message word for word at
// its file:line:col, for CUDA and Triton kernels (Triton with heuristics
// through the fake describer).  The code they become is tested in
// auto_codegen_test.cc.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "expand.h"
#include "fake_describer.h"
#include "test_util.h"

using kpack::testing::FakeDescriber;
using kpack::testing::kKernel;
using kpack::testing::LoadErrors;
using kpack::testing::Replace;
using kpack::testing::ScratchDir;
using kpack::testing::Signature;

namespace {

// kKernel's constexprs are lines 5 (T) and 6 (BLOCK); its params x, y, out, n.
// `line` replaces BLOCK's.
std::string Cuda(const std::string& block_line) {
  return Replace(kKernel, "  - {name: BLOCK, type: int, values: [128, 256], tag: b}\n", block_line);
}

// A Triton kernel manifest; `constexprs` (one line each) start on line 6.
std::string Triton(const std::string& constexprs) {
  return "kernel: va\n"              // 1
         "language: triton\n"        // 2
         "source: va.py\n"           // 3
         "entry: va\n"               // 4
         "constexprs:\n" +           // 5
         constexprs +
         "params:\n"
         "  - {name: x, type: const f32*}\n"
         "  - {name: out, type: f32*}\n"
         "  - {name: n, type: i64}\n"
         "launch:\n"
         "  grid: [n]\n";
}

struct Loaded {
  std::optional<kpack::Package> pkg;
  std::string errors;
  const kpack::Kernel& kernel() const { return pkg->kernels.at(0); }
};

// Loads package.yaml + k.yaml (va.cuh, va.py beside them); with `source`,
// a describer gives those facts of va.py's va.
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
  if (out.pkg) kpack::Expand(*out.pkg, diag);
  out.errors = diag.Text();
  return out;
}

std::string Errors(const std::string& kernel, const kpack::TritonSourceInfo* source = nullptr) {
  return Load(kernel, source).errors;
}

// va.py's va with a heuristic for EVEN (args['n'] % 16 == 0), at va.py:2:30.
kpack::TritonSourceInfo EvenSource() {
  kpack::TritonSourceInfo info;
  info.line = 5;
  info.params = Signature("va.py", 5, "def va(x, out, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):");
  info.inputs = {"va.py"};
  info.heuristics = {{"EVEN", "(floormod(n, 16) == 0)", "", "lambda args: args['n'] % 16 == 0",
                      kpack::SourceLoc{"va.py", 2, 30}}};
  return info;
}

}  // namespace

TEST_CASE("auto: an int or bool constexpr's rule, read with the kernel") {
  Loaded l = Load(Cuda("  - {name: BLOCK, type: int, values: [128, 256], tag: b, auto: \"min(max(next_pow2(n), 128), "
                       "256)\"}\n"));
  REQUIRE(l.errors == "");
  const kpack::Constexpr& block = *l.kernel().FindConstexpr("BLOCK");
  CHECK(block.Auto());
  CHECK(kpack::FormatExpr(*block.auto_rule) == "min(max(next_pow2(n), 128), 256)");
  CHECK(block.auto_loc.ToString() == "k.yaml:6:64");
  // Still an axis the caller may choose: the typed launchers and the
  // dispatcher are unchanged.
  CHECK(block.InApi());
  CHECK_FALSE(block.Computed());
  CHECK(l.kernel().HasAuto());
  CHECK_FALSE(l.kernel().HasComputed());

  // What a rule may read: sizeof of a dtype, int and bool params (launch-only
  // ones too), pointers against NULL, other constexprs, auto ones in any
  // order, and the device.
  Loaded all = Load(Replace(Replace(kKernel, "  - {name: BLOCK, type: int, values: [128, 256], tag: b}\n",
                                    "  - {name: BLOCK, type: int, values: [128, 256], tag: b, auto: \"VEC * 64 * "
                                    "(wide ? 2 : 1) + (y == NULL) + rows / device.num_sms\"}\n"
                                    "  - {name: VEC, type: int, values: [2, 4], auto: \"16 / sizeof(T) / UNROLL\"}\n"
                                    "  - {name: UNROLL, type: int, values: [1, 2]}\n"
                                    "  - {name: FAST, type: bool, values: [true, false], auto: \"n > 4096 && "
                                    "device.sm >= 90\"}\n"),
                            "  - {name: n, type: i64}\n",
                            "  - {name: n, type: i64}\n  - {name: wide, type: bool}\n"
                            "  - {name: rows, type: u32, launch_only: true}\n"));
  REQUIRE(all.errors == "");
  CHECK(all.kernel().AutoOrder() == std::vector<size_t>{2, 1, 4});
}

TEST_CASE("auto: errors") {
  // Only int and bool constexprs: the auto dispatcher takes the others from
  // its caller.
  CHECK(Errors(Replace(kKernel, "values: [f32, f16]}", "values: [f32, f16], auto: 4}")) ==
        "k.yaml:5:54: error: auto applies to int and bool constexprs only ('T' is a dtype constexpr, which the auto "
        "dispatcher takes from its caller)\n");
  CHECK(Errors(Triton("  - {name: EPS, type: float, values: [1e-6], auto: 1}\n"
                      "  - {name: MODE, type: str, values: [mean], auto: 0}\n")) ==
        "k.yaml:6:52: error: auto applies to int and bool constexprs only ('EPS' is a float constexpr, which the "
        "auto dispatcher takes from its caller)\n"
        "k.yaml:7:51: error: auto applies to int and bool constexprs only ('MODE' is a str constexpr, which the auto "
        "dispatcher takes from its caller)\n");
  // A rule must be an expression.
  CHECK(Errors(Cuda("  - {name: BLOCK, type: int, values: [128, 256], auto: [n]}\n")) ==
        "k.yaml:6:56: error: auto must be an integer expression\n");
  CHECK(Errors(Cuda("  - {name: BLOCK, type: int, values: [128, 256], auto: \"n +\"}\n")) ==
        "k.yaml:6:60: error: expected a number, a name or '(' in expression\n");
  // Names: as in launch expressions.
  CHECK(Errors(Cuda("  - {name: BLOCK, type: int, values: [128, 256], auto: \"next_pow2(m)\"}\n")) ==
        "k.yaml:6:67: error: unknown name 'm' in expression\n");
  CHECK(Errors(Cuda("  - {name: BLOCK, type: int, values: [128, 256], auto: \"x > 0 ? 128 : 256\"}\n")) ==
        "k.yaml:6:57: error: 'x' is a pointer parameter; it can only be compared with NULL: p == NULL or p != NULL\n");
  CHECK(Errors(Cuda("  - {name: BLOCK, type: int, values: [128, 256], auto: \"T == 2 ? 128 : 256\"}\n")) ==
        "k.yaml:6:57: error: 'T' is a dtype; use sizeof(T)\n");
  CHECK(Errors(Cuda("  - {name: BLOCK, type: int, values: [128, 256], auto: \"device.cores\"}\n")) ==
        "k.yaml:6:64: error: unknown device attribute 'cores' (expected num_sms, sm, max_shared_mem or "
        "l2_bytes)\n");
  CHECK(Errors(Triton("  - {name: BLOCK, type: int, values: [128], auto: \"EPS > 0 ? 128 : 256\"}\n"
                      "  - {name: EPS, type: float, values: [1e-6]}\n")) ==
        "k.yaml:6:52: error: 'EPS' is not an integer parameter\n");
  // Auto rules may read each other, not in a cycle, and not themselves.
  CHECK(Errors(Cuda("  - {name: BLOCK, type: int, values: [128, 256], auto: \"VEC * 64\"}\n"
                    "  - {name: VEC, type: int, values: [2, 4], auto: \"BLOCK / 64\"}\n")) ==
        "k.yaml:6:56: error: the auto rules read each other in a cycle (through 'BLOCK'); the auto dispatcher cannot "
        "compute them\n");
  CHECK(Errors(Cuda("  - {name: BLOCK, type: int, values: [128, 256], auto: \"max(BLOCK, n)\"}\n")) ==
        "k.yaml:6:56: error: the auto rules read each other in a cycle (through 'BLOCK'); the auto dispatcher cannot "
        "compute them\n");
}

TEST_CASE("auto and rules: a computed constexpr is the launcher's, not the auto dispatcher's") {
  // A rule of its own and auto.
  CHECK(Errors(Triton("  - {name: BLOCK, type: int, values: [128, 256], rule: \"next_pow2(n)\", auto: "
                      "\"next_pow2(n)\"}\n")) ==
        "k.yaml:6:78: error: constexpr 'BLOCK' has both rule and auto: a rule makes the typed launcher compute it on "
        "every call, auto lets the auto dispatcher choose it; keep one\n");
  // A CUDA kernel has no rules: that error alone.
  CHECK(Errors(Cuda("  - {name: BLOCK, type: int, values: [128, 256], rule: \"n\", auto: \"n\"}\n")) ==
        "k.yaml:6:5: error: rules apply to Triton kernels only for now (constexpr 'BLOCK')\n");
  // An auto rule cannot read a computed constexpr: the typed launcher
  // computes it after the auto dispatcher chose.
  CHECK(Errors(Triton("  - {name: EVEN, type: bool, rule: \"floormod(n, 16) == 0\"}\n"
                      "  - {name: BLOCK, type: int, values: [128, 256], auto: \"EVEN ? 256 : 128\"}\n")) ==
        "k.yaml:7:57: error: 'EVEN' is computed by the typed launcher (rule at k.yaml:6:36), after the auto "
        "dispatcher chose; an auto rule cannot read it\n");

  // A heuristic computes EVEN: auto is refused unless rule: none takes the
  // heuristic's place.
  const kpack::TritonSourceInfo source = EvenSource();
  const std::string block = "  - {name: BLOCK, type: int, values: [128, 256]}\n";
  CHECK(Errors(Triton(block + "  - {name: EVEN, type: bool, values: [true, false], auto: \"n > 0\"}\n"), &source) ==
        "k.yaml:7:59: error: constexpr 'EVEN' is computed by the heuristic at va.py:2:30 (lambda args: args['n'] % "
        "16 == 0); give it rule: none in the manifest for its auto rule to choose it instead\n");
  Loaded none = Load(Triton(block + "  - {name: EVEN, type: bool, values: [true, false], rule: none, auto: "
                                    "\"floormod(n, 16) == 0\"}\n"),
                     &source);
  REQUIRE(none.errors == "");
  const kpack::Constexpr& even = *none.kernel().FindConstexpr("EVEN");
  CHECK(even.Auto());
  CHECK(even.InApi());
  CHECK_FALSE(even.Computed());
  // Without the manifest's word the heuristic stands, and rules may read it
  // (an auto rule may not).
  CHECK(Errors(Triton("  - {name: BLOCK, type: int, values: [128, 256], auto: \"EVEN ? 256 : 128\"}\n"), &source) ==
        "k.yaml:6:57: error: 'EVEN' is computed by the typed launcher (heuristic at va.py:2:30 (lambda args: "
        "args['n'] % 16 == 0)), after the auto dispatcher chose; an auto rule cannot read it\n");
}

TEST_CASE("auto on Triton options: num_warps may be chosen by a rule") {
  Loaded l = Load(Triton("  - {name: BLOCK, type: int, values: [128, 1024], auto: \"max(next_pow2(n), 128)\"}\n"
                         "  - {name: num_warps, type: int, values: [4, 8], auto: \"BLOCK >= 1024 ? 8 : 4\"}\n"));
  REQUIRE(l.errors == "");
  const kpack::Constexpr& warps = *l.kernel().FindConstexpr("num_warps");
  CHECK(warps.option);
  CHECK(warps.Auto());
  CHECK(l.kernel().AutoOrder() == std::vector<size_t>{0, 1});
}
