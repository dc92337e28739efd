// Launch expressions: parsing, folding, emission and formatting.
#include <catch2/catch.hpp>

#include "expr.h"

namespace {

kpack::Expr Parse(const std::string& text) {
  kpack::Diagnostics diag;
  auto e = kpack::ParseExpr(text, kpack::SourceLoc{"m.yaml", 3, 10}, diag);
  REQUIRE(diag.Text() == "");
  REQUIRE(e);
  return *e;
}

std::string ParseError(const std::string& text) {
  kpack::Diagnostics diag;
  CHECK_FALSE(kpack::ParseExpr(text, kpack::SourceLoc{"m.yaml", 3, 10}, diag));
  return diag.Text();
}

kpack::ExprBindings Block256() {
  kpack::ExprBindings b;
  b.constant = [](const std::string& n) -> std::optional<int64_t> {
    if (n == "BLOCK") return 256;
    return std::nullopt;
  };
  b.size_of = [](const std::string&) -> int64_t { return 2; };
  return b;
}

}  // namespace

TEST_CASE("precedence and folding") {
  kpack::ExprBindings b = Block256();
  CHECK(kpack::EvaluateExpr(Parse("1 + 2 * 3"), b) == 7);
  CHECK(kpack::EvaluateExpr(Parse("(1 + 2) * 3"), b) == 9);
  CHECK(kpack::EvaluateExpr(Parse("10 - 4 - 3"), b) == 3);
  CHECK(kpack::EvaluateExpr(Parse("-BLOCK / 2"), b) == -128);
  CHECK(kpack::EvaluateExpr(Parse("cdiv(1000, BLOCK)"), b) == 4);
  CHECK(kpack::EvaluateExpr(Parse("cdiv(1024, BLOCK)"), b) == 4);
  CHECK(kpack::EvaluateExpr(Parse("min(3, 9) + max(3, 9)"), b) == 12);
  CHECK(kpack::EvaluateExpr(Parse("BLOCK * sizeof(T)"), b) == 512);
  CHECK(kpack::EvaluateExpr(Parse("7 % 4"), b) == 3);
  CHECK_FALSE(kpack::EvaluateExpr(Parse("n + 1"), b));
  CHECK_FALSE(kpack::EvaluateExpr(Parse("1 / 0"), b));
  CHECK_FALSE(kpack::EvaluateExpr(Parse("9223372036854775807 + 1"), b));
}

TEST_CASE("emission folds constants and checks the rest") {
  kpack::ExprBindings b = Block256();
  CHECK(kpack::EmitExprC(Parse("cdiv(n, BLOCK)"), b) == "kpack_cdiv_((int64_t)n, 256, &kpack_bad)");
  CHECK(kpack::EmitExprC(Parse("BLOCK * 4"), b) == "1024");
  CHECK(kpack::EmitExprC(Parse("-3"), b) == "(-3)");
  CHECK(kpack::EmitExprC(Parse("min(rows, 65535)"), b) == "kpack_min_((int64_t)rows, 65535)");
  CHECK(kpack::EmitExprC(Parse("rows * cols + 1"), b) ==
        "kpack_add_(kpack_mul_((int64_t)rows, (int64_t)cols, &kpack_bad), 1, &kpack_bad)");
}

TEST_CASE("formatting for documentation") {
  CHECK(kpack::FormatExpr(Parse("cdiv( n,BLOCK )")) == "cdiv(n, BLOCK)");
  CHECK(kpack::FormatExpr(Parse("(a + b) * c")) == "(a + b) * c");
  CHECK(kpack::FormatExpr(Parse("a - (b - c)")) == "a - (b - c)");
  CHECK(kpack::FormatExpr(Parse("a * b + c")) == "a * b + c");
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
