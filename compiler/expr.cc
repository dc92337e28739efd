#include "expr.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <initializer_list>
#include <limits>

namespace kpack {
namespace {

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

bool IsComparison(const std::string& op) {
  return op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=";
}

// "num_sms, sm, max_shared_mem or l2_bytes", for messages.
std::string DeviceAttributeList() {
  const std::vector<std::string>& names = DeviceAttributeNames();
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

class Parser {
 public:
  Parser(const std::string& text, const SourceLoc& start, Diagnostics& diag)
      : text_(text), start_(start), diag_(diag) {}

  std::optional<Expr> Parse() {
    std::optional<Expr> e = ParseConditional();
    if (!e) return std::nullopt;
    SkipSpace();
    if (pos_ < text_.size()) return Fail("unexpected '" + std::string(1, text_[pos_]) + "' in expression");
    return e;
  }

 private:
  SourceLoc Here() const {
    SourceLoc loc = start_;
    if (loc.line > 0) loc.col += static_cast<int>(pos_);
    return loc;
  }

  std::nullopt_t Fail(const std::string& message) {
    diag_.Error(Here(), message);
    return std::nullopt;
  }

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool Accept(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // The operator at the next token, longest match first ("<=" before "<"),
  // or "" when the next token is none.  Consumes nothing.
  std::string PeekOp() {
    SkipSpace();
    static const char* const kOps[] = {"==", "!=", "<=", ">=", "&&", "||", "+", "-", "*",
                                       "/",  "%",  "<",  ">",  "!",  "?",  ":"};
    for (const char* op : kOps)
      if (text_.compare(pos_, std::strlen(op), op) == 0) return op;
    return "";
  }

  // `c ? a : b`, right-associative: the branches are whole expressions.
  std::optional<Expr> ParseConditional() {
    std::optional<Expr> cond = ParseLeft(&Parser::ParseAnd, {"||"});
    if (!cond || PeekOp() != "?") return cond;
    Expr e;
    e.kind = Expr::Kind::kConditional;
    e.loc = Here();
    ++pos_;
    ++depth_;
    std::optional<Expr> yes = ParseConditional();
    if (!yes) return std::nullopt;
    if (PeekOp() != ":") return Fail("expected ':' in conditional expression");
    ++pos_;
    std::optional<Expr> no = ParseConditional();
    --depth_;
    if (!no) return std::nullopt;
    e.args.push_back(std::move(*cond));
    e.args.push_back(std::move(*yes));
    e.args.push_back(std::move(*no));
    return e;
  }

  std::optional<Expr> ParseAnd() { return ParseLeft(&Parser::ParseCompare, {"&&"}); }
  std::optional<Expr> ParseSum() { return ParseLeft(&Parser::ParseProduct, {"+", "-"}); }
  std::optional<Expr> ParseProduct() { return ParseLeft(&Parser::ParseUnary, {"*", "/", "%"}); }

  // One left-associative level: operands parsed by `next`, joined by `ops`.
  std::optional<Expr> ParseLeft(std::optional<Expr> (Parser::*next)(), std::initializer_list<const char*> ops) {
    std::optional<Expr> lhs = (this->*next)();
    while (lhs) {
      std::string op = PeekOp();
      bool found = false;
      for (const char* candidate : ops) found = found || op == candidate;
      if (!found) break;
      SourceLoc loc = Here();
      pos_ += op.size();
      std::optional<Expr> rhs = (this->*next)();
      if (!rhs) return std::nullopt;
      lhs = Binary(op, std::move(*lhs), std::move(*rhs), loc);
    }
    return lhs;
  }

  // At most one comparison: a chain means different things in C and in
  // Python (where many manifests' expressions come from), so it is refused.
  std::optional<Expr> ParseCompare() {
    std::optional<Expr> lhs = ParseSum();
    if (!lhs || !CheckNoAssignment()) return std::nullopt;
    std::string op = PeekOp();
    if (!IsComparison(op)) return lhs;
    SourceLoc loc = Here();
    pos_ += op.size();
    std::optional<Expr> rhs = ParseSum();
    if (!rhs || !CheckNoAssignment()) return std::nullopt;
    if (IsComparison(PeekOp())) return Fail("comparisons do not chain; combine them with && or add parentheses");
    return Binary(op, std::move(*lhs), std::move(*rhs), loc);
  }

  // A lone '=' after an operand is a mistyped comparison.
  bool CheckNoAssignment() {
    if (!PeekOp().empty() || pos_ >= text_.size() || text_[pos_] != '=') return true;
    Fail("'=' is not an operator; use '==' to compare");
    return false;
  }

  static Expr Binary(const std::string& op, Expr lhs, Expr rhs, const SourceLoc& loc) {
    Expr e;
    e.kind = Expr::Kind::kBinary;
    e.op = op;
    e.loc = loc;
    e.args.push_back(std::move(lhs));
    e.args.push_back(std::move(rhs));
    return e;
  }

  std::optional<Expr> ParseUnary() {
    SkipSpace();
    if (depth_ > kMaxDepth) return Fail("expression nested too deeply");
    SourceLoc loc = Here();
    std::string op = PeekOp();
    if (op == "-" || op == "!") {
      ++pos_;
      ++depth_;
      std::optional<Expr> operand = ParseUnary();
      --depth_;
      if (!operand) return std::nullopt;
      Expr e;
      e.kind = op == "-" ? Expr::Kind::kNegate : Expr::Kind::kNot;
      e.loc = loc;
      e.args.push_back(std::move(*operand));
      return e;
    }
    return ParsePrimary();
  }

  std::optional<Expr> ParsePrimary() {
    SkipSpace();
    SourceLoc loc = Here();
    if (pos_ >= text_.size()) return Fail("expected a number, a name or '(' in expression");
    char c = text_[pos_];
    if (Accept('(')) {
      ++depth_;
      std::optional<Expr> inner = ParseConditional();
      --depth_;
      if (!inner) return std::nullopt;
      if (!Accept(')')) return Fail("expected ')' in expression");
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return ParseInteger(loc);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return ParseNameOrCall(loc);
    return Fail("unexpected '" + std::string(1, c) + "' in expression");
  }

  std::optional<Expr> ParseInteger(const SourceLoc& loc) {
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      int digit = text_[pos_] - '0';
      if (value > (kInt64Max - digit) / 10) return Fail("integer literal does not fit in 64 bits");
      value = value * 10 + digit;
      ++pos_;
    }
    if (pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      return Fail("unexpected '" + std::string(1, text_[pos_]) + "' after number");
    Expr e;
    e.kind = Expr::Kind::kInteger;
    e.value = value;
    e.loc = loc;
    return e;
  }

  std::string ReadIdentifier() {
    size_t begin = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    return text_.substr(begin, pos_ - begin);
  }

  std::optional<Expr> ParseNameOrCall(const SourceLoc& loc) {
    Expr e;
    e.kind = Expr::Kind::kName;
    e.name = ReadIdentifier();
    e.loc = loc;
    // NULL is a keyword, never a call or a name.
    if (e.name == "NULL") {
      e.kind = Expr::Kind::kNull;
      return e;
    }
    if (e.name == "device" && pos_ < text_.size() && text_[pos_] == '.') return ParseDevice(loc);
    if (!Accept('(')) return e;
    e.kind = Expr::Kind::kCall;
    ++depth_;
    do {
      std::optional<Expr> arg = ParseConditional();
      if (!arg) return std::nullopt;
      e.args.push_back(std::move(*arg));
    } while (Accept(','));
    --depth_;
    if (!Accept(')')) return Fail("expected ')' or ',' in call of " + e.name + "()");
    return e;
  }

  // `device.NAME`, the '.' next.  The set of attributes is fixed, so an
  // unknown one is a syntax error, reported at its name.
  std::optional<Expr> ParseDevice(const SourceLoc& loc) {
    ++pos_;
    SourceLoc name_loc = Here();
    Expr e;
    e.kind = Expr::Kind::kDevice;
    e.loc = loc;
    e.name = ReadIdentifier();
    if (e.name.empty()) return Fail("expected a device attribute after 'device.' (" + DeviceAttributeList() + ")");
    for (const std::string& known : DeviceAttributeNames())
      if (e.name == known) return e;
    diag_.Error(name_loc, "unknown device attribute '" + e.name + "' (expected " + DeviceAttributeList() + ")");
    return std::nullopt;
  }

  static constexpr int kMaxDepth = 64;
  const std::string& text_;
  SourceLoc start_;
  Diagnostics& diag_;
  size_t pos_ = 0;
  int depth_ = 0;
};

using Lookup = std::function<NameKind(const std::string&)>;

// The functions besides sizeof and their arity (max_args 0: no limit).
struct Function {
  const char* name;
  size_t min_args;
  size_t max_args;
};
constexpr Function kFunctions[] = {
    {"min", 2, 0}, {"max", 2, 0}, {"cdiv", 2, 2}, {"floordiv", 2, 2}, {"floormod", 2, 2},
    {"gcd", 2, 2}, {"log2", 1, 1}, {"next_pow2", 1, 1},
};

bool CheckCall(const Expr& e, const Lookup& lookup, bool allow_params, Diagnostics& diag) {
  if (e.name == "sizeof") {
    if (e.args.size() != 1 || e.args[0].kind != Expr::Kind::kName ||
        lookup(e.args[0].name) != NameKind::kDtypeConstexpr) {
      diag.Error(e.loc, "sizeof() takes the name of a dtype constexpr");
      return false;
    }
    return true;
  }
  const Function* f = nullptr;
  for (const Function& candidate : kFunctions)
    if (e.name == candidate.name) f = &candidate;
  if (f == nullptr) {
    diag.Error(e.loc, "unknown function '" + e.name +
                          "' (expected min, max, cdiv, floordiv, floormod, gcd, log2, next_pow2 or sizeof)");
    return false;
  }
  if (e.args.size() < f->min_args || (f->max_args != 0 && e.args.size() > f->max_args)) {
    std::string count = f->max_args == 0 ? std::to_string(f->min_args) + " or more arguments"
                        : f->min_args == 1   ? std::string("1 argument")
                                             : std::to_string(f->min_args) + " arguments";
    diag.Error(e.loc, e.name + "() takes " + count + ", got " + std::to_string(e.args.size()));
    return false;
  }
  bool ok = true;
  for (const Expr& arg : e.args) ok = CheckExpr(arg, lookup, allow_params, diag) && ok;
  return ok;
}

std::string RuntimeOnlyMessage(const std::string& what) {
  return what + "; only constexprs are allowed here";
}

const char* const kPointerUse = "p == NULL or p != NULL";

bool CheckName(const Expr& e, const Lookup& lookup, bool allow_params, Diagnostics& diag) {
  switch (lookup(e.name)) {
    case NameKind::kIntConstexpr:
    case NameKind::kBoolConstexpr:
      return true;
    case NameKind::kIntegerParam:
      if (allow_params) return true;
      diag.Error(e.loc, RuntimeOnlyMessage("'" + e.name + "' is a runtime parameter"));
      return false;
    case NameKind::kDtypeConstexpr:
      diag.Error(e.loc, "'" + e.name + "' is a dtype; use sizeof(" + e.name + ")");
      return false;
    case NameKind::kPointerParam:
      diag.Error(e.loc, "'" + e.name + "' is a pointer parameter; it can only be compared with NULL: " + kPointerUse);
      return false;
    case NameKind::kOtherParam:
      diag.Error(e.loc, "'" + e.name + "' is not an integer parameter");
      return false;
    case NameKind::kUnknown:
      break;
  }
  diag.Error(e.loc, "unknown name '" + e.name + "' in expression");
  return false;
}

// `p == NULL` or `p != NULL` (either order), the one use of a pointer
// parameter: whether an optional argument was passed.  Errors come in
// column order.
bool CheckNullComparison(const Expr& e, const Lookup& lookup, bool allow_params, Diagnostics& diag) {
  const Expr& other = e.args[0].kind == Expr::Kind::kNull ? e.args[1] : e.args[0];
  if (other.kind == Expr::Kind::kName && lookup(other.name) == NameKind::kPointerParam) {
    if (allow_params) return true;
    diag.Error(other.loc, RuntimeOnlyMessage("'" + other.name + "' is a runtime parameter"));
    return false;
  }
  // Anything else beside NULL is checked as itself, and the NULL (a kNull
  // operand reports itself) is misused.
  for (const Expr& arg : e.args) CheckExpr(arg, lookup, allow_params, diag);
  return false;
}

}  // namespace

const std::vector<std::string>& DeviceAttributeNames() {
  static const std::vector<std::string> kNames = {"num_sms", "sm", "max_shared_mem", "l2_bytes"};
  return kNames;
}

std::optional<Expr> ParseExpr(const std::string& text, const SourceLoc& start, Diagnostics& diag) {
  return Parser(text, start, diag).Parse();
}

bool CheckExpr(const Expr& e, const Lookup& lookup, bool allow_params, Diagnostics& diag) {
  switch (e.kind) {
    case Expr::Kind::kInteger:
      return true;
    case Expr::Kind::kName:
      return CheckName(e, lookup, allow_params, diag);
    case Expr::Kind::kNull:
      diag.Error(e.loc, std::string("NULL can only be compared with a pointer parameter: ") + kPointerUse);
      return false;
    case Expr::Kind::kDevice:
      if (allow_params) return true;
      diag.Error(e.loc, RuntimeOnlyMessage("'device." + e.name + "' is a property of the launching device"));
      return false;
    case Expr::Kind::kCall:
      return CheckCall(e, lookup, allow_params, diag);
    case Expr::Kind::kBinary:
      if ((e.op == "==" || e.op == "!=") &&
          (e.args[0].kind == Expr::Kind::kNull || e.args[1].kind == Expr::Kind::kNull))
        return CheckNullComparison(e, lookup, allow_params, diag);
      [[fallthrough]];
    case Expr::Kind::kNegate:
    case Expr::Kind::kNot:
    case Expr::Kind::kConditional: {
      bool ok = true;
      for (const Expr& arg : e.args) ok = CheckExpr(arg, lookup, allow_params, diag) && ok;
      return ok;
    }
  }
  return false;
}

namespace {

void CollectUsed(const Expr& e, Expr::Kind kind, std::set<std::string>& out) {
  if (e.kind == kind) out.insert(e.name);
  for (const Expr& arg : e.args) CollectUsed(arg, kind, out);
}

}  // namespace

std::set<std::string> DeviceAttributesUsed(const Expr& e) {
  std::set<std::string> out;
  CollectUsed(e, Expr::Kind::kDevice, out);
  return out;
}

std::set<std::string> FunctionsUsed(const Expr& e) {
  std::set<std::string> out;
  CollectUsed(e, Expr::Kind::kCall, out);
  return out;
}

namespace {

// The semantics of the operators and functions, shared by folding (here)
// and, line for line, by the C helpers of launcher_gen.cc.  nullopt where
// the generated code sets kpack_bad: overflow, division by zero, log2 of
// x <= 0.  Checked, so folding never hides undefined behaviour.

// Python's a // b: the quotient rounded toward negative infinity.
std::optional<int64_t> FloorDiv(int64_t a, int64_t b) {
  if (b == 0 || (a == kInt64Min && b == -1)) return std::nullopt;
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// Python's a % b: the remainder with the sign of b.  INT64_MIN % -1 is 0
// there, but traps in C, so -1 is answered first.
std::optional<int64_t> FloorMod(int64_t a, int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1) return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// Python's math.gcd: non-negative, gcd(0, 0) == 0.  gcd(INT64_MIN, 0) is
// 2^63, which does not fit.
std::optional<int64_t> Gcd(int64_t a, int64_t b) {
  uint64_t x = a < 0 ? 0 - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
  uint64_t y = b < 0 ? 0 - static_cast<uint64_t>(b) : static_cast<uint64_t>(b);
  while (y != 0) {
    uint64_t t = x % y;
    x = y;
    y = t;
  }
  if (x > static_cast<uint64_t>(kInt64Max)) return std::nullopt;
  return static_cast<int64_t>(x);
}

// floor(log2(x)) for x >= 1: Python's x.bit_length() - 1.
std::optional<int64_t> Log2(int64_t x) {
  if (x <= 0) return std::nullopt;
  return 63 - __builtin_clzll(static_cast<uint64_t>(x));
}

// triton.next_power_of_2: x - 1 with every bit below its highest set, plus
// one.  For x <= 0 Python's arbitrary-precision smear gives -1, so 0; above
// 2^62 the answer, 2^63, does not fit.
std::optional<int64_t> NextPow2(int64_t x) {
  if (x <= 0) return 0;
  if (x > (int64_t{1} << 62)) return std::nullopt;
  uint64_t n = static_cast<uint64_t>(x) - 1;
  for (int shift = 1; shift <= 32; shift *= 2) n |= n >> shift;
  return static_cast<int64_t>(n + 1);
}

std::optional<int64_t> Apply(const std::string& op, int64_t a, int64_t b) {
  int64_t r = 0;
  if (op == "+") return __builtin_add_overflow(a, b, &r) ? std::nullopt : std::optional<int64_t>(r);
  if (op == "-") return __builtin_sub_overflow(a, b, &r) ? std::nullopt : std::optional<int64_t>(r);
  if (op == "*") return __builtin_mul_overflow(a, b, &r) ? std::nullopt : std::optional<int64_t>(r);
  if (op == "/" || op == "%") {
    if (b == 0 || (a == kInt64Min && b == -1)) return std::nullopt;
    return op == "/" ? a / b : a % b;
  }
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  return std::nullopt;
}

std::optional<int64_t> ApplyCall(const std::string& name, const std::vector<int64_t>& v) {
  if (name == "min" || name == "max") {
    int64_t r = v[0];
    for (int64_t x : v) r = name == "min" ? std::min(r, x) : std::max(r, x);
    return r;
  }
  if (name == "cdiv") {
    std::optional<int64_t> q = Apply("/", v[0], v[1]);
    if (!q) return std::nullopt;
    // Ceiling when the signs agree; C truncates toward zero.
    return (v[0] % v[1] != 0 && ((v[0] > 0) == (v[1] > 0))) ? *q + 1 : *q;
  }
  if (name == "floordiv") return FloorDiv(v[0], v[1]);
  if (name == "floormod") return FloorMod(v[0], v[1]);
  if (name == "gcd") return Gcd(v[0], v[1]);
  if (name == "log2") return Log2(v[0]);
  if (name == "next_pow2") return NextPow2(v[0]);
  return std::nullopt;
}

// `&&` and `||` fold from the left and stop where C would: `0 && x` is 0
// whatever x is (even 1 / 0), `n && 0` is not constant.
std::optional<int64_t> EvaluateLogic(const Expr& e, const ExprBindings& b) {
  std::optional<int64_t> lhs = EvaluateExpr(e.args[0], b);
  if (!lhs) return std::nullopt;
  const bool stop_value = e.op == "||";
  if ((*lhs != 0) == stop_value) return stop_value ? 1 : 0;
  std::optional<int64_t> rhs = EvaluateExpr(e.args[1], b);
  if (!rhs) return std::nullopt;
  return *rhs != 0 ? 1 : 0;
}

}  // namespace

std::optional<int64_t> EvaluateExpr(const Expr& e, const ExprBindings& b) {
  switch (e.kind) {
    case Expr::Kind::kInteger:
      return e.value;
    case Expr::Kind::kName:
      return b.constant(e.name);
    case Expr::Kind::kNull:
    case Expr::Kind::kDevice:
      return std::nullopt;
    case Expr::Kind::kNegate: {
      std::optional<int64_t> v = EvaluateExpr(e.args[0], b);
      if (!v) return std::nullopt;
      return Apply("-", 0, *v);
    }
    case Expr::Kind::kNot: {
      std::optional<int64_t> v = EvaluateExpr(e.args[0], b);
      if (!v) return std::nullopt;
      return *v == 0 ? 1 : 0;
    }
    case Expr::Kind::kBinary: {
      if (e.op == "&&" || e.op == "||") return EvaluateLogic(e, b);
      std::optional<int64_t> lhs = EvaluateExpr(e.args[0], b);
      std::optional<int64_t> rhs = EvaluateExpr(e.args[1], b);
      if (!lhs || !rhs) return std::nullopt;
      return Apply(e.op, *lhs, *rhs);
    }
    case Expr::Kind::kConditional: {
      std::optional<int64_t> cond = EvaluateExpr(e.args[0], b);
      if (!cond) return std::nullopt;
      return EvaluateExpr(e.args[*cond != 0 ? 1 : 2], b);
    }
    case Expr::Kind::kCall: {
      if (e.name == "sizeof") return b.size_of(e.args[0].name);
      std::vector<int64_t> values;
      for (const Expr& arg : e.args) {
        std::optional<int64_t> v = EvaluateExpr(arg, b);
        if (!v) return std::nullopt;
        values.push_back(*v);
      }
      return ApplyCall(e.name, values);
    }
  }
  return std::nullopt;
}

namespace {

// Binding strength, as in C (comparisons share one level here).
enum Level { kConditionalLevel = 1, kOrLevel, kAndLevel, kCompareLevel, kSumLevel, kProductLevel,
             kUnaryLevel, kPrimaryLevel };

int Precedence(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kConditional: return kConditionalLevel;
    case Expr::Kind::kNegate:
    case Expr::Kind::kNot: return kUnaryLevel;
    case Expr::Kind::kBinary:
      if (e.op == "||") return kOrLevel;
      if (e.op == "&&") return kAndLevel;
      if (IsComparison(e.op)) return kCompareLevel;
      return (e.op == "+" || e.op == "-") ? kSumLevel : kProductLevel;
    default: return kPrimaryLevel;
  }
}

std::string Parenthesized(const Expr& e, bool needed) {
  std::string text = FormatExpr(e);
  return needed ? "(" + text + ")" : text;
}

std::string FormatBinary(const Expr& e) {
  const int level = Precedence(e);
  const int left = Precedence(e.args[0]), right = Precedence(e.args[1]);
  // Comparisons do not chain, so one inside another is parenthesized on
  // either side.  Elsewhere the tree is left-leaning: a right operand of
  // the same level keeps its parentheses, a - (b - c).
  std::string lhs = Parenthesized(e.args[0], left < level || (level == kCompareLevel && left == level));
  std::string rhs = Parenthesized(e.args[1], right <= level && right < kUnaryLevel);
  return lhs + " " + e.op + " " + rhs;
}

}  // namespace

std::string FormatExpr(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kInteger: return std::to_string(e.value);
    case Expr::Kind::kName: return e.name;
    case Expr::Kind::kNull: return "NULL";
    case Expr::Kind::kDevice: return "device." + e.name;
    case Expr::Kind::kNegate:
    case Expr::Kind::kNot:
      return (e.kind == Expr::Kind::kNegate ? "-" : "!") +
             Parenthesized(e.args[0], Precedence(e.args[0]) < kUnaryLevel);
    case Expr::Kind::kBinary:
      return FormatBinary(e);
    case Expr::Kind::kConditional:
      // Right-associative: only a conditional condition needs parentheses.
      return Parenthesized(e.args[0], Precedence(e.args[0]) == kConditionalLevel) + " ? " +
             FormatExpr(e.args[1]) + " : " + FormatExpr(e.args[2]);
    case Expr::Kind::kCall: {
      std::string out = e.name + "(";
      for (size_t i = 0; i < e.args.size(); ++i) {
        if (i) out += ", ";
        out += FormatExpr(e.args[i]);
      }
      return out + ")";
    }
  }
  return "";
}

namespace {

std::string EmitBinaryC(const Expr& e, const ExprBindings& b) {
  const bool null_lhs = e.args[0].kind == Expr::Kind::kNull;
  if (null_lhs || e.args[1].kind == Expr::Kind::kNull) {
    // CheckExpr allowed only `p == NULL` and `p != NULL`: the pointer as is.
    return "(int64_t)(" + e.args[null_lhs ? 1 : 0].name + " " + e.op + " NULL)";
  }
  std::string lhs = EmitExprC(e.args[0], b), rhs = EmitExprC(e.args[1], b);
  // C's own operators, so that && and || short-circuit; int to int64_t.
  if (IsComparison(e.op) || e.op == "&&" || e.op == "||") return "(int64_t)(" + lhs + " " + e.op + " " + rhs + ")";
  const char* helper = e.op == "+" ? "add" : e.op == "-" ? "sub" : e.op == "*" ? "mul" : e.op == "/" ? "div" : "mod";
  return std::string("kpack_") + helper + "_(" + lhs + ", " + rhs + ", &kpack_bad)";
}

std::string EmitCallC(const Expr& e, const ExprBindings& b) {
  std::vector<std::string> args;
  for (const Expr& arg : e.args) args.push_back(EmitExprC(arg, b));
  if (e.name == "min" || e.name == "max") {
    // Folded from the left: min(a, b, c) is kpack_min_(kpack_min_(a, b), c).
    std::string out = args[0];
    for (size_t i = 1; i < args.size(); ++i) out = "kpack_" + e.name + "_(" + out + ", " + args[i] + ")";
    return out;
  }
  std::string out = "kpack_" + e.name + "_(";
  for (const std::string& arg : args) out += arg + ", ";
  return out + "&kpack_bad)";
}

}  // namespace

std::string EmitExprC(const Expr& e, const ExprBindings& b) {
  if (std::optional<int64_t> folded = EvaluateExpr(e, b)) {
    // INT64_MIN has no literal spelling in C.
    if (*folded == kInt64Min) return "INT64_MIN";
    return *folded < 0 ? "(" + std::to_string(*folded) + ")" : std::to_string(*folded);
  }
  switch (e.kind) {
    case Expr::Kind::kName:
      return "(int64_t)" + e.name;
    case Expr::Kind::kDevice:
      return "kpack_device_" + e.name;
    case Expr::Kind::kNull:
      return "NULL";  // only inside a comparison, which EmitBinaryC writes
    case Expr::Kind::kNegate:
      return "kpack_sub_(0, " + EmitExprC(e.args[0], b) + ", &kpack_bad)";
    case Expr::Kind::kNot:
      return "(int64_t)(!" + EmitExprC(e.args[0], b) + ")";
    case Expr::Kind::kBinary:
      return EmitBinaryC(e, b);
    case Expr::Kind::kConditional: {
      // A constant condition (a constexpr) leaves only its branch.
      if (std::optional<int64_t> cond = EvaluateExpr(e.args[0], b))
        return EmitExprC(e.args[*cond != 0 ? 1 : 2], b);
      return "(" + EmitExprC(e.args[0], b) + " ? " + EmitExprC(e.args[1], b) + " : " + EmitExprC(e.args[2], b) + ")";
    }
    case Expr::Kind::kCall:
      return EmitCallC(e, b);
    case Expr::Kind::kInteger:
      break;  // always folded above
  }
  return "0";
}

namespace {

// CollectUsed over what EmitExprC(e, b) emits: nothing of a folded
// subtree, only the branch of a constant condition.
void CollectEmitted(const Expr& e, const ExprBindings& b, Expr::Kind kind, std::set<std::string>& out) {
  if (EvaluateExpr(e, b)) return;
  if (e.kind == Expr::Kind::kConditional) {
    if (std::optional<int64_t> cond = EvaluateExpr(e.args[0], b)) {
      CollectEmitted(e.args[*cond != 0 ? 1 : 2], b, kind, out);
      return;
    }
  }
  if (e.kind == kind) out.insert(e.name);
  for (const Expr& arg : e.args) CollectEmitted(arg, b, kind, out);
}

}  // namespace

std::set<std::string> DeviceAttributesUsed(const Expr& e, const ExprBindings& b) {
  std::set<std::string> out;
  CollectEmitted(e, b, Expr::Kind::kDevice, out);
  return out;
}

std::set<std::string> FunctionsUsed(const Expr& e, const ExprBindings& b) {
  std::set<std::string> out;
  CollectEmitted(e, b, Expr::Kind::kCall, out);
  return out;
}

}  // namespace kpack
