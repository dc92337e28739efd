// The manifest keys of Triton kernels (kernel_reader.cc, triton_reader.cc,
// yaml_reader.cc), read without a describer: every key's happy path and
// every message word for word at its file:line:col.  What the source adds
// (triton_merge.cc) is tested in triton_merge_test.cc.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen.h"
#include "expand.h"
#include "kernel_reader.h"
#include "test_util.h"

using kpack::testing::kKernel;
using kpack::testing::Replace;
using kpack::testing::ScratchDir;

namespace {

// A Triton kernel manifest; tests replace parts or append keys (line 13 on).
const char* kTriton =
    "kernel: va\n"                                                   // 1
    "language: triton\n"                                             // 2
    "source: va.py\n"                                                // 3
    "entry: va\n"                                                    // 4
    "constexprs:\n"                                                  // 5
    "  - {name: BLOCK, type: int, values: [128, 256], tag: b}\n"     // 6
    "params:\n"                                                      // 7
    "  - {name: x, type: const f32*}\n"                              // 8
    "  - {name: out, type: f32*}\n"                                  // 9
    "  - {name: n, type: i64}\n"                                     // 10
    "launch:\n"                                                      // 11
    "  grid: [\"cdiv(n, BLOCK)\"]\n";                                // 12

const char* kPackage = "package: demo\narchs: [sm_80]\nkernels: [k.yaml]\n";

// Loads package.yaml and k.yaml (with va.py and va.cuh beside them) from a
// scratch directory; `files` adds more.  Expands what loaded.
struct Loaded {
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;
  std::string errors;

  const kpack::Kernel& kernel() const { return pkg->kernels.at(0); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const kpack::Specialization& s : specs)
      if (s.api) out.push_back(s.name);
    return out;
  }
};

Loaded Load(const std::string& kernel, const std::string& package = kPackage,
            const std::map<std::string, std::string>& files = {}) {
  ScratchDir dir;
  dir.Write("package.yaml", package);
  dir.Write("k.yaml", kernel);
  dir.Write("va.py", "");
  dir.Write("va.cuh", "");
  for (const auto& [name, text] : files) dir.Write(name, text);
  kpack::Diagnostics diag;
  Loaded out;
  out.pkg = kpack::LoadPackage("package.yaml", {}, diag);
  if (out.pkg) out.specs = kpack::Expand(*out.pkg, diag);
  out.errors = diag.Text();
  return out;
}

std::string Errors(const std::string& kernel, const std::string& package = kPackage) {
  return Load(kernel, package).errors;
}

// kTriton with its BLOCK constexpr replaced by `constexprs` (one line
// each), and a grid of n.
std::string WithConstexprs(const std::string& constexprs) {
  return Replace(Replace(kTriton, "  - {name: BLOCK, type: int, values: [128, 256], tag: b}\n", constexprs),
                 "\"cdiv(n, BLOCK)\"", "n");
}

}  // namespace

TEST_CASE("FloatText spells a float as Python's repr() does") {
  // The spelling is part of specialization names and of what Triton is
  // given; these are repr()'s answers.
  const std::pair<double, const char*> cases[] = {
      {1e-6, "1e-06"},
      {0.5, "0.5"},
      {3.0, "3.0"},
      {-2.5e-7, "-2.5e-07"},
      {1e16, "1e+16"},
      {1234567890123456.0, "1234567890123456.0"},
      {1e15, "1000000000000000.0"},
      {9999999999999998.0, "9999999999999998.0"},
      {0.0001, "0.0001"},
      {0.00001, "1e-05"},
      {123.456, "123.456"},
      {100.0, "100.0"},
      {1.5e300, "1.5e+300"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {0.1 + 0.2, "0.30000000000000004"},
  };
  for (const auto& [value, text] : cases) {
    INFO(text);
    CHECK(kpack::FloatText(value) == text);
  }
}

TEST_CASE("float and str constexprs: values, spellings, tags and names") {
  Loaded l = Load(WithConstexprs("  - {name: EPS, type: float, values: [1e-6, .5, +3, -2.5E-7]}\n"
                                 "  - {name: MODE, type: str, values: [mean, sum_2]}\n"));
  REQUIRE(l.errors == "");
  const kpack::Kernel& k = l.kernel();
  REQUIRE(k.constexprs.size() == 2);
  const kpack::Constexpr& eps = k.constexprs[0];
  CHECK(eps.kind == kpack::ConstexprKind::kFloat);
  CHECK(eps.tag == "eps");
  REQUIRE(eps.values.size() == 4);
  CHECK(eps.values[0].real == 1e-6);
  CHECK(eps.values[0].text == "1e-06");
  CHECK(eps.values[1].text == "0.5");
  CHECK(eps.values[2].text == "3.0");
  CHECK(eps.values[3].real == -2.5e-7);
  CHECK(eps.values[3].text == "-2.5e-07");
  CHECK(eps.values[3].loc.ToString() == "k.yaml:6:53");
  const kpack::Constexpr& mode = k.constexprs[1];
  CHECK(mode.kind == kpack::ConstexprKind::kStr);
  CHECK(mode.tag == "");  // a str's value is its name part, as a dtype's
  CHECK(mode.values[1].text == "sum_2");
  // '.' is p and '-' is m in names; a str is its value.
  CHECK(l.names() == std::vector<std::string>{"va_eps1em06_mean", "va_eps1em06_sum_2", "va_eps0p5_mean",
                                              "va_eps0p5_sum_2", "va_eps3p0_mean", "va_eps3p0_sum_2",
                                              "va_epsm2p5em07_mean", "va_epsm2p5em07_sum_2"});
  CHECK(l.specs[2].Describe() == "EPS=0.5, MODE=mean");
}

TEST_CASE("float and str constexprs: values that are not one, duplicates and the CUDA refusal") {
  const std::string floats = "  - {name: EPS, type: float, values: [0.5, VALUE]}\n";
  auto float_error = [&](const std::string& value) { return Errors(WithConstexprs(Replace(floats, "VALUE", value))); };
  const std::string not_a_number =
      "k.yaml:6:44: error: a value of float constexpr 'EPS' must be a finite decimal number\n";
  CHECK(float_error("abc") == not_a_number);
  CHECK(float_error("\"0.25\"") == not_a_number);  // quoted: a string
  CHECK(float_error(".inf") == not_a_number);
  CHECK(float_error("0x10") == not_a_number);
  CHECK(float_error("1e999") == not_a_number);  // beyond a double
  CHECK(float_error("1e") == not_a_number);
  // One value however it is spelled, -0.0 included (it is one name, eps0p0).
  CHECK(float_error("0.50") == "k.yaml:6:44: error: duplicate value in 'EPS'\n");
  CHECK(float_error("5e-1") == "k.yaml:6:44: error: duplicate value in 'EPS'\n");
  CHECK(Errors(WithConstexprs("  - {name: EPS, type: float, values: [-0.0, 0.0]}\n")) ==
        "k.yaml:6:45: error: duplicate value in 'EPS'\n");
  Loaded zero = Load(WithConstexprs("  - {name: EPS, type: float, values: [-0.0]}\n"));
  REQUIRE(zero.errors == "");
  CHECK(zero.kernel().constexprs[0].values[0].text == "0.0");
  CHECK(!std::signbit(zero.kernel().constexprs[0].values[0].real));
  CHECK(zero.names() == std::vector<std::string>{"va_eps0p0"});

  const std::string strs = "  - {name: MODE, type: str, values: [mean, VALUE]}\n";
  auto str_error = [&](const std::string& value) { return Errors(WithConstexprs(Replace(strs, "VALUE", value))); };
  CHECK(str_error("a-b") == "k.yaml:6:44: error: str value 'a-b' of 'MODE' must hold only letters, digits and '_' "
                            "(it is part of the specialization's name)\n");
  CHECK(str_error("\"x y\"") == "k.yaml:6:44: error: str value 'x y' of 'MODE' must hold only letters, digits and "
                                "'_' (it is part of the specialization's name)\n");
  CHECK(str_error("\"\"") == "k.yaml:6:44: error: str value '' of 'MODE' must hold only letters, digits and '_' (it "
                             "is part of the specialization's name)\n");
  CHECK(str_error("[x]") == "k.yaml:6:44: error: a value of str constexpr 'MODE' must be a string\n");
  CHECK(str_error("mean") == "k.yaml:6:44: error: duplicate value in 'MODE'\n");

  // A C++ template has no float or str parameters.
  CHECK(Errors(Replace(kKernel, "type: int, values: [128, 256]", "type: float, values: [0.5]")) ==
        "k.yaml:6:25: error: constexpr type 'float' applies to Triton kernels only (a C++ template takes int, bool "
        "and type parameters here)\n");
  CHECK(Errors(Replace(kKernel, "type: int, values: [128, 256]", "type: str, values: [mean]")) ==
        "k.yaml:6:25: error: constexpr type 'str' applies to Triton kernels only (a C++ template takes int, bool "
        "and type parameters here)\n");
  CHECK(Errors(WithConstexprs("  - {name: EPS, type: double, values: [0.5]}\n")) ==
        "k.yaml:6:23: error: unknown constexpr type 'double' (expected int, bool, dtype, float or str)\n");
}

TEST_CASE("exclusions match float and str values by value") {
  const std::string axes = "  - {name: EPS, type: float, values: [1e-6, 0.5]}\n"
                           "  - {name: MODE, type: str, values: [mean, sum]}\n";
  Loaded l = Load(WithConstexprs(axes) + "exclude:\n  - {EPS: 0.000001, MODE: sum}\n  - {EPS: 5e-1}\n");
  REQUIRE(l.errors == "");
  CHECK(l.names() == std::vector<std::string>{"va_eps1em06_mean"});
  CHECK(Errors(WithConstexprs(axes) + "exclude:\n  - {EPS: 0.25}\n") ==
        "k.yaml:15:11: error: '0.25' is not one of the values of 'EPS'\n");
  CHECK(Errors(WithConstexprs(axes) + "exclude:\n  - {MODE: max}\n") ==
        "k.yaml:15:12: error: 'max' is not one of the values of 'MODE'\n");
}

TEST_CASE("rule: computes a constexpr per call; rule: none leaves it to the caller") {
  const std::string computed =
      Replace(kTriton, "params:\n",
              "  - {name: EVEN, type: bool, rule: \"floormod(n, BLOCK) == 0\"}\n"
              "  - {name: SPLIT, type: int, values: [1, 2], rule: \"min(cdiv(rows, 4096), 2)\"}\n"
              "  - {name: HAS_X, type: bool, values: [true, false], rule: none}\n"
              "params:\n");
  // rows is not a param yet: the rule's names are checked like the grid's.
  Loaded l = Load(computed);
  CHECK(l.errors == "k.yaml:8:62: error: unknown name 'rows' in expression\n");

  // Rules may read launch-only params.
  const std::string rules = Replace(computed, "  - {name: n, type: i64}\n",
                                    "  - {name: n, type: i64}\n  - {name: rows, type: i64, launch_only: true}\n");
  l = Load(rules);
  REQUIRE(l.errors == "");
  const kpack::Kernel& k = l.kernel();
  const kpack::Constexpr* even = k.FindConstexpr("EVEN");
  REQUIRE(even != nullptr);
  CHECK(even->Computed());
  CHECK_FALSE(even->InApi());
  CHECK(kpack::FormatExpr(*even->rule) == "floormod(n, BLOCK) == 0");
  CHECK(even->rule_source == "rule at k.yaml:7:36");
  CHECK(even->origin == kpack::ConstexprOrigin::kManifest);
  // A computed bool the manifest does not restrict is built for both values.
  REQUIRE(even->values.size() == 2);
  CHECK((even->values[0].integer == 0 && even->values[1].integer == 1));
  const kpack::Constexpr* split = k.FindConstexpr("SPLIT");
  CHECK(split->Computed());
  CHECK(split->values.size() == 2);
  const kpack::Constexpr* has_x = k.FindConstexpr("HAS_X");
  CHECK(has_x->rule_none);
  CHECK_FALSE(has_x->Computed());
  CHECK(has_x->InApi());
  // Names carry the caller's axes only; each name has a build per computed
  // combination (2 x 2), its API build first.
  CHECK(l.names() == std::vector<std::string>{"va_b128_has_x", "va_b128_nohas_x", "va_b256_has_x",
                                              "va_b256_nohas_x"});
  CHECK(l.specs.size() == 16);
  CHECK(l.specs[4].name == "va_b128_has_x");
  CHECK(l.specs[4].computed == "noeven_split2");
  CHECK(l.specs[4].BuildLabel() == "EVEN=false, SPLIT=2");
  CHECK(l.specs[4].Stem() == "va_b128_has_x.noeven_split2");
}

TEST_CASE("rule: errors") {
  auto rule = [](const std::string& constexpr_line) {
    return Errors(Replace(kTriton, "params:\n", constexpr_line + "params:\n"));
  };
  CHECK(rule("  - {name: EVEN, type: bool, rule: \"n >\"}\n") ==
        "k.yaml:7:40: error: expected a number, a name or '(' in expression\n");
  CHECK(rule("  - {name: EVEN, type: bool, rule: \"m > 0\"}\n") ==
        "k.yaml:7:37: error: unknown name 'm' in expression\n");
  CHECK(rule("  - {name: EVEN, type: bool, rule: [n]}\n") ==
        "k.yaml:7:36: error: rule must be an integer expression\n");
  // Quoted, "none" is an expression: the name none, which is unknown.
  CHECK(rule("  - {name: EVEN, type: bool, rule: \"none\"}\n") ==
        "k.yaml:7:37: error: unknown name 'none' in expression\n");
  CHECK(rule("  - {name: SPLIT, type: int, rule: \"n > 0\"}\n") ==
        "k.yaml:7:5: error: constexpr 'SPLIT' has no values to build: give it values: [...]\n");
  // A rule may read a computed constexpr declared after it: the launcher
  // computes that one first.
  Loaded ordered = Load(Replace(kTriton, "params:\n",
                                "  - {name: A, type: bool, rule: \"B && n > 0\"}\n"
                                "  - {name: B, type: bool, rule: \"n > 4\"}\n"
                                "params:\n"));
  REQUIRE(ordered.errors == "");
  CHECK(ordered.kernel().ComputedOrder() == std::vector<size_t>{2, 1});
  // Rules may read computed constexprs, not in a cycle.
  CHECK(rule("  - {name: A, type: bool, rule: \"B\"}\n  - {name: B, type: bool, rule: \"A\"}\n") ==
        "k.yaml:7:5: error: the rules of computed constexprs read each other in a cycle (through 'A'); the launcher "
        "cannot compute them\n");
  CHECK(rule("  - {name: EVEN, type: bool, rule: \"x > 0\"}\n") ==
        "k.yaml:7:37: error: 'x' is a pointer parameter; it can only be compared with NULL: p == NULL or p != NULL\n");
  // A CUDA kernel's constexprs are template arguments the caller chooses.
  CHECK(Errors(Replace(kKernel, "tag: b}", "tag: b, rule: \"n > 0\"}")) ==
        "k.yaml:6:5: error: rules apply to Triton kernels only for now (constexpr 'BLOCK')\n");
  CHECK(Errors(Replace(kKernel, "tag: b}", "tag: b, rule: none}")) ==
        "k.yaml:6:5: error: rules apply to Triton kernels only for now (constexpr 'BLOCK')\n");
}

TEST_CASE("launch_only params size the launch; divisibility: none and width: fixed opt out") {
  Loaded l = Load(Replace(Replace(kTriton, "  - {name: n, type: i64}\n",
                                  "  - {name: n, type: i64, divisibility: none, width: fixed}\n"
                                  "  - {name: rows, type: i32, launch_only: true}\n"),
                          "\"cdiv(n, BLOCK)\"", "rows, \"cdiv(n, BLOCK)\""));
  REQUIRE(l.errors == "");
  const kpack::Param& n = l.kernel().params[2];
  CHECK(n.divisibility == 0);
  CHECK_FALSE(n.divisibility_auto);
  CHECK(n.divisibility_loc.ToString() == "k.yaml:10:40");  // said: the merge leaves it alone
  CHECK_FALSE(n.width_auto);
  CHECK(n.width_loc.ToString() == "k.yaml:10:53");
  CHECK(l.kernel().params[3].launch_only);
  CHECK_FALSE(l.kernel().HasAlignedVariant());
  CHECK_FALSE(l.kernel().HasNarrowVariant());
  // CUDA kernels take launch-only params too.
  CHECK(Errors(Replace(Replace(kKernel, "  - {name: n, type: i64}\n",
                               "  - {name: n, type: i64}\n  - {name: rows, type: i64, launch_only: true}\n"),
                       "\"cdiv(n, BLOCK)\"", "[rows]")) == "");

  const std::string param = "  - {name: n, type: i64}\n";
  auto with = [&](const std::string& replacement) { return Errors(Replace(kTriton, param, replacement)); };
  CHECK(with("  - {name: n, type: i64}\n  - {name: p, type: const f32*, launch_only: true}\n") ==
        "k.yaml:11:46: error: launch-only param 'p' must be an integer (it sizes the launch)\n");
  CHECK(with("  - {name: n, type: i64, launch_only: true, divisibility: 16}\n") ==
        "k.yaml:10:59: error: 'n' is launch-only: it is not passed to the kernel, so divisibility and width do not "
        "apply\n");
  CHECK(with("  - {name: n, type: i64, launch_only: true, width: fixed}\n") ==
        "k.yaml:10:52: error: 'n' is launch-only: it is not passed to the kernel, so divisibility and width do not "
        "apply\n");
  CHECK(with("  - {name: n, type: i64}\n  - {name: scale, type: f32, launch_only: true}\n") ==
        "k.yaml:11:43: error: launch-only param 'scale' must be an integer (it sizes the launch)\n");
  // equal_to_1: auto: an integer the aligned builds take as the constant 1.
  Loaded one = Load(Replace(kTriton, param, "  - {name: n, type: i64, equal_to_1: auto}\n"));
  REQUIRE(one.errors == "");
  CHECK(one.kernel().params[2].equal_to_1);
  CHECK(one.kernel().HasAlignedVariant());
  CHECK(with("  - {name: n, type: i64, equal_to_1: yes}\n") ==
        "k.yaml:10:38: error: equal_to_1 must be auto (the aligned builds take the value 1 as a constant, as Triton's "
        "JIT does)\n");
  CHECK(with("  - {name: n, type: f32, equal_to_1: auto}\n") ==
        "k.yaml:10:38: error: equal_to_1 applies only to integer params ('n' is f32)\n");
  CHECK(with("  - {name: n, type: i64, divisibility: auto, equal_to_1: auto}\n") ==
        "k.yaml:10:58: error: 'n' cannot be both equal_to_1 and divisible by 16 in the aligned builds; give it "
        "divisibility: none\n");
  CHECK(with("  - {name: n, type: i64, launch_only: true, equal_to_1: auto}\n") ==
        "k.yaml:10:57: error: 'n' is launch-only: it is not passed to the kernel, so equal_to_1 does not apply\n");
  CHECK(Errors(Replace(kKernel, "type: i64}", "type: i64, equal_to_1: auto}")) ==
        "k.yaml:11:38: error: equal_to_1 applies to Triton kernels only\n");
  CHECK(with("  - {name: n, type: i64, launch_only: yes}\n") ==
        "k.yaml:10:39: error: launch_only must be true or false\n");
  CHECK(with("  - {name: n, type: i64, width: wide}\n") ==
        "k.yaml:10:33: error: width must be auto (an i32 variant, run when the value fits in 32 bits, as Triton's JIT "
        "does) or fixed\n");
  // variants: none builds the params as typed: an auto param contradicts it.
  CHECK(Errors(Replace(kTriton, param, "  - {name: n, type: i64, divisibility: auto}\n") + "variants: none\n") ==
        "k.yaml:10:40: error: 'n' asks for a variant, but the kernel says variants: none\n");
  CHECK(Errors(Replace(kTriton, param, "  - {name: n, type: i64, width: auto}\n") + "variants: none\n") ==
        "k.yaml:10:33: error: 'n' asks for a variant, but the kernel says variants: none\n");
  CHECK(Errors(Replace(kKernel, "type: i64}", "type: i64, width: fixed}")) ==
        "k.yaml:11:33: error: width applies to Triton kernels only (a CUDA kernel's C++ signature fixes its types)\n");
  CHECK(Errors(Replace(kKernel, "type: i64}", "type: i64, divisibility: none}")) ==
        "k.yaml:11:40: error: divisibility hints apply to Triton kernels only\n");
}

TEST_CASE("options: Triton's compile options become axes of their own") {
  Loaded l = Load(std::string(kTriton) +
                  "options: {num_warps: [4, 8], num_stages: 2, maxnreg: [128], enable_fp_fusion: false}\n");
  REQUIRE(l.errors == "");
  const kpack::Kernel& k = l.kernel();
  REQUIRE(k.constexprs.size() == 5);
  const char* names[] = {"BLOCK", "num_warps", "num_stages", "maxnreg", "enable_fp_fusion"};
  const char* tags[] = {"b", "w", "stages", "maxnreg", "fpfusion"};
  for (size_t i = 0; i < 5; ++i) {
    INFO(names[i]);
    CHECK(k.constexprs[i].name == names[i]);
    CHECK(k.constexprs[i].tag == tags[i]);
    CHECK(k.constexprs[i].option == (i > 0));
  }
  CHECK(k.constexprs[4].kind == kpack::ConstexprKind::kBool);
  CHECK(k.constexprs[1].loc.ToString() == "k.yaml:13:11");
  CHECK(l.names() == std::vector<std::string>{"va_b128_w4_stages2_maxnreg128_nofpfusion",
                                              "va_b128_w8_stages2_maxnreg128_nofpfusion",
                                              "va_b256_w4_stages2_maxnreg128_nofpfusion",
                                              "va_b256_w8_stages2_maxnreg128_nofpfusion"});
  CHECK(k.NumWarps(l.specs[1].values) == 8);
  CHECK(k.NumStages(l.specs[1].values) == 2);
  CHECK(k.Option(l.specs[1].values, "maxnreg")->integer == 128);
  // Without options, Triton's defaults.
  Loaded plain = Load(kTriton);
  CHECK(plain.kernel().NumWarps(plain.specs[0].values) == 4);
  CHECK(plain.kernel().NumStages(plain.specs[0].values) == 3);
}

TEST_CASE("options: values out of range, wrong types, unknown and repeated options") {
  auto options = [](const std::string& text) { return Errors(std::string(kTriton) + "options: " + text + "\n"); };
  CHECK(options("{num_warps: [4, 3]}") == "k.yaml:13:26: error: num_warps must be a power of two from 1 to 32\n");
  CHECK(options("{num_warps: 64}") == "k.yaml:13:22: error: num_warps must be a power of two from 1 to 32\n");
  CHECK(options("{num_stages: 0}") == "k.yaml:13:23: error: num_stages must be at least 1\n");
  CHECK(options("{maxnreg: 300}") == "k.yaml:13:20: error: maxnreg must be from 16 to 255 registers\n");
  CHECK(options("{maxnreg: [8]}") == "k.yaml:13:21: error: maxnreg must be from 16 to 255 registers\n");
  // An autotune config's "no limit" (0) is not a value the manifest may give.
  CHECK(options("{maxnreg: 0}") == "k.yaml:13:20: error: maxnreg must be from 16 to 255 registers\n");
  CHECK(options("{enable_fp_fusion: 1}") ==
        "k.yaml:13:29: error: a value of bool constexpr 'enable_fp_fusion' must be true or false\n");
  CHECK(options("{num_warps: four}") ==
        "k.yaml:13:22: error: a value of int constexpr 'num_warps' must be an integer\n");
  CHECK(options("{num_warps: []}") == "k.yaml:13:22: error: values of option 'num_warps' must not be empty\n");
  CHECK(options("{num_warps: [4, 4]}") == "k.yaml:13:26: error: duplicate value in 'num_warps'\n");
  // Clusters: sm_90 and later, of the sizes a cluster may have.
  CHECK(options("{num_ctas: 2}") ==
        "k.yaml:13:11: error: num_ctas above 1 launches thread-block clusters, which need sm_90 or later; the kernel "
        "is built for sm_80\n");
  CHECK(options("{num_ctas: [1, 3]}") ==
        "k.yaml:13:25: error: num_ctas must be 1, 2, 4, 8 or 16 (the CTAs of a thread-block cluster)\n"
        "k.yaml:13:11: error: num_ctas above 1 launches thread-block clusters, which need sm_90 or later; the kernel "
        "is built for sm_80\n");
  CHECK(options("{num_gpus: 2}") ==
        "k.yaml:13:11: error: unknown key 'num_gpus' in options (expected one of: num_warps, num_stages, maxnreg, "
        "enable_fp_fusion, num_ctas)\n");
  CHECK(options("[4]") == "k.yaml:13:10: error: options must be a mapping\n");
  // Named among the constexprs too (the older form): which is meant?
  CHECK(Errors(Replace(kTriton, "params:\n", "  - {name: num_warps, type: int, values: [4]}\nparams:\n") +
               "options: {num_warps: [8]}\n") ==
        "k.yaml:14:11: error: option 'num_warps' is given twice (in options and in constexprs)\n");
  // The older form's options keep their types.
  CHECK(Errors(Replace(kTriton, "params:\n", "  - {name: num_warps, type: bool, values: [true]}\nparams:\n")) ==
        "k.yaml:7:5: error: num_warps must be of type int\n");
  CHECK(Errors(Replace(kTriton, "params:\n", "  - {name: enable_fp_fusion, type: int, values: [1]}\nparams:\n")) ==
        "k.yaml:7:5: error: enable_fp_fusion must be of type bool\n");
  // The older form's values are checked as options: values.
  CHECK(Errors(Replace(kTriton, "params:\n", "  - {name: num_stages, type: int, values: [0]}\nparams:\n")) ==
        "k.yaml:7:44: error: num_stages must be at least 1\n");
}

TEST_CASE("keys that apply to Triton kernels only are refused on a CUDA kernel") {
  auto cuda = [](const std::string& key) { return Errors(std::string(kKernel) + key + "\n"); };
  CHECK(cuda("options: {num_warps: 4}") == "k.yaml:15:10: error: options and autotune apply to Triton kernels only\n");
  CHECK(cuda("autotune: {add: []}") == "k.yaml:15:11: error: options and autotune apply to Triton kernels only\n");
  CHECK(cuda("variants: none") == "k.yaml:15:1: error: variants applies to Triton kernels only\n");
  CHECK(cuda("load: execute") == "k.yaml:15:1: error: load applies to Triton kernels only\n");
  CHECK(cuda("assume: {a.b: 1}") == "k.yaml:15:1: error: assume applies to Triton kernels only\n");
  CHECK(Errors(Replace(kKernel, "source: va.cuh", "module: pkg.va")) ==
        "k.yaml:2:1: error: module applies to Triton kernels only\n"
        "k.yaml:1:1: error: a kernel manifest is missing required key 'source'\n");
}

TEST_CASE("variants: and load: take their documented values only") {
  CHECK(Load(kTriton).kernel().variants == kpack::Variants::kJit);  // the default
  CHECK(Load(std::string(kTriton) + "variants: each\n").kernel().variants == kpack::Variants::kEach);
  CHECK(Load(std::string(kTriton) + "variants: none\n").kernel().variants == kpack::Variants::kNone);
  CHECK(Load(std::string(kTriton) + "variants: jit\n").kernel().variants_loc.ToString() == "k.yaml:13:11");
  CHECK(Errors(std::string(kTriton) + "variants: all\n") ==
        "k.yaml:13:11: error: variants must be jit, each or none (got 'all')\n");
  CHECK(Errors(std::string(kTriton) + "variants: [jit]\n") == "k.yaml:13:11: error: variants must be a string\n");
  CHECK_FALSE(Load(kTriton).kernel().execute_module);
  CHECK(Load(std::string(kTriton) + "load: execute\n").kernel().execute_module);
  CHECK_FALSE(Load(std::string(kTriton) + "load: slice\n").kernel().execute_module);
  CHECK(Errors(std::string(kTriton) + "load: run\n") ==
        "k.yaml:13:7: error: load must be slice or execute (got 'run')\n");
  CHECK(Errors(std::string(kTriton) + "load: {}\n") == "k.yaml:13:7: error: load must be a string\n");
}

TEST_CASE("what Triton decides is not the manifest's: block, shared memory, PTX, family archs") {
  CHECK(Errors(std::string(kTriton) + "  shared_mem: 1024\n  launch_bounds: 128\n") ==
        "k.yaml:13:3: error: a Triton kernel's shared_mem comes from Triton (32 x num_warps threads, its shared "
        "memory); remove it\n"
        "k.yaml:14:3: error: a Triton kernel's launch_bounds comes from Triton (32 x num_warps threads, its shared "
        "memory); remove it\n");
  CHECK(Errors(std::string(kTriton) + "ptx: true\n") ==
        "k.yaml:1:9: error: Triton kernels are packaged as SASS only; ptx: true is not supported\n");
  CHECK(Errors(std::string(kTriton) + "archs: [sm_90, sm_100f]\n") ==
        "k.yaml:1:9: error: Triton cannot target the family arch sm_100f; use sm_100\n");
  // Hopper and newer are built arch-specific, as Triton's JIT builds them.
  Loaded l = Load(std::string(kTriton) + "archs: [sm_80, sm_90, sm_90a, sm_120]\n");
  REQUIRE(l.errors == "");
  std::vector<std::string> archs;
  for (const kpack::Arch& a : l.kernel().BuildArchs()) archs.push_back(a.Name());
  CHECK(archs == std::vector<std::string>{"sm_80", "sm_90a", "sm_120a"});
}

namespace {

// Loads proj/package.yaml from `files` held in memory (LoadOptions::files):
// the project root is proj/, and paths outside it (a --python-path such as
// site-packages) exist without touching the disk.
std::string LoadInMemory(const std::map<std::string, std::string>& files, const kpack::LoadOptions& base,
                         std::optional<kpack::Package>* pkg = nullptr) {
  kpack::LoadOptions options = base;
  options.files = &files;
  kpack::Diagnostics diag;
  std::optional<kpack::Package> loaded = kpack::LoadPackage("proj/package.yaml", options, diag);
  if (pkg) *pkg = std::move(loaded);
  return diag.Text();
}

// kTriton with `module: MODULE` where its source was.
std::string ModuleKernel(const std::string& module) { return Replace(kTriton, "source: va.py", "module: " + module); }

}  // namespace

TEST_CASE("module: is found on --python-path, then on the package's python_path") {
  std::map<std::string, std::string> files = {
      {"proj/package.yaml", std::string(kPackage) + "python_path: [lib]\n"},
      {"proj/k.yaml", ModuleKernel("pkg.mod")},
      {"proj/lib/pkg/mod.py", ""},
      {"proj/lib/pkg/__init__.py", ""},
  };
  std::optional<kpack::Package> pkg;
  REQUIRE(LoadInMemory(files, {}, &pkg) == "");
  const kpack::Kernel& k = pkg->kernels[0];
  CHECK(k.module == "pkg.mod");
  CHECK(k.source_text == "pkg.mod");
  CHECK(k.source_path == "proj/lib/pkg/mod.py");
  CHECK(k.source_name == "lib/pkg/mod.py");  // inside the project: root-relative
  CHECK(k.source_loc.ToString() == "proj/k.yaml:3:9");
  CHECK(k.python_path == std::vector<std::string>{"proj/lib"});

  // A package is its __init__.py.
  files["proj/k.yaml"] = ModuleKernel("pkg");
  REQUIRE(LoadInMemory(files, {}, &pkg) == "");
  CHECK(pkg->kernels[0].source_path == "proj/lib/pkg/__init__.py");

  // The build owner's directories come first and may be anywhere; a file
  // outside the project is named from its python path entry.
  files["proj/k.yaml"] = ModuleKernel("pkg.mod");
  files["site/pkg/mod.py"] = "";
  kpack::LoadOptions options;
  options.python_path = {"site"};
  REQUIRE(LoadInMemory(files, options, &pkg) == "");
  CHECK(pkg->kernels[0].source_path == "site/pkg/mod.py");
  CHECK(pkg->kernels[0].source_name == "pkg/mod.py");
  CHECK(pkg->kernels[0].python_path == std::vector<std::string>{"site", "proj/lib"});
}

TEST_CASE("module: errors") {
  std::map<std::string, std::string> files = {
      {"proj/package.yaml", std::string(kPackage) + "python_path: [lib]\n"},
      {"proj/k.yaml", ModuleKernel("pkg.gone")},
      {"proj/va.py", ""},
  };
  kpack::LoadOptions options;
  options.python_path = {"site"};
  CHECK(LoadInMemory(files, options) ==
        "proj/k.yaml:3:9: error: module 'pkg.gone' not found on the python path (searched site, proj/lib)\n");
  files["proj/package.yaml"] = kPackage;
  CHECK(LoadInMemory(files, {}) ==
        "proj/k.yaml:3:9: error: module 'pkg.gone' not found on the python path (which is empty: give the package "
        "file a python_path, or kpack build --python-path)\n");
  files["proj/k.yaml"] = std::string(kTriton) + "module: pkg.gone\n";
  CHECK(LoadInMemory(files, {}) ==
        "proj/k.yaml:13:9: error: a kernel manifest gives either source or module, not both\n");
  for (const char* bad : {"pkg/mod", ".pkg", "pkg.", "pkg..mod", "pkg.mod-x"}) {
    INFO(bad);
    files["proj/k.yaml"] = ModuleKernel(bad);
    CHECK(LoadInMemory(files, {}) == "proj/k.yaml:3:9: error: module '" + std::string(bad) +
                                         "' is not a dotted Python module name\n"
                                         "proj/k.yaml:1:1: error: a kernel manifest is missing required key 'source' "
                                         "(or 'module')\n");
  }
  files["proj/k.yaml"] = Replace(kTriton, "source: va.py\n", "");
  CHECK(LoadInMemory(files, {}) == "proj/k.yaml:1:1: error: a kernel manifest is missing required key 'source' (or "
                                   "'module')\n");

  // The package's python_path lies inside the project.
  files["proj/k.yaml"] = kTriton;
  files["proj/package.yaml"] = std::string(kPackage) + "python_path: [lib, ../site]\n";
  CHECK(LoadInMemory(files, {}) ==
        "proj/package.yaml:4:20: error: python_path entry '../site' is outside the project root 'proj' (kpack reads "
        "only files inside the project; pass --allow-outside-root to lift this)\n");
  files["proj/package.yaml"] = std::string(kPackage) + "python_path: lib\n";
  CHECK(LoadInMemory(files, {}) == "proj/package.yaml:4:14: error: python_path must be a list of directories\n");
  files["proj/package.yaml"] = std::string(kPackage) + "python_path: [[lib]]\n";
  CHECK(LoadInMemory(files, {}) == "proj/package.yaml:4:15: error: each entry of python_path must be a string\n");
}

TEST_CASE("assume: values are JSON literals; a kernel's entries win over the package's") {
  Loaded l = Load(std::string(kTriton) +
                      "assume:\n"
                      "  pkg.mod.B: 2\n"
                      "  pkg.mod.C: '3'\n",
                  std::string(kPackage) + "assume: {pkg.mod.A: 1, pkg.mod.B: x}\n");
  REQUIRE(l.errors == "");
  using Assumed = std::vector<std::pair<std::string, std::string>>;
  CHECK(l.kernel().assume == Assumed{{"pkg.mod.A", "1"}, {"pkg.mod.B", "2"}, {"pkg.mod.C", "\"3\""}});
  CHECK(l.pkg->assume == Assumed{{"pkg.mod.A", "1"}, {"pkg.mod.B", "\"x\""}});

  // YAML scalars as Python reads the JSON: numbers in JSON's grammar (no
  // '+', no leading zeros, digits on both sides of the point) and of the
  // same kind (3 an int, 1. a float); quoted scalars are strings.
  const std::pair<const char*, const char*> literals[] = {
      {".5", "0.5"},         {"1.", "1.0"},          {"+3", "3"},           {"007", "7"},
      {"000", "0"},          {"-0", "-0"},           {"1e5", "1e5"},        {"-.5e-3", "-0.5e-3"},
      {"2.5E+3", "2.5E+3"},  {"'3'", "\"3\""},       {"true", "true"},      {"\"true\"", "\"true\""},
      {"True", "\"True\""},  {"null", "null"},       {"~", "null"},         {"", "null"},
      {"0x10", "\"0x10\""},  {".inf", "\".inf\""},   {"a \"b\" \\ c", "\"a \\\"b\\\" \\\\ c\""},
      {"\"a\\tb\"", "\"a\\u0009b\""},
  };
  for (const auto& [yaml, json] : literals) {
    INFO(yaml);
    Loaded one = Load(std::string(kTriton) + "assume:\n  pkg.X: " + yaml + "\n");
    REQUIRE(one.errors == "");
    CHECK(one.kernel().assume == Assumed{{"pkg.X", json}});
  }
}

TEST_CASE("assume: errors") {
  auto kernel = [](const std::string& assume) { return Errors(std::string(kTriton) + "assume: " + assume + "\n"); };
  CHECK(kernel("[pkg.X]") ==
        "k.yaml:13:9: error: assume must be a mapping of module-level Python names (pkg.module.NAME) to values\n");
  for (const char* key : {"NAME", "pkg..X", ".pkg", "pkg.", "pkg.X-1"}) {
    INFO(key);
    CHECK(kernel(std::string("{") + key + ": 1}") == "k.yaml:13:10: error: assume key '" + std::string(key) +
                                                         "' is not a qualified Python name (pkg.module.NAME)\n");
  }
  CHECK(kernel("{pkg.X: [1]}") ==
        "k.yaml:13:17: error: the value of assume 'pkg.X' must be true, false, a number, a string or null\n");
  CHECK(kernel("{pkg.X: {a: 1}}") ==
        "k.yaml:13:17: error: the value of assume 'pkg.X' must be true, false, a number, a string or null\n");
  CHECK(kernel("{[pkg]: 1}") == "k.yaml:13:10: error: an assume key must be a string\n");
  // A number no double holds is no string either.
  CHECK(kernel("{pkg.X: 1e999}") == "k.yaml:13:17: error: the value of assume 'pkg.X' must be a finite number\n");
  // The package file's assume: is read the same way.
  CHECK(Errors(kTriton, std::string(kPackage) + "assume: {X: 1}\n") ==
        "package.yaml:4:10: error: assume key 'X' is not a qualified Python name (pkg.module.NAME)\n");
}

TEST_CASE("the dispatcher groups specializations by their API values, whatever the constexprs' order") {
  // BD, computed, comes first and an exclusion ties it to num_warps: in
  // expansion order the API's specializations are (F=0, w1), (F=1, w1),
  // (F=0, w4), (F=1, w4), and a switch over them in that order repeated
  // `case 0:` (C that does not compile).
  Loaded l = Load(
      "kernel: k\nlanguage: triton\nsource: va.py\nentry: k\n"
      "constexprs:\n"
      "  - {name: BD, type: int, values: [16, 32], rule: \"next_pow2(n)\"}\n"
      "  - {name: F, type: bool, values: [false, true]}\n"
      "options:\n  num_warps: [1, 4]\n"
      "exclude:\n  - {BD: 16, num_warps: 4}\n  - {BD: 32, num_warps: 1}\n"
      "params:\n  - {name: x, type: f32*}\n  - {name: n, type: i32}\n"
      "launch:\n  grid: [1]\n");
  REQUIRE(l.errors == "");
  kpack::CodegenOptions options{"package.yaml", "demo.h"};
  std::string c = kpack::GenerateLauncherSource(*l.pkg, l.specs, options);
  const std::string dispatcher = c.substr(c.find("kpack_status demo_k(kpack_stream stream, int F, int num_warps"));
  CHECK(dispatcher.find("  switch ((int)(F != 0)) {\n"
                        "    case 0:\n"
                        "      switch (num_warps) {\n"
                        "        case 1:\n"
                        "          return demo_k_nof_w1(stream, x, n);\n"
                        "        case 4:\n"
                        "          return demo_k_nof_w4(stream, x, n);\n"
                        "        default:\n"
                        "          break;\n"
                        "      }\n"
                        "      break;\n"
                        "    case 1:\n"
                        "      switch (num_warps) {\n"
                        "        case 1:\n"
                        "          return demo_k_f_w1(stream, x, n);\n") == dispatcher.find('\n') + 1);
}

TEST_CASE("a rule that reads only constexprs is folded: no build the launcher could never run") {
  Loaded l = Load(WithConstexprs("  - {name: K, type: int, values: [100, 200]}\n"
                                 "  - {name: BK, type: int, values: [128, 256], rule: \"next_pow2(K)\"}\n"));
  REQUIRE(l.errors == "");
  std::vector<std::string> stems;
  for (const kpack::Specialization& s : l.specs) stems.push_back(s.Stem());
  // K=100 runs BK=128 only, K=200 BK=256 only (of 4 combinations).
  CHECK(stems == std::vector<std::string>{"va_k100.bk128", "va_k200.bk256"});
}

TEST_CASE("batch: is refused for a Triton kernel, which compiles one unit at a time") {
  CHECK(Errors(std::string(kTriton) + "batch: 4\n") ==
        "k.yaml:13:8: error: batch is for CUDA kernels: Triton compiles one kernel per unit, in a compiler process "
        "kept for the build\n");
}
