#include "expr_bounds.h"

#include <algorithm>
#include <limits>
#include <map>
#include <vector>

namespace kpack {
namespace {

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Every exact result of one operation on int64_t operands fits in 128 bits
// (the largest, a product, below 2^126), so bounds are computed exactly
// there and only then clamped to int64_t: whatever lies outside, the
// launcher's checked helpers report as overflow instead of computing.
using Wide = __int128;

// A set of values: an interval, or none at all where every evaluation
// fails (`1 / 0`).  Empty is a bound in its own right: `c ? 1 / 0 : 5` is
// [5, 5], since the launcher never computes a value through the 1 / 0.
struct Range {
  bool empty = false;
  int64_t lo = 0, hi = 0;
};

// nullopt: cannot bound (a name nobody knows).
using Result = std::optional<Range>;

Range Empty() { return Range{true, 0, 0}; }
Range Point(int64_t v) { return Range{false, v, v}; }

// [lo, hi] of exact values, less those that overflow int64_t: empty when
// all of them do.
Range Make(Wide lo, Wide hi) {
  if (lo > hi || hi < kInt64Min || lo > kInt64Max) return Empty();
  return Range{false, static_cast<int64_t>(std::max<Wide>(lo, kInt64Min)),
               static_cast<int64_t>(std::min<Wide>(hi, kInt64Max))};
}

bool IsPoint(const Range& r) { return !r.empty && r.lo == r.hi; }
bool HasZero(const Range& r) { return !r.empty && r.lo <= 0 && r.hi >= 0; }
bool IsZero(const Range& r) { return IsPoint(r) && r.lo == 0; }
// Some value of r is nonzero (C's true).
bool HasNonzero(const Range& r) { return !r.empty && !IsZero(r); }

Range Union(const Range& a, const Range& b) {
  if (a.empty) return b;
  if (b.empty) return a;
  return Range{false, std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

// C's truth value of r: (int64_t)(r != 0).
Range Truth(const Range& r) {
  if (r.empty) return r;
  if (!HasZero(r)) return Point(1);
  if (IsZero(r)) return Point(0);
  return Range{false, 0, 1};
}

// A 0/1 result decided by the intervals: 1 when `yes`, 0 when `no`, both
// possible otherwise.
Range Decide(bool yes, bool no) {
  if (yes) return Point(1);
  if (no) return Point(0);
  return Range{false, 0, 1};
}

// The pieces of b without 0 (division by zero fails), each of one sign:
// there the quotients below are monotone in each operand, so their
// extremes over a box are at its corners.
std::vector<Range> NonzeroPieces(const Range& b) {
  std::vector<Range> pieces;
  if (b.empty) return pieces;
  if (b.lo <= -1) pieces.push_back(Range{false, b.lo, std::min<int64_t>(b.hi, -1)});
  if (b.hi >= 1) pieces.push_back(Range{false, std::max<int64_t>(b.lo, 1), b.hi});
  return pieces;
}

// The largest |b| over b's nonzero values, 0 where b is only 0.
Wide MaxAbsNonzero(const Range& b) {
  Wide m = 0;
  for (const Range& piece : NonzeroPieces(b))
    m = std::max({m, -static_cast<Wide>(piece.lo), static_cast<Wide>(piece.hi)});
  return m;
}

enum class Rounding { kTrunc, kCeil, kFloor };

// a / b in exact arithmetic, rounded toward zero (C's /), up or down.
// cdiv is the ceiling: C's quotient plus one where the signs agree and it
// is inexact, which is the ceiling whatever the signs (truncation rounds
// negative quotients up already).  floordiv is Python's //, the floor.
Wide Quotient(Wide a, Wide b, Rounding rounding) {
  Wide q = a / b;
  if (a % b != 0) {
    const bool negative = (a < 0) != (b < 0);
    if (rounding == Rounding::kFloor && negative) --q;
    if (rounding == Rounding::kCeil && !negative) ++q;
  }
  return q;
}

Range DivideRange(const Range& a, const Range& b, Rounding rounding) {
  Range out = Empty();
  for (const Range& piece : NonzeroPieces(b)) {
    Wide lo = 0, hi = 0;
    bool first = true;
    for (Wide x : {static_cast<Wide>(a.lo), static_cast<Wide>(a.hi)})
      for (Wide y : {static_cast<Wide>(piece.lo), static_cast<Wide>(piece.hi)}) {
        Wide q = Quotient(x, y, rounding);
        lo = first ? q : std::min(lo, q);
        hi = first ? q : std::max(hi, q);
        first = false;
      }
    // INT64_MIN / -1 (2^63) falls outside and is clamped off: it fails.
    out = Union(out, Make(lo, hi));
  }
  return out;
}

// a % b (C's, with the sign of a) or floormod(a, b) (Python's, with the
// sign of b), where b is the single value c != 0 and a's values all have
// one quotient q: there the remainder is a - q * c, increasing in a, so
// exact.  nullopt otherwise.
std::optional<Range> RemainderOfOneQuotient(const Range& a, const Range& b, Rounding rounding) {
  if (!IsPoint(b) || b.lo == 0) return std::nullopt;
  const Wide c = b.lo;
  const Wide q = Quotient(a.lo, c, rounding);
  if (q != Quotient(a.hi, c, rounding)) return std::nullopt;
  return Make(a.lo - q * c, a.hi - q * c);
}

// C's a % b: the sign of a, |a % b| <= |b| - 1 and <= |a|.
Range ModRange(const Range& a, const Range& b) {
  if (std::optional<Range> exact = RemainderOfOneQuotient(a, b, Rounding::kTrunc)) return *exact;
  const Wide m = MaxAbsNonzero(b);
  if (m == 0) return Empty();
  const Wide lo = a.lo >= 0 ? Wide{0} : std::max<Wide>(a.lo, 1 - m);
  const Wide hi = a.hi <= 0 ? Wide{0} : std::min<Wide>(a.hi, m - 1);
  return Make(lo, hi);
}

// Python's a % b: in [0, b - 1] for b > 0 (and <= a where a >= 0, when it
// is C's remainder), in [b + 1, 0] for b < 0 (and >= a where a <= 0).
Range FloorModRange(const Range& a, const Range& b) {
  if (std::optional<Range> exact = RemainderOfOneQuotient(a, b, Rounding::kFloor)) return *exact;
  Range out = Empty();
  for (const Range& piece : NonzeroPieces(b)) {
    if (piece.lo > 0) {
      Wide hi = static_cast<Wide>(piece.hi) - 1;
      if (a.lo >= 0) hi = std::min<Wide>(hi, a.hi);
      out = Union(out, Make(0, hi));
    } else {
      Wide lo = static_cast<Wide>(piece.lo) + 1;
      if (a.hi <= 0) lo = std::max<Wide>(lo, a.lo);
      out = Union(out, Make(lo, 0));
    }
  }
  return out;
}

Wide MaxAbs(const Range& r) { return std::max(-static_cast<Wide>(r.lo), static_cast<Wide>(r.hi)); }

// Python's math.gcd: 0 only for gcd(0, 0), at most |a| where a != 0 (and
// |b| where b != 0), at most max(|a|, |b|) always.  gcd(INT64_MIN, 0),
// 2^63, fails and is clamped off.
Range GcdRange(const Range& a, const Range& b) {
  const bool a_nonzero = !HasZero(a), b_nonzero = !HasZero(b);
  Wide hi = std::max(MaxAbs(a), MaxAbs(b));
  if (a_nonzero) hi = std::min(hi, MaxAbs(a));
  if (b_nonzero) hi = std::min(hi, MaxAbs(b));
  return Make(a_nonzero || b_nonzero ? 1 : 0, hi);
}

// floor(log2(x)), for x >= 1: the launcher fails below.
int Log2(uint64_t x) { return 63 - __builtin_clzll(x); }

Range Log2Range(const Range& x) {
  if (x.hi < 1) return Empty();
  return Range{false, Log2(static_cast<uint64_t>(std::max<int64_t>(x.lo, 1))), Log2(static_cast<uint64_t>(x.hi))};
}

// triton.next_power_of_2, non-decreasing: 0 for x <= 0, and the launcher
// fails above 2^62 (2^63 does not fit).
int64_t NextPow2(int64_t x) {
  if (x <= 0) return 0;
  uint64_t n = static_cast<uint64_t>(x) - 1;
  for (int shift = 1; shift <= 32; shift *= 2) n |= n >> shift;
  return static_cast<int64_t>(n + 1);
}

Range NextPow2Range(const Range& x) {
  constexpr int64_t kLargest = int64_t{1} << 62;
  if (x.lo > kLargest) return Empty();
  return Range{false, NextPow2(x.lo), NextPow2(std::min(x.hi, kLargest))};
}

Range CompareRange(const std::string& op, const Range& a, const Range& b) {
  if (op == "<") return Decide(a.hi < b.lo, a.lo >= b.hi);
  if (op == "<=") return Decide(a.hi <= b.lo, a.lo > b.hi);
  if (op == ">") return Decide(a.lo > b.hi, a.hi <= b.lo);
  if (op == ">=") return Decide(a.lo >= b.hi, a.hi < b.lo);
  const bool equal = IsPoint(a) && IsPoint(b) && a.lo == b.lo;
  const bool disjoint = a.hi < b.lo || b.hi < a.lo;
  return op == "==" ? Decide(equal, disjoint) : Decide(disjoint, equal);
}

Range ArithmeticRange(const std::string& op, const Range& a, const Range& b) {
  const Wide alo = a.lo, ahi = a.hi, blo = b.lo, bhi = b.hi;
  if (op == "+") return Make(alo + blo, ahi + bhi);
  if (op == "-") return Make(alo - bhi, ahi - blo);
  if (op == "*") {
    const Wide p[] = {alo * blo, alo * bhi, ahi * blo, ahi * bhi};
    return Make(*std::min_element(p, p + 4), *std::max_element(p, p + 4));
  }
  if (op == "/") return DivideRange(a, b, Rounding::kTrunc);
  if (op == "%") return ModRange(a, b);
  return CompareRange(op, a, b);
}

Range CallRange(const std::string& name, const std::vector<Range>& v) {
  if (name == "min" || name == "max") {
    Range r = v[0];
    for (const Range& x : v) {
      r.lo = name == "min" ? std::min(r.lo, x.lo) : std::max(r.lo, x.lo);
      r.hi = name == "min" ? std::min(r.hi, x.hi) : std::max(r.hi, x.hi);
    }
    return r;
  }
  if (name == "cdiv") return DivideRange(v[0], v[1], Rounding::kCeil);
  if (name == "floordiv") return DivideRange(v[0], v[1], Rounding::kFloor);
  if (name == "floormod") return FloorModRange(v[0], v[1]);
  if (name == "gcd") return GcdRange(v[0], v[1]);
  if (name == "log2") return Log2Range(v[0]);
  if (name == "next_pow2") return NextPow2Range(v[0]);
  return Empty();  // CheckExpr admits no other function
}

// The launcher's value of node `e` where every operand is the single value
// in `args`: expr.cc's own folding of `e` with those values as literals, so
// point operands give exactly the launcher's value (or empty, where it
// fails) whatever the operator.
Range FoldPoints(const Expr& e, const std::vector<Range>& args) {
  Expr literal;
  literal.kind = e.kind;
  literal.op = e.op;
  literal.name = e.name;
  for (const Range& arg : args) {
    literal.args.emplace_back();
    literal.args.back().kind = Expr::Kind::kInteger;
    literal.args.back().value = arg.lo;
  }
  std::optional<int64_t> v = EvaluateExpr(literal, ExprBindings{});
  return v ? Point(*v) : Empty();
}

class Bounder {
 public:
  Bounder(const ExprBindings& b, const NameRange& ranges) : b_(b), ranges_(ranges) {}

  Result Bound(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kInteger:
        return Point(e.value);
      case Expr::Kind::kName:
        return Name(e.name);
      case Expr::Kind::kNull:
        return std::nullopt;  // CheckExpr admits it beside a pointer only
      case Expr::Kind::kDevice: {
        std::optional<Interval> r = DeviceAttributeRange(e.name);
        if (!r) return std::nullopt;
        return Range{false, r->lo, r->hi};
      }
      case Expr::Kind::kNegate: {
        Result v = Bound(e.args[0]);
        if (!v || v->empty) return v;
        return Make(-static_cast<Wide>(v->hi), -static_cast<Wide>(v->lo));
      }
      case Expr::Kind::kNot: {
        Result v = Bound(e.args[0]);
        if (!v || v->empty) return v;
        return Decide(IsZero(*v), !HasZero(*v));
      }
      case Expr::Kind::kBinary:
        return Binary(e);
      case Expr::Kind::kConditional:
        return Conditional(e);
      case Expr::Kind::kCall:
        return Call(e);
    }
    return std::nullopt;
  }

 private:
  Result Name(const std::string& name) {
    if (b_.constant)
      if (std::optional<int64_t> v = b_.constant(name)) return Point(*v);
    if (!ranges_) return std::nullopt;
    std::optional<Interval> r = ranges_(name);
    if (!r) return std::nullopt;
    if (r->lo > r->hi) return Empty();
    return Range{false, r->lo, r->hi};
  }

  // The operands of `e`, all evaluated by the launcher: nullopt if any is
  // unknown; an empty operand empties the result.
  std::optional<std::vector<Range>> Operands(const Expr& e) {
    std::vector<Range> out;
    for (const Expr& arg : e.args) {
      Result r = Bound(arg);
      if (!r) return std::nullopt;
      out.push_back(*r);
    }
    return out;
  }

  static bool AnyEmpty(const std::vector<Range>& v) {
    return std::any_of(v.begin(), v.end(), [](const Range& r) { return r.empty; });
  }

  static bool AllPoints(const std::vector<Range>& v) { return std::all_of(v.begin(), v.end(), IsPoint); }

  Result Binary(const Expr& e) {
    // `p == NULL`, `p != NULL`: whether an optional pointer was passed.
    if (e.args[0].kind == Expr::Kind::kNull || e.args[1].kind == Expr::Kind::kNull)
      return Range{false, 0, 1};
    if (e.op == "&&" || e.op == "||") return Logic(e);
    std::optional<std::vector<Range>> v = Operands(e);
    if (!v) return std::nullopt;
    if (AnyEmpty(*v)) return Empty();
    if (AllPoints(*v)) return FoldPoints(e, *v);
    return ArithmeticRange(e.op, (*v)[0], (*v)[1]);
  }

  // C's && and ||: the right operand is evaluated (and bounded) only where
  // the left one does not decide.
  Result Logic(const Expr& e) {
    Result lhs = Bound(e.args[0]);
    if (!lhs || lhs->empty) return lhs;
    const bool is_or = e.op == "||";
    // The values that stop at the left operand, and whether any go on.
    const bool stops = is_or ? HasNonzero(*lhs) : HasZero(*lhs);
    const bool goes_on = is_or ? HasZero(*lhs) : HasNonzero(*lhs);
    Range out = stops ? Point(is_or ? 1 : 0) : Empty();
    if (!goes_on) return out;
    Result rhs = Bound(e.args[1]);
    if (!rhs) return std::nullopt;
    return Union(out, Truth(*rhs));
  }

  // Only the branches the condition can select are evaluated.
  Result Conditional(const Expr& e) {
    Result cond = Bound(e.args[0]);
    if (!cond || cond->empty) return cond;
    Range out = Empty();
    if (HasNonzero(*cond)) {
      Result yes = Bound(e.args[1]);
      if (!yes) return std::nullopt;
      out = Union(out, *yes);
    }
    if (HasZero(*cond)) {
      Result no = Bound(e.args[2]);
      if (!no) return std::nullopt;
      out = Union(out, *no);
    }
    return out;
  }

  Result Call(const Expr& e) {
    if (e.name == "sizeof") {
      if (!b_.size_of || e.args.size() != 1) return std::nullopt;
      return Point(b_.size_of(e.args[0].name));
    }
    std::optional<std::vector<Range>> v = Operands(e);
    if (!v) return std::nullopt;
    if (v->empty()) return std::nullopt;  // CheckExpr admits no call without arguments
    if (AnyEmpty(*v)) return Empty();
    if (AllPoints(*v)) return FoldPoints(e, *v);
    return CallRange(e.name, *v);
  }

  const ExprBindings& b_;
  const NameRange& ranges_;
};

// The names of `e` that `b` does not bind, and its device attributes as
// "device.NAME", in order of first appearance.
void CollectFreeNames(const Expr& e, const ExprBindings& b, std::vector<std::string>& out) {
  std::string name;
  if (e.kind == Expr::Kind::kName && !(b.constant && b.constant(e.name))) name = e.name;
  if (e.kind == Expr::Kind::kDevice) name = "device." + e.name;
  if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  if (e.kind == Expr::Kind::kCall && e.name == "sizeof") return;  // its argument is a dtype
  for (const Expr& arg : e.args) CollectFreeNames(arg, b, out);
}

// `e` with each `device.NAME` read as a name, "device.NAME", so that
// EvaluateExpr can be given its value (no manifest name has a '.').
Expr DeviceAsNames(const Expr& e) {
  Expr out = e;
  if (out.kind == Expr::Kind::kDevice) {
    out.kind = Expr::Kind::kName;
    out.name = "device." + e.name;
  }
  for (Expr& arg : out.args) arg = DeviceAsNames(arg);
  return out;
}

}  // namespace

std::optional<Interval> ScalarRange(Scalar s) {
  switch (s) {
    case Scalar::kI8: return Interval{INT8_MIN, INT8_MAX};
    case Scalar::kI16: return Interval{INT16_MIN, INT16_MAX};
    case Scalar::kI32: return Interval{INT32_MIN, INT32_MAX};
    case Scalar::kI64: return Interval{kInt64Min, kInt64Max};
    case Scalar::kU8: return Interval{0, UINT8_MAX};
    case Scalar::kU16: return Interval{0, UINT16_MAX};
    case Scalar::kU32: return Interval{0, UINT32_MAX};
    // (int64_t) of a uint64_t above INT64_MAX wraps to a negative value.
    case Scalar::kU64: return Interval{kInt64Min, kInt64Max};
    case Scalar::kBool: return Interval{0, 1};
    case Scalar::kF32:
    case Scalar::kF16:
    case Scalar::kBF16:
    case Scalar::kF64:
      break;
  }
  return std::nullopt;
}

std::optional<Interval> DeviceAttributeRange(const std::string& name) {
  // Wider than any device in sight, so that a proof over them holds on the
  // devices to come too.
  static const std::map<std::string, Interval> kRanges = {
      {"num_sms", {1, 1024}},
      {"sm", {50, 200}},
      {"max_shared_mem", {0, int64_t{1} << 20}},
      {"l2_bytes", {0, int64_t{1} << 34}},
  };
  auto it = kRanges.find(name);
  if (it == kRanges.end()) return std::nullopt;
  return it->second;
}

std::optional<Interval> BoundExpr(const Expr& e, const ExprBindings& b, const NameRange& ranges) {
  Result r = Bounder(b, ranges).Bound(e);
  if (!r || r->empty) return std::nullopt;
  return Interval{r->lo, r->hi};
}

std::string BoundWitness(const Expr& e, const ExprBindings& b, const NameRange& ranges) {
  std::optional<Interval> bound = BoundExpr(e, b, ranges);
  // A constant's value depends on no runtime name, whatever `e` names.
  if (!bound || EvaluateExpr(e, b)) return "";
  std::vector<std::string> names;
  CollectFreeNames(e, b, names);
  if (names.empty()) return "";
  // The candidate values of each name: the ends of its range, 0, 1, -1.
  std::vector<std::vector<int64_t>> candidates;
  size_t combinations = 1;
  constexpr size_t kMaxCombinations = 4096;
  for (const std::string& name : names) {
    std::optional<Interval> r = name.rfind("device.", 0) == 0 ? DeviceAttributeRange(name.substr(7))
                                : ranges                      ? ranges(name)
                                                              : std::nullopt;
    if (!r || r->lo > r->hi) return "";
    std::vector<int64_t> values = {r->hi, r->lo};
    for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}})
      if (v > r->lo && v < r->hi) values.push_back(v);
    if (values[0] == values[1]) values.pop_back();
    combinations *= values.size();
    if (combinations > kMaxCombinations) return "";
    candidates.push_back(std::move(values));
  }
  const Expr named = DeviceAsNames(e);
  std::vector<size_t> index(names.size(), 0);
  ExprBindings at = b;
  at.constant = [&](const std::string& n) -> std::optional<int64_t> {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == n) return candidates[i][index[i]];
    return b.constant ? b.constant(n) : std::nullopt;
  };
  for (size_t k = 0; k < combinations; ++k) {
    // The k-th combination, the first name varying slowest.
    size_t rest = k;
    for (size_t i = names.size(); i-- > 0;) {
      index[i] = rest % candidates[i].size();
      rest /= candidates[i].size();
    }
    std::optional<int64_t> v = EvaluateExpr(named, at);
    if (!v || *v != bound->hi) continue;
    std::string out;
    for (size_t i = 0; i < names.size(); ++i)
      out += (i ? ", " : "") + names[i] + " = " + std::to_string(candidates[i][index[i]]);
    return out;
  }
  return "";
}

}  // namespace kpack
