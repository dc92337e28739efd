// expr.h - the integer expressions of a manifest's launch geometry.
//
// Grammar (64-bit signed arithmetic; lowest precedence first):
//   expr    := or ('?' expr ':' expr)?              right-associative
//   or      := and ('||' and)*
//   and     := compare ('&&' compare)*
//   compare := sum (('==' | '!=' | '<' | '<=' | '>' | '>=') sum)?
//   sum     := term (('+' | '-') term)*
//   term    := unary (('*' | '/' | '%') unary)*
//   unary   := ('-' | '!') unary | primary
//   primary := INTEGER | 'NULL' | 'device' '.' ATTRIBUTE | NAME
//            | NAME '(' expr (',' expr)* ')' | '(' expr ')'
// The operators are C's, with C's precedence, except that the comparisons
// share one level and do not chain: `a < b < c` and `a < b == c` are errors
// (C and Python read them differently, and manifests translate Python).
// Comparisons and logic give 0 or 1; `&&`, `||` and `?:` evaluate only the
// operands they need, in folding and in the generated C alike.
//
// Functions: min(a, b, ...), max(a, b, ...), cdiv(a, b), floordiv(a, b) and
// floormod(a, b) (Python's // and %), gcd(a, b) (Python's math.gcd),
// log2(x) (floor, x >= 1), next_pow2(x) (triton.next_power_of_2), and
// sizeof(T) of a dtype constexpr.  Names are int/bool constexprs, integer
// or bool runtime parameters, and pointer parameters in `p == NULL` and
// `p != NULL` only.  `device.ATTRIBUTE` is a property of the launching
// device (DeviceAttributeNames()), read at run time.
//
// Expressions are parsed by kpack, never pasted into C: the generated code
// is rebuilt from the tree, so a manifest cannot inject C into the header.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "diagnostics.h"

namespace kpack {

struct Expr {
  enum class Kind {
    kInteger,      // value
    kName,         // name
    kNull,         // NULL, an operand of == or != beside a pointer param
    kDevice,       // device.<name>
    kNegate,       // -args[0]
    kNot,          // !args[0]
    kBinary,       // args[0] op args[1]
    kConditional,  // args[0] ? args[1] : args[2]
    kCall,         // name(args...)
  };
  Kind kind = Kind::kInteger;
  int64_t value = 0;          // kInteger
  std::string name;           // kName, kDevice (attribute), kCall (function)
  std::string op;             // kBinary: + - * / % == != < <= > >= && ||
  std::vector<Expr> args;
  SourceLoc loc;              // where the node starts (kBinary: its operator)
};

// Parses `text`, whose first character is at `start`.  Reports syntax errors
// (and unknown device attributes) to `diag` at the offending column and
// returns nullopt.
std::optional<Expr> ParseExpr(const std::string& text, const SourceLoc& start,
                              Diagnostics& diag);

// What a name in an expression refers to.  Bool params are integer params
// (0 or 1, as types.h's is_integer says); kOtherParam is every other
// non-pointer param (floating point).
enum class NameKind { kUnknown, kIntConstexpr, kBoolConstexpr, kDtypeConstexpr,
                      kIntegerParam, kPointerParam, kOtherParam };

// Checks every name and call: known functions with the right arity, names
// that are int/bool constexprs or integer runtime parameters, pointer
// parameters compared with NULL, sizeof of a dtype constexpr.  Runtime
// parameters and device attributes are allowed only when `allow_params`
// (not in launch_bounds, which is compiled in).  Reports each problem to
// `diag`; returns false if any.
bool CheckExpr(const Expr& e, const std::function<NameKind(const std::string&)>& lookup,
               bool allow_params, Diagnostics& diag);

// The attributes `device.NAME` may name, in documentation order:
// num_sms, sm, max_shared_mem, l2_bytes.
const std::vector<std::string>& DeviceAttributeNames();

// Binds names for code generation or evaluation of one specialization.
struct ExprBindings {
  // Constexpr value of an int/bool name, nullopt for runtime names.
  std::function<std::optional<int64_t>(const std::string&)> constant;
  // sizeof of a dtype constexpr.
  std::function<int64_t(const std::string&)> size_of;
};

// The device attributes (without "device.") that `e` uses, and the
// functions it calls: anywhere in `e`, or, given bindings, only those that
// EmitExprC(e, b) still reads or calls once it folded what it could
// (`BLOCK == 128 ? 0 : device.num_sms` reads nothing where BLOCK is 128),
// which is what a launcher must fetch and define.
std::set<std::string> DeviceAttributesUsed(const Expr& e);
std::set<std::string> DeviceAttributesUsed(const Expr& e, const ExprBindings& b);
std::set<std::string> FunctionsUsed(const Expr& e);
std::set<std::string> FunctionsUsed(const Expr& e, const ExprBindings& b);

// Folds the expression with `b`: the value when every operand it needs is a
// constant (`0 && n` is 0), nullopt otherwise or when it divides by zero,
// overflows or takes log2 of a non-positive number.  Runtime names, NULL
// comparisons and device attributes are never constant.
std::optional<int64_t> EvaluateExpr(const Expr& e, const ExprBindings& b);

// Emits a C99 expression of type int64_t.  Constants are folded; runtime
// names are emitted as `(int64_t)name`, `p != NULL` as `(int64_t)(p !=
// NULL)`, `device.X` as the local variable `kpack_device_X` (declared and
// read by the launcher before the geometry: DeviceAttributesUsed);
// `&&`, `||` and `?:` stay C's, so they short-circuit.  Arithmetic goes
// through the helpers kpack_add_ ... kpack_cdiv_, kpack_floordiv_,
// kpack_floormod_, kpack_gcd_, kpack_log2_, kpack_next_pow2_ (defined by the
// generated launcher source), which set `kpack_bad` on division by zero,
// overflow or log2 of x <= 0.
std::string EmitExprC(const Expr& e, const ExprBindings& b);

// The expression as a person would write it, with parentheses only where
// needed: "cdiv(n, BLOCK)", "BLOCK * 4", "p != NULL && n > 0 ? 2 : 1".  For
// documentation and generated comments.
std::string FormatExpr(const Expr& e);

}  // namespace kpack
