// Launch expressions: parsing, checking, folding, emission and formatting.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "codegen.h"
#include "expand.h"
#include "expr.h"
#include "expr_python_values.h"
#include "fs_util.h"
#include "manifest.h"

namespace {

kpack::Expr Parse(const std::string& text) {
  kpack::Diagnostics diag;
  auto e = kpack::ParseExpr(text, kpack::SourceLoc{"m.yaml", 3, 10}, diag);
  INFO(text);
  REQUIRE(diag.Text() == "");
  REQUIRE(e);
  return *e;
}

std::string ParseError(const std::string& text) {
  kpack::Diagnostics diag;
  CHECK_FALSE(kpack::ParseExpr(text, kpack::SourceLoc{"m.yaml", 3, 10}, diag));
  return diag.Text();
}

kpack::ExprBindings Bindings(const std::map<std::string, int64_t>& constants) {
  kpack::ExprBindings b;
  b.constant = [constants](const std::string& n) -> std::optional<int64_t> {
    auto it = constants.find(n);
    if (it == constants.end()) return std::nullopt;
    return it->second;
  };
  b.size_of = [](const std::string&) -> int64_t { return 2; };
  return b;
}

kpack::ExprBindings Block256() { return Bindings({{"BLOCK", 256}, {"CAUSAL", 1}}); }

std::optional<int64_t> Fold(const std::string& text) { return kpack::EvaluateExpr(Parse(text), Block256()); }

std::string Emit(const std::string& text) { return kpack::EmitExprC(Parse(text), Block256()); }

std::string Format(const std::string& text) { return kpack::FormatExpr(Parse(text)); }

// A kernel's names: BLOCK (int) and CAUSAL (bool) constexprs, T a dtype,
// n and m i64 params, flag a bool param, p and q pointers, alpha an f32.
kpack::NameKind Lookup(const std::string& name) {
  static const std::map<std::string, kpack::NameKind> kNames = {
      {"BLOCK", kpack::NameKind::kIntConstexpr},   {"CAUSAL", kpack::NameKind::kBoolConstexpr},
      {"T", kpack::NameKind::kDtypeConstexpr},     {"n", kpack::NameKind::kIntegerParam},
      {"m", kpack::NameKind::kIntegerParam},       {"flag", kpack::NameKind::kIntegerParam},
      {"p", kpack::NameKind::kPointerParam},       {"q", kpack::NameKind::kPointerParam},
      {"alpha", kpack::NameKind::kOtherParam}};
  auto it = kNames.find(name);
  return it == kNames.end() ? kpack::NameKind::kUnknown : it->second;
}

// The diagnostics of checking `text` ("" when it passes).
std::string CheckErrors(const std::string& text, bool allow_params = true) {
  kpack::Diagnostics diag;
  bool ok = kpack::CheckExpr(Parse(text), Lookup, allow_params, diag);
  CHECK(ok == diag.Text().empty());
  return diag.Text();
}

}  // namespace

TEST_CASE("precedence and folding") {
  CHECK(Fold("1 + 2 * 3") == 7);
  CHECK(Fold("(1 + 2) * 3") == 9);
  CHECK(Fold("10 - 4 - 3") == 3);
  CHECK(Fold("-BLOCK / 2") == -128);
  CHECK(Fold("cdiv(1000, BLOCK)") == 4);
  CHECK(Fold("cdiv(1024, BLOCK)") == 4);
  CHECK(Fold("min(3, 9) + max(3, 9)") == 12);
  CHECK(Fold("BLOCK * sizeof(T)") == 512);
  CHECK(Fold("7 % 4") == 3);
  CHECK_FALSE(Fold("n + 1"));
  CHECK_FALSE(Fold("1 / 0"));
  CHECK_FALSE(Fold("9223372036854775807 + 1"));
}

TEST_CASE("comparisons, logic and the conditional fold to C's values") {
  CHECK(Fold("1 + 2 * 3 == 7") == 1);
  CHECK(Fold("2 + 3 > 4") == 1);
  CHECK(Fold("-3 < -2") == 1);
  CHECK(Fold("4 <= 4") == 1);
  CHECK(Fold("4 >= 5") == 0);
  CHECK(Fold("3 > 3") == 0);
  CHECK(Fold("7 % 4 != 3") == 0);
  CHECK(Fold("1 < 2 && 3 > 4") == 0);
  CHECK(Fold("1 < 2 || 3 > 4") == 1);
  CHECK(Fold("5 && 7") == 1);  // logic gives 0 or 1
  CHECK(Fold("0 || -7") == 1);
  CHECK(Fold("1 || 0 && 0") == 1);  // && binds tighter than ||
  CHECK(Fold("(1 || 0) && 0") == 0);
  CHECK(Fold("!0") == 1);
  CHECK(Fold("!5") == 0);
  CHECK(Fold("!!5") == 1);
  CHECK(Fold("-!0") == -1);
  CHECK(Fold("!0 + 1") == 2);  // unary binds tighter than +
  CHECK(Fold("1 ? 2 : 3") == 2);
  CHECK(Fold("0 ? 2 : 3") == 3);
  CHECK(Fold("0 ? 1 : 0 ? 2 : 3") == 3);  // right-associative
  CHECK(Fold("1 ? 0 ? 4 : 5 : 6") == 5);
  CHECK(Fold("1 == 1 ? 10 : 20") == 10);
  CHECK(Fold("0 || 1 ? 10 : 20") == 10);  // ?: is the loosest
  CHECK(Fold("BLOCK >= 256 ? BLOCK / 2 : BLOCK") == 128);
  CHECK(Fold("CAUSAL && BLOCK == 256") == 1);
  CHECK(Fold("min(5, 3, 9, 4)") == 3);
  CHECK(Fold("max(5, 3, 9, 4)") == 9);
  CHECK(Fold("max(-5, -3)") == -3);
}

TEST_CASE("folding stops where C would and never folds run-time values") {
  CHECK(Fold("0 && 1 / 0") == 0);
  CHECK(Fold("1 || 1 / 0") == 1);
  CHECK(Fold("1 ? 5 : 1 / 0") == 5);
  CHECK(Fold("0 ? 1 / 0 : 6") == 6);
  CHECK(Fold("0 && n") == 0);
  CHECK(Fold("1 || n") == 1);
  CHECK(Fold("0 && device.sm") == 0);
  CHECK(Fold("BLOCK > 0 ? 1 : n") == 1);
  CHECK_FALSE(Fold("1 && 1 / 0"));
  CHECK_FALSE(Fold("0 || 1 / 0"));
  CHECK_FALSE(Fold("n && 0"));
  CHECK_FALSE(Fold("n ? 1 : 1"));
  CHECK_FALSE(Fold("device.num_sms"));
  CHECK_FALSE(Fold("p != NULL"));
  CHECK_FALSE(Fold("next_pow2(4611686018427387905)"));
  CHECK_FALSE(Fold("log2(0)"));
  CHECK_FALSE(Fold("floordiv(1, 0)"));
  CHECK_FALSE(Fold("-(-9223372036854775807 - 1)"));
}

TEST_CASE("floordiv, floormod, gcd, log2 and next_pow2 fold to Python's values") {
  for (const kpack_test::PythonCase& c : kpack_test::kPythonCases) {
    const std::string name = c.function;
    const std::string text = name == "log2" || name == "next_pow2" ? name + "(a)" : name + "(a, b)";
    INFO(text << " with a = " << c.a << ", b = " << c.b);
    CHECK(kpack::EvaluateExpr(Parse(text), Bindings({{"a", c.a}, {"b", c.b}})) == c.expected);
  }
  // A few by hand, as documented.
  CHECK(Fold("next_pow2(0)") == 0);
  CHECK(Fold("next_pow2(-5)") == 0);
  CHECK(Fold("next_pow2(1)") == 1);
  CHECK(Fold("next_pow2(1000)") == 1024);
  CHECK(Fold("gcd(0, 0)") == 0);
  CHECK(Fold("gcd(-12, 18)") == 6);
  CHECK(Fold("log2(1)") == 0);
  CHECK(Fold("log2(1023)") == 9);
  CHECK(Fold("floordiv(-7, 2)") == -4);
  CHECK(Fold("floormod(-7, 2)") == 1);
}

TEST_CASE("emission folds constants and checks the rest") {
  CHECK(Emit("cdiv(n, BLOCK)") == "kpack_cdiv_((int64_t)n, 256, &kpack_bad)");
  CHECK(Emit("BLOCK * 4") == "1024");
  CHECK(Emit("-3") == "(-3)");
  CHECK(Emit("min(rows, 65535)") == "kpack_min_((int64_t)rows, 65535)");
  CHECK(Emit("rows * cols + 1") ==
        "kpack_add_(kpack_mul_((int64_t)rows, (int64_t)cols, &kpack_bad), 1, &kpack_bad)");
  CHECK(Emit("-9223372036854775807 - 1") == "INT64_MIN");
}

TEST_CASE("emission of comparisons, logic, NULL, device attributes and the functions") {
  CHECK(Emit("n > 0 && m / n > 2") ==
        "(int64_t)((int64_t)((int64_t)n > 0) && (int64_t)(kpack_div_((int64_t)m, (int64_t)n, &kpack_bad) > 2))");
  CHECK(Emit("n == 1 || m <= 2") == "(int64_t)((int64_t)((int64_t)n == 1) || (int64_t)((int64_t)m <= 2))");
  CHECK(Emit("n != m") == "(int64_t)((int64_t)n != (int64_t)m)");
  CHECK(Emit("n >= -1") == "(int64_t)((int64_t)n >= (-1))");
  CHECK(Emit("!n") == "(int64_t)(!(int64_t)n)");
  CHECK(Emit("n ? m : 2") == "((int64_t)n ? (int64_t)m : 2)");
  // A constexpr condition leaves its branch only.
  CHECK(Emit("BLOCK > 128 ? n : m") == "(int64_t)n");
  CHECK(Emit("CAUSAL ? n : 1 / 0") == "(int64_t)n");
  // What folding skips is still emitted where C short-circuits around it.
  CHECK(Emit("0 && 1 / 0") == "0");
  CHECK(Emit("n == 1 || 1 / 0") == "(int64_t)((int64_t)((int64_t)n == 1) || kpack_div_(1, 0, &kpack_bad))");
  CHECK(Emit("p != NULL") == "(int64_t)(p != NULL)");
  CHECK(Emit("NULL == p") == "(int64_t)(p == NULL)");
  CHECK(Emit("p == NULL ? 1 : n") == "((int64_t)(p == NULL) ? 1 : (int64_t)n)");
  CHECK(Emit("min(device.num_sms * 4, cdiv(n, BLOCK))") ==
        "kpack_min_(kpack_mul_(kpack_device_num_sms, 4, &kpack_bad), kpack_cdiv_((int64_t)n, 256, &kpack_bad))");
  CHECK(Emit("device.sm >= 90") == "(int64_t)(kpack_device_sm >= 90)");
  CHECK(Emit("device.max_shared_mem - device.l2_bytes") ==
        "kpack_sub_(kpack_device_max_shared_mem, kpack_device_l2_bytes, &kpack_bad)");
  CHECK(Emit("max(n, 1, m)") == "kpack_max_(kpack_max_((int64_t)n, 1), (int64_t)m)");
  CHECK(Emit("min(BLOCK, 4, 3)") == "3");
  CHECK(Emit("next_pow2(n)") == "kpack_next_pow2_((int64_t)n, &kpack_bad)");
  CHECK(Emit("log2(n)") == "kpack_log2_((int64_t)n, &kpack_bad)");
  CHECK(Emit("gcd(n, 6)") == "kpack_gcd_((int64_t)n, 6, &kpack_bad)");
  CHECK(Emit("floordiv(n, BLOCK)") == "kpack_floordiv_((int64_t)n, 256, &kpack_bad)");
  CHECK(Emit("floormod(n, -BLOCK)") == "kpack_floormod_((int64_t)n, (-256), &kpack_bad)");
  CHECK(Emit("next_pow2(BLOCK + 1)") == "512");
}

TEST_CASE("formatting for documentation") {
  CHECK(Format("cdiv( n,BLOCK )") == "cdiv(n, BLOCK)");
  CHECK(Format("(a + b) * c") == "(a + b) * c");
  CHECK(Format("a - (b - c)") == "a - (b - c)");
  CHECK(Format("a * b + c") == "a * b + c");
  CHECK(Format("-(a + b)") == "-(a + b)");
  CHECK(Format("a<b&&c>=d") == "a < b && c >= d");
  CHECK(Format("(a < b) == c") == "(a < b) == c");
  CHECK(Format("a == (b < c)") == "a == (b < c)");
  CHECK(Format("a + b == c * d") == "a + b == c * d");
  CHECK(Format("a || b && c") == "a || b && c");
  CHECK(Format("(a || b) && c") == "(a || b) && c");
  CHECK(Format("((a && b)) || c") == "a && b || c");
  CHECK(Format("a == b || c != d") == "a == b || c != d");
  CHECK(Format("(a == b) + 1") == "(a == b) + 1");
  CHECK(Format("!(a && b)") == "!(a && b)");
  CHECK(Format("!a && b") == "!a && b");
  CHECK(Format("!-a") == "!-a");
  CHECK(Format("a?b:c") == "a ? b : c");
  CHECK(Format("a ? b : c ? d : e") == "a ? b : c ? d : e");
  CHECK(Format("(a ? b : c) ? d : e") == "(a ? b : c) ? d : e");
  CHECK(Format("a ? (b ? c : d) : e") == "a ? b ? c : d : e");
  CHECK(Format("(a ? b : c) + 1") == "(a ? b : c) + 1");
  CHECK(Format("1 + (a ? b : c)") == "1 + (a ? b : c)");
  CHECK(Format("(a || b) ? c : d") == "a || b ? c : d");
  CHECK(Format("p!=NULL") == "p != NULL");
  CHECK(Format("NULL == p") == "NULL == p");
  CHECK(Format("device.num_sms*2") == "device.num_sms * 2");
  CHECK(Format("min(a,b,c)") == "min(a, b, c)");
  CHECK(Format("next_pow2( n )") == "next_pow2(n)");
  CHECK(Format("floordiv(n, 2) + floormod(n, 2) + gcd(a, b) + log2(x)") ==
        "floordiv(n, 2) + floormod(n, 2) + gcd(a, b) + log2(x)");
  // Formatted text parses back to the same tree.
  for (const char* text : {"(a < b) == c", "a ? (b ? c : d) : e", "(a ? b : c) ? d : e", "!(a && b) || -(c - d)",
                           "a - (b - c) * -d", "(a || b) && (c || d)", "(p != NULL) + 1"}) {
    INFO(text);
    CHECK(Format(Format(text)) == Format(text));
  }
}

TEST_CASE("pointer parameters are only compared with NULL") {
  CHECK(CheckErrors("p != NULL") == "");
  CHECK(CheckErrors("NULL == p") == "");
  CHECK(CheckErrors("p != NULL && n > 0 ? 2 : 1") == "");
  CHECK(CheckErrors("p + 1") ==
        "m.yaml:3:10: error: 'p' is a pointer parameter; it can only be compared with NULL: p == NULL or p != NULL\n");
  CHECK(CheckErrors("NULL") ==
        "m.yaml:3:10: error: NULL can only be compared with a pointer parameter: p == NULL or p != NULL\n");
  CHECK(CheckErrors("n == NULL") ==
        "m.yaml:3:15: error: NULL can only be compared with a pointer parameter: p == NULL or p != NULL\n");
  CHECK(CheckErrors("NULL != NULL") ==
        "m.yaml:3:10: error: NULL can only be compared with a pointer parameter: p == NULL or p != NULL\n"
        "m.yaml:3:18: error: NULL can only be compared with a pointer parameter: p == NULL or p != NULL\n");
  CHECK(CheckErrors("p == q") ==
        "m.yaml:3:10: error: 'p' is a pointer parameter; it can only be compared with NULL: p == NULL or p != NULL\n"
        "m.yaml:3:15: error: 'q' is a pointer parameter; it can only be compared with NULL: p == NULL or p != NULL\n");
  CHECK(CheckErrors("p < NULL") ==
        "m.yaml:3:10: error: 'p' is a pointer parameter; it can only be compared with NULL: p == NULL or p != NULL\n"
        "m.yaml:3:14: error: NULL can only be compared with a pointer parameter: p == NULL or p != NULL\n");
  CHECK(CheckErrors("(p) == NULL") == "");
  CHECK(CheckErrors("alpha == NULL") ==
        "m.yaml:3:10: error: 'alpha' is not an integer parameter\n"
        "m.yaml:3:19: error: NULL can only be compared with a pointer parameter: p == NULL or p != NULL\n");
  CHECK(CheckErrors("p != NULL", false) ==
        "m.yaml:3:10: error: 'p' is a runtime parameter; only constexprs are allowed here\n");
}

TEST_CASE("checking names, device attributes and calls") {
  CHECK(CheckErrors("flag ? n : m") == "");  // a bool parameter is 0 or 1
  CHECK(CheckErrors("CAUSAL && BLOCK > 64", false) == "");
  CHECK(CheckErrors("alpha > 0") == "m.yaml:3:10: error: 'alpha' is not an integer parameter\n");
  CHECK(CheckErrors("min(device.num_sms, device.sm, device.max_shared_mem, device.l2_bytes)") == "");
  CHECK(CheckErrors("BLOCK * device.num_sms", false) ==
        "m.yaml:3:18: error: 'device.num_sms' is a property of the launching device; only constexprs are "
        "allowed here\n");
  CHECK(CheckErrors("n", false) ==
        "m.yaml:3:10: error: 'n' is a runtime parameter; only constexprs are allowed here\n");
  CHECK(CheckErrors("next_pow2(n) + log2(n) + gcd(n, m) + floordiv(n, m) + floormod(n, m)") == "");
  CHECK(CheckErrors("min(n)") == "m.yaml:3:10: error: min() takes 2 or more arguments, got 1\n");
  CHECK(CheckErrors("max(n)") == "m.yaml:3:10: error: max() takes 2 or more arguments, got 1\n");
  CHECK(CheckErrors("log2(n, 2)") == "m.yaml:3:10: error: log2() takes 1 argument, got 2\n");
  CHECK(CheckErrors("next_pow2(n, 2)") == "m.yaml:3:10: error: next_pow2() takes 1 argument, got 2\n");
  CHECK(CheckErrors("gcd(n)") == "m.yaml:3:10: error: gcd() takes 2 arguments, got 1\n");
  CHECK(CheckErrors("floordiv(n, m, 1)") == "m.yaml:3:10: error: floordiv() takes 2 arguments, got 3\n");
  CHECK(CheckErrors("1 + pow(n, 2)") ==
        "m.yaml:3:14: error: unknown function 'pow' (expected min, max, cdiv, floordiv, floormod, gcd, log2, "
        "next_pow2 or sizeof)\n");
  CHECK(CheckErrors("sizeof(n)") == "m.yaml:3:10: error: sizeof() takes the name of a dtype constexpr\n");
  CHECK(CheckErrors("T + 1") == "m.yaml:3:10: error: 'T' is a dtype; use sizeof(T)\n");
  CHECK(CheckErrors("n ? x : 1") == "m.yaml:3:14: error: unknown name 'x' in expression\n");
}

TEST_CASE("the device attributes and functions an expression uses") {
  CHECK(kpack::DeviceAttributeNames() == std::vector<std::string>{"num_sms", "sm", "max_shared_mem", "l2_bytes"});
  kpack::Expr e = Parse("min(device.sm, 0 && device.num_sms, cdiv(n, device.sm), next_pow2(sizeof(T)))");
  CHECK(kpack::DeviceAttributesUsed(e) == std::set<std::string>{"num_sms", "sm"});
  CHECK(kpack::FunctionsUsed(e) == std::set<std::string>{"cdiv", "min", "next_pow2", "sizeof"});
  CHECK(kpack::DeviceAttributesUsed(Parse("n + 1")).empty());
}

TEST_CASE("syntax errors point at the column") {
  CHECK(ParseError("1 +") == "m.yaml:3:13: error: expected a number, a name or '(' in expression\n");
  CHECK(ParseError("(1") == "m.yaml:3:12: error: expected ')' in expression\n");
  CHECK(ParseError("1 2") == "m.yaml:3:12: error: unexpected '2' in expression\n");
  CHECK(ParseError("12abc") == "m.yaml:3:12: error: unexpected 'a' after number\n");
  CHECK(ParseError("99999999999999999999") == "m.yaml:3:28: error: integer literal does not fit in 64 bits\n");
  CHECK(ParseError(std::string(100, '(') + "1" + std::string(100, ')')) ==
        "m.yaml:3:75: error: expression nested too deeply\n");
}

TEST_CASE("syntax errors of the new operators, NULL and device attributes") {
  CHECK(ParseError("a < b < c") ==
        "m.yaml:3:16: error: comparisons do not chain; combine them with && or add parentheses\n");
  CHECK(ParseError("a < b == c") ==
        "m.yaml:3:16: error: comparisons do not chain; combine them with && or add parentheses\n");
  CHECK(ParseError("a = b") == "m.yaml:3:12: error: '=' is not an operator; use '==' to compare\n");
  CHECK(ParseError("a == b = c") == "m.yaml:3:17: error: '=' is not an operator; use '==' to compare\n");
  CHECK(ParseError("a ? b") == "m.yaml:3:15: error: expected ':' in conditional expression\n");
  CHECK(ParseError("a ? b : ") == "m.yaml:3:18: error: expected a number, a name or '(' in expression\n");
  CHECK(ParseError("a & b") == "m.yaml:3:12: error: unexpected '&' in expression\n");
  CHECK(ParseError("a || ") == "m.yaml:3:15: error: expected a number, a name or '(' in expression\n");
  CHECK(ParseError("!") == "m.yaml:3:11: error: expected a number, a name or '(' in expression\n");
  CHECK(ParseError("a != ") == "m.yaml:3:15: error: expected a number, a name or '(' in expression\n");
  CHECK(ParseError("a ! b") == "m.yaml:3:12: error: unexpected '!' in expression\n");
  CHECK(ParseError("NULL(1)") == "m.yaml:3:14: error: unexpected '(' in expression\n");
  CHECK(ParseError("1 + device.foo") ==
        "m.yaml:3:21: error: unknown device attribute 'foo' (expected num_sms, sm, max_shared_mem or l2_bytes)\n");
  CHECK(ParseError("device.") ==
        "m.yaml:3:17: error: expected a device attribute after 'device.' (num_sms, sm, max_shared_mem or "
        "l2_bytes)\n");
  std::string chain;
  for (int i = 0; i < 100; ++i) chain += "1 ? 1 : ";
  CHECK(ParseError(chain + "1") == "m.yaml:3:526: error: expression nested too deeply\n");
}

// The device package (tests/compiler/manifests/device) uses device
// attributes and every function in its launch expressions; its generated
// launchers run against the fake driver in tests/runtime/device_launch_test.cc.
// After an intended change, rerun with KPACK_UPDATE_GOLDEN=1 and review the
// diff of tests/compiler/golden/dk*.
TEST_CASE("launchers that use device attributes and functions match the golden files") {
  const char* data = std::getenv("KPACK_TEST_DATA");
  REQUIRE(data != nullptr);
  std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(data);
  kpack::Diagnostics diag;
  auto pkg = kpack::LoadPackage("manifests/device/kpack.yaml", {}, diag);
  REQUIRE(diag.Text() == "");
  auto specs = kpack::Expand(*pkg, diag);
  REQUIRE(diag.Text() == "");
  std::filesystem::current_path(previous);

  kpack::CodegenOptions options{"manifests/device/kpack.yaml", "dk.h"};
  const std::pair<std::string, std::string> outputs[] = {
      {"dk.h", kpack::GenerateHeader(*pkg, specs, options)},
      {"dk_launch.c", kpack::GenerateLauncherSource(*pkg, specs, options)}};
  for (const auto& [name, actual] : outputs) {
    std::string path = std::string(data) + "/golden/" + name;
    if (std::getenv("KPACK_UPDATE_GOLDEN")) {
      REQUIRE(kpack::WriteFileAtomic(path, actual) == "");
      continue;
    }
    std::optional<std::string> expected = kpack::ReadFile(path);
    REQUIRE(expected);
    INFO("golden file " << path << " differs; rerun with KPACK_UPDATE_GOLDEN=1 if the change is intended");
    CHECK(actual == *expected);
  }
}

TEST_CASE("given bindings, only what the emitted code still reads and calls is used") {
  kpack::Expr e =
      Parse("BLOCK == 128 ? next_pow2(device.sm) : min(gcd(n, device.num_sms), 0 && log2(device.l2_bytes))");
  CHECK(kpack::DeviceAttributesUsed(e, Bindings({{"BLOCK", 128}})) == std::set<std::string>{"sm"});
  CHECK(kpack::FunctionsUsed(e, Bindings({{"BLOCK", 128}})) == std::set<std::string>{"next_pow2"});
  CHECK(kpack::DeviceAttributesUsed(e, Bindings({{"BLOCK", 256}})) == std::set<std::string>{"num_sms"});
  CHECK(kpack::FunctionsUsed(e, Bindings({{"BLOCK", 256}})) == std::set<std::string>{"gcd", "min"});
  CHECK(kpack::DeviceAttributesUsed(e) == std::set<std::string>{"l2_bytes", "num_sms", "sm"});
  CHECK(kpack::FunctionsUsed(Parse("BLOCK * next_pow2(4)"), Block256()).empty());
}
