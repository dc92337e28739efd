// expr_bounds.h - interval bounds of launch expressions (expr.h).
//
// A manifest's grid, block and shared memory are expressions over
// constexprs (known for each specialization), runtime parameters (known only
// at the launch) and device attributes.  Bounding them over every value the
// runtime names may take lets the build prove, for instance, that a
// kernel's block never exceeds what its cubin was compiled for, instead of
// leaving the failure to the launch.
//
// The bounds are sound for the generated C (EmitExprC and the launcher's
// kpack_*_ helpers), whose semantics expr.cc folds: every value the launcher
// can compute without setting kpack_bad lies inside.  Division by zero,
// overflow and log2 of x <= 0 make the launch fail, so the values of those
// cases are not bounded (which is what makes `n * 2` bounded at all).  They
// are not always tight: `n - n` is [INT64_MIN, INT64_MAX] for an i64 n.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "expr.h"
#include "types.h"

namespace kpack {

// The integers lo, lo + 1, ..., hi (inclusive; lo <= hi).
struct Interval {
  int64_t lo, hi;
  friend bool operator==(const Interval&, const Interval&) = default;
};

// The range each runtime name may take, by its C type (ScalarRange), or
// nullopt for a name it does not know.
using NameRange = std::function<std::optional<Interval>(const std::string&)>;

// The values a runtime parameter of scalar type `s` reaches the expression
// as, `(int64_t)name` in the generated C: i32 [INT32_MIN, INT32_MAX], u32
// [0, UINT32_MAX], bool [0, 1], and so on.  A u64 converts to int64_t modulo
// 2^64, so values above INT64_MAX arrive negative: its range is all of
// int64_t.  nullopt for the floating-point types, which expressions cannot
// name.
std::optional<Interval> ScalarRange(Scalar s);

// The range assumed for `device.NAME` (DeviceAttributeNames(), without
// "device."): generous bounds on every device the launcher may meet, not
// facts of one.  num_sms [1, 1024], sm (major * 10 + minor) [50, 200],
// max_shared_mem (bytes per block) [0, 2^20], l2_bytes [0, 2^34].  nullopt
// for an unknown attribute.
std::optional<Interval> DeviceAttributeRange(const std::string& name);

// Bounds of `e` when the constexprs are bound by `b` (b.constant gives a
// constexpr's value, nullopt for a runtime name; b.size_of gives sizeof),
// every other name lies in `ranges`, and device attributes lie in
// DeviceAttributeRange.  Sound: every value the generated C computes
// without failing lies inside.  Exact where the launcher's value is known:
// a subexpression EvaluateExpr folds gives lo == hi, and only the branch a
// constant condition selects, or the operand `&&` and `||` need, is
// bounded, as only it is evaluated.
//
// nullopt when it cannot bound: a name neither `b` nor `ranges` knows (or a
// NULL outside a comparison) in a part that is evaluated, or an expression
// that fails wherever it is evaluated (`1 / 0`, `log2(-n)` for n >= 0),
// which has no value to bound.
std::optional<Interval> BoundExpr(const Expr& e, const ExprBindings& b, const NameRange& ranges);

// A witness for messages: values of the runtime names and device attributes
// in `e`, in their order of first appearance ("d = 65536, n = 1",
// "device.num_sms = 1024"), at which the launcher's value of `e` is
// BoundExpr(e, b, ranges)->hi, so that "block may reach 2048" can say when.
// Found cheaply, by evaluating `e` at the ends of each name's range and at
// 0, 1 and -1 (every combination, while they are at most 4096), and
// checked by evaluation, so a witness is never wrong.  Empty when none of
// those reaches hi, when `e` folds to a constant (EvaluateExpr: `0 && n`
// depends on no runtime name), or when BoundExpr gives nullopt.
std::string BoundWitness(const Expr& e, const ExprBindings& b, const NameRange& ranges);

}  // namespace kpack
