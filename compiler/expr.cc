#include "expr.h"

#include <cctype>
#include <limits>

namespace kpack {
namespace {

class Parser {
 public:
  Parser(const std::string& text, const SourceLoc& start, Diagnostics& diag)
      : text_(text), start_(start), diag_(diag) {}

  std::optional<Expr> Parse() {
    std::optional<Expr> e = ParseSum();
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

  std::optional<Expr> ParseSum() {
    std::optional<Expr> lhs = ParseProduct();
    while (lhs) {
      SkipSpace();
      SourceLoc loc = Here();
      char op = pos_ < text_.size() ? text_[pos_] : 0;
      if (op != '+' && op != '-') break;
      ++pos_;
      std::optional<Expr> rhs = ParseProduct();
      if (!rhs) return std::nullopt;
      lhs = Binary(op, std::move(*lhs), std::move(*rhs), loc);
    }
    return lhs;
  }

  std::optional<Expr> ParseProduct() {
    std::optional<Expr> lhs = ParseUnary();
    while (lhs) {
      SkipSpace();
      SourceLoc loc = Here();
      char op = pos_ < text_.size() ? text_[pos_] : 0;
      if (op != '*' && op != '/' && op != '%') break;
      ++pos_;
      std::optional<Expr> rhs = ParseUnary();
      if (!rhs) return std::nullopt;
      lhs = Binary(op, std::move(*lhs), std::move(*rhs), loc);
    }
    return lhs;
  }

  static Expr Binary(char op, Expr lhs, Expr rhs, const SourceLoc& loc) {
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
    if (Accept('-')) {
      ++depth_;
      std::optional<Expr> operand = ParseUnary();
      --depth_;
      if (!operand) return std::nullopt;
      Expr e;
      e.kind = Expr::Kind::kNegate;
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
      std::optional<Expr> inner = ParseSum();
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
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        return Fail("integer literal does not fit in 64 bits");
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

  std::optional<Expr> ParseNameOrCall(const SourceLoc& loc) {
    size_t begin = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    Expr e;
    e.kind = Expr::Kind::kName;
    e.name = text_.substr(begin, pos_ - begin);
    e.loc = loc;
    if (!Accept('(')) return e;
    e.kind = Expr::Kind::kCall;
    ++depth_;
    do {
      std::optional<Expr> arg = ParseSum();
      if (!arg) return std::nullopt;
      e.args.push_back(std::move(*arg));
    } while (Accept(','));
    --depth_;
    if (!Accept(')')) return Fail("expected ')' or ',' in call of " + e.name + "()");
    return e;
  }

  static constexpr int kMaxDepth = 64;
  const std::string& text_;
  SourceLoc start_;
  Diagnostics& diag_;
  size_t pos_ = 0;
  int depth_ = 0;
};

bool CheckCall(const Expr& e, const std::function<NameKind(const std::string&)>& lookup,
               bool allow_params, Diagnostics& diag) {
  if (e.name == "sizeof") {
    if (e.args.size() != 1 || e.args[0].kind != Expr::Kind::kName ||
        lookup(e.args[0].name) != NameKind::kDtypeConstexpr) {
      diag.Error(e.loc, "sizeof() takes the name of a dtype constexpr");
      return false;
    }
    return true;
  }
  if (e.name != "min" && e.name != "max" && e.name != "cdiv") {
    diag.Error(e.loc, "unknown function '" + e.name + "' (expected min, max, cdiv or sizeof)");
    return false;
  }
  if (e.args.size() != 2) {
    diag.Error(e.loc, e.name + "() takes 2 arguments, got " + std::to_string(e.args.size()));
    return false;
  }
  bool ok = true;
  for (const Expr& arg : e.args) ok = CheckExpr(arg, lookup, allow_params, diag) && ok;
  return ok;
}

bool CheckName(const Expr& e, const std::function<NameKind(const std::string&)>& lookup,
               bool allow_params, Diagnostics& diag) {
  switch (lookup(e.name)) {
    case NameKind::kIntConstexpr:
    case NameKind::kBoolConstexpr:
      return true;
    case NameKind::kIntegerParam:
      if (allow_params) return true;
      diag.Error(e.loc, "'" + e.name + "' is a runtime parameter; only constexprs are allowed here");
      return false;
    case NameKind::kDtypeConstexpr:
      diag.Error(e.loc, "'" + e.name + "' is a dtype; use sizeof(" + e.name + ")");
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

// Checked 64-bit arithmetic for constant folding; nullopt on overflow or
// division by zero, so folding never hides undefined behaviour.
std::optional<int64_t> Apply(char op, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (op) {
    case '+': if (__builtin_add_overflow(a, b, &r)) return std::nullopt; return r;
    case '-': if (__builtin_sub_overflow(a, b, &r)) return std::nullopt; return r;
    case '*': if (__builtin_mul_overflow(a, b, &r)) return std::nullopt; return r;
    case '/':
      if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return std::nullopt;
      return a / b;
    case '%':
      if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return std::nullopt;
      return a % b;
    default: return std::nullopt;
  }
}

std::optional<int64_t> ApplyCall(const std::string& name, int64_t a, int64_t b) {
  if (name == "min") return a < b ? a : b;
  if (name == "max") return a > b ? a : b;
  if (name == "cdiv") {
    if (b == 0) return std::nullopt;
    std::optional<int64_t> q = Apply('/', a, b);
    if (!q) return std::nullopt;
    // Ceiling for positive divisors; C truncates toward zero.
    return (a % b != 0 && ((a > 0) == (b > 0))) ? *q + 1 : *q;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Expr> ParseExpr(const std::string& text, const SourceLoc& start, Diagnostics& diag) {
  return Parser(text, start, diag).Parse();
}

bool CheckExpr(const Expr& e, const std::function<NameKind(const std::string&)>& lookup,
               bool allow_params, Diagnostics& diag) {
  switch (e.kind) {
    case Expr::Kind::kInteger:
      return true;
    case Expr::Kind::kName:
      return CheckName(e, lookup, allow_params, diag);
    case Expr::Kind::kCall:
      return CheckCall(e, lookup, allow_params, diag);
    case Expr::Kind::kNegate:
    case Expr::Kind::kBinary: {
      bool ok = true;
      for (const Expr& arg : e.args) ok = CheckExpr(arg, lookup, allow_params, diag) && ok;
      return ok;
    }
  }
  return false;
}

std::optional<int64_t> EvaluateExpr(const Expr& e, const ExprBindings& b) {
  switch (e.kind) {
    case Expr::Kind::kInteger:
      return e.value;
    case Expr::Kind::kName:
      return b.constant(e.name);
    case Expr::Kind::kNegate: {
      std::optional<int64_t> v = EvaluateExpr(e.args[0], b);
      if (!v) return std::nullopt;
      return Apply('-', 0, *v);
    }
    case Expr::Kind::kBinary: {
      std::optional<int64_t> lhs = EvaluateExpr(e.args[0], b);
      std::optional<int64_t> rhs = EvaluateExpr(e.args[1], b);
      if (!lhs || !rhs) return std::nullopt;
      return Apply(e.op, *lhs, *rhs);
    }
    case Expr::Kind::kCall: {
      if (e.name == "sizeof") return b.size_of(e.args[0].name);
      std::optional<int64_t> lhs = EvaluateExpr(e.args[0], b);
      std::optional<int64_t> rhs = EvaluateExpr(e.args[1], b);
      if (!lhs || !rhs) return std::nullopt;
      return ApplyCall(e.name, *lhs, *rhs);
    }
  }
  return std::nullopt;
}

namespace {

int Precedence(const Expr& e) {
  if (e.kind != Expr::Kind::kBinary) return 3;
  return (e.op == '+' || e.op == '-') ? 1 : 2;
}

}  // namespace

std::string FormatExpr(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kInteger: return std::to_string(e.value);
    case Expr::Kind::kName: return e.name;
    case Expr::Kind::kNegate: {
      std::string inner = FormatExpr(e.args[0]);
      return Precedence(e.args[0]) < 3 ? "-(" + inner + ")" : "-" + inner;
    }
    case Expr::Kind::kBinary: {
      std::string lhs = FormatExpr(e.args[0]), rhs = FormatExpr(e.args[1]);
      if (Precedence(e.args[0]) < Precedence(e)) lhs = "(" + lhs + ")";
      // Right operands of equal precedence need parentheses: a - (b - c).
      if (Precedence(e.args[1]) <= Precedence(e) && e.args[1].kind == Expr::Kind::kBinary) rhs = "(" + rhs + ")";
      return lhs + " " + e.op + " " + rhs;
    }
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

std::string EmitExprC(const Expr& e, const ExprBindings& b) {
  if (std::optional<int64_t> folded = EvaluateExpr(e, b)) {
    // INT64_MIN has no literal spelling in C.
    if (*folded == std::numeric_limits<int64_t>::min()) return "INT64_MIN";
    return *folded < 0 ? "(" + std::to_string(*folded) + ")" : std::to_string(*folded);
  }
  switch (e.kind) {
    case Expr::Kind::kName:
      return "(int64_t)" + e.name;
    case Expr::Kind::kNegate:
      return "kpack_sub_(0, " + EmitExprC(e.args[0], b) + ", &kpack_bad)";
    case Expr::Kind::kBinary: {
      std::string lhs = EmitExprC(e.args[0], b), rhs = EmitExprC(e.args[1], b);
      switch (e.op) {
        case '+': return "kpack_add_(" + lhs + ", " + rhs + ", &kpack_bad)";
        case '-': return "kpack_sub_(" + lhs + ", " + rhs + ", &kpack_bad)";
        case '*': return "kpack_mul_(" + lhs + ", " + rhs + ", &kpack_bad)";
        case '/': return "kpack_div_(" + lhs + ", " + rhs + ", &kpack_bad)";
        default: return "kpack_mod_(" + lhs + ", " + rhs + ", &kpack_bad)";
      }
    }
    case Expr::Kind::kCall: {
      std::string lhs = EmitExprC(e.args[0], b), rhs = EmitExprC(e.args[1], b);
      if (e.name == "cdiv") return "kpack_cdiv_(" + lhs + ", " + rhs + ", &kpack_bad)";
      return "kpack_" + e.name + "_(" + lhs + ", " + rhs + ")";
    }
    case Expr::Kind::kInteger:
      break;  // always folded above
  }
  return "0";
}

}  // namespace kpack
