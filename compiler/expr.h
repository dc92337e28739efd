// expr.h - the integer expressions of a manifest's launch geometry.
//
// Grammar (64-bit signed arithmetic):
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/' | '%') unary)*
//   unary   := '-' unary | primary
//   primary := INTEGER | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'
// Functions: min(a, b), max(a, b), cdiv(a, b), sizeof(T) of a dtype
// constexpr.  Names are int/bool constexprs or integer runtime parameters.
//
// Expressions are parsed by kpack, never pasted into C: the generated code
// is rebuilt from the tree, so a manifest cannot inject C into the header.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "diagnostics.h"

namespace kpack {

struct Expr {
  enum class Kind { kInteger, kName, kNegate, kBinary, kCall };
  Kind kind = Kind::kInteger;
  int64_t value = 0;          // kInteger
  std::string name;           // kName, kCall (function name)
  char op = 0;                // kBinary: + - * / %
  std::vector<Expr> args;     // kNegate: 1, kBinary: 2, kCall: n
  SourceLoc loc;              // where the node starts
};

// Parses `text`, whose first character is at `start`.  Reports syntax errors
// to `diag` (at the offending column) and returns nullopt.
std::optional<Expr> ParseExpr(const std::string& text, const SourceLoc& start,
                              Diagnostics& diag);

// What a name in an expression refers to.
enum class NameKind { kUnknown, kIntConstexpr, kBoolConstexpr, kDtypeConstexpr,
                      kIntegerParam, kOtherParam };

// Checks every name and call: known functions with the right arity, names
// that are int/bool constexprs or integer runtime parameters (the latter
// only when `allow_params`), sizeof of a dtype constexpr.  Reports each
// problem to `diag`; returns false if any.
bool CheckExpr(const Expr& e, const std::function<NameKind(const std::string&)>& lookup,
               bool allow_params, Diagnostics& diag);

// Binds names for code generation or evaluation of one specialization.
struct ExprBindings {
  // Constexpr value of an int/bool name, nullopt for runtime names.
  std::function<std::optional<int64_t>(const std::string&)> constant;
  // sizeof of a dtype constexpr.
  std::function<int64_t(const std::string&)> size_of;
};

// Folds the expression with `b`: the value when every name is a constant,
// nullopt otherwise or when it divides by zero or overflows.
std::optional<int64_t> EvaluateExpr(const Expr& e, const ExprBindings& b);

// Emits a C99 expression of type int64_t.  Constants are folded; runtime
// names are emitted as `(int64_t)name`; division and cdiv go through the
// helpers kpack_div_/kpack_mod_/kpack_cdiv_ (defined by the generated
// launcher source), which set `*bad` on division by zero.
std::string EmitExprC(const Expr& e, const ExprBindings& b);

// The expression as a person would write it, fully parenthesized only
// where needed: "cdiv(n, BLOCK)", "BLOCK * 4".  For documentation.
std::string FormatExpr(const Expr& e);

}  // namespace kpack
