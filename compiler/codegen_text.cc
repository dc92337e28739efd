#include "codegen_text.h"

#include "tensordesc.h"

#include <cstdio>

namespace kpack::codegen {

const char* const kCheckedArithmeticC = R"(static inline int64_t kpack_add_(int64_t a, int64_t b, int *bad) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) *bad = 1;
  return r;
}
static inline int64_t kpack_sub_(int64_t a, int64_t b, int *bad) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) *bad = 1;
  return r;
}
static inline int64_t kpack_mul_(int64_t a, int64_t b, int *bad) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) *bad = 1;
  return r;
}
static inline int64_t kpack_div_(int64_t a, int64_t b, int *bad) {
  if (b == 0 || (a == INT64_MIN && b == -1)) { *bad = 1; return 0; }
  return a / b;
}
static inline int64_t kpack_mod_(int64_t a, int64_t b, int *bad) {
  if (b == 0 || (a == INT64_MIN && b == -1)) { *bad = 1; return 0; }
  return a % b;
}
static inline int64_t kpack_cdiv_(int64_t a, int64_t b, int *bad) {
  int64_t q = kpack_div_(a, b, bad);
  return (b != 0 && b != -1 && a % b != 0 && ((a > 0) == (b > 0))) ? q + 1 : q;
}
static inline int64_t kpack_min_(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t kpack_max_(int64_t a, int64_t b) { return a > b ? a : b; }
)";

namespace {

// The helpers of the launch expressions' functions that translate Python
// (expr.h; expr.cc folds with the same semantics), by function name.  Each
// is emitted only where some launch expression calls it, so that the
// launchers of packages that use none stay as they were.
struct FunctionHelper {
  const char* function;
  const char* text;
};
const FunctionHelper kFunctionHelpers[] = {
    {"floordiv", R"(/* Python's a // b: rounded toward negative infinity. */
static inline int64_t kpack_floordiv_(int64_t a, int64_t b, int *bad) {
  if (b == 0 || (a == INT64_MIN && b == -1)) { *bad = 1; return 0; }
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
)"},
    {"floormod", R"(/* Python's a % b: the sign of b.  INT64_MIN % -1 traps in C, and is 0. */
static inline int64_t kpack_floormod_(int64_t a, int64_t b, int *bad) {
  if (b == 0) { *bad = 1; return 0; }
  if (b == -1) return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
)"},
    {"gcd", R"(/* Python's math.gcd: non-negative; gcd(INT64_MIN, 0) = 2^63 does not fit. */
static inline int64_t kpack_gcd_(int64_t a, int64_t b, int *bad) {
  uint64_t x = a < 0 ? 0 - (uint64_t)a : (uint64_t)a;
  uint64_t y = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
  while (y != 0) { uint64_t t = x % y; x = y; y = t; }
  if (x > (uint64_t)INT64_MAX) { *bad = 1; return 0; }
  return (int64_t)x;
}
)"},
    {"log2", R"(/* floor(log2(x)); x <= 0 has none. */
static inline int64_t kpack_log2_(int64_t x, int *bad) {
  if (x <= 0) { *bad = 1; return 0; }
  return 63 - __builtin_clzll((uint64_t)x);
}
)"},
    {"next_pow2", R"(/* triton.next_power_of_2: 0 for x <= 0; above 2^62, 2^63 does not fit. */
static inline int64_t kpack_next_pow2_(int64_t x, int *bad) {
  if (x <= 0) return 0;
  if (x > ((int64_t)1 << 62)) { *bad = 1; return 0; }
  uint64_t n = (uint64_t)x - 1;
  n |= n >> 1; n |= n >> 2; n |= n >> 4; n |= n >> 8; n |= n >> 16; n |= n >> 32;
  return (int64_t)(n + 1);
}
)"},
};

}  // namespace

std::string ConstexprCLiteral(const Constexpr& c, const ConstexprValue& v) {
  switch (c.kind) {
    case ConstexprKind::kDtype: return std::string(Info(v.dtype).enumerator);
    case ConstexprKind::kStr: return CString(v.text);
    case ConstexprKind::kFloat: {
      char text[40];
      std::snprintf(text, sizeof text, "%.17g", v.real);
      std::string literal = text;
      if (literal.find_first_of(".eEn") == std::string::npos) literal += ".0";
      return literal;
    }
    case ConstexprKind::kBool:
    case ConstexprKind::kInt: break;
  }
  return std::to_string(v.integer);
}

std::string FunctionHelperC(const std::string& function) {
  for (const FunctionHelper& h : kFunctionHelpers)
    if (function == h.function) return h.text;
  return "";
}

const std::vector<std::string>& FunctionHelperNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const FunctionHelper& h : kFunctionHelpers) out.push_back(h.function);
    return out;
  }();
  return names;
}


std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// A C string literal.  Manifest text (doc strings) may hold anything, so
// escape everything outside printable ASCII.
std::string CString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f && c != '?') {  // '?' avoids trigraphs
      out += static_cast<char>(c);
    } else {
      static const char kOctal[] = "01234567";
      out += '\\';
      out += kOctal[(c >> 6) & 7];
      out += kOctal[(c >> 3) & 7];
      out += kOctal[c & 7];
    }
  }
  return out + "\"";
}

// Text for a C comment: no "*/" can end it early, no control characters.
std::string CommentText(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '*' && i + 1 < s.size() && s[i + 1] == '/') {
      out += "* /";
      ++i;
    } else if (c == '\n') {
      out += "\n *";
      if (i + 1 < s.size() && s[i + 1] != '\n') out += ' ';
    } else if (c < 0x20 || c == 0x7f) {
      out += ' ';
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// The runtime's arch code as C: "90", "90 | KPACK_ARCH_SPECIFIC".
std::string ArchCode(const Arch& a) {
  std::string out = std::to_string(a.number);
  if (a.variant == Arch::Variant::kSpecific) out += " | KPACK_ARCH_SPECIFIC";
  if (a.variant == Arch::Variant::kFamily) out += " | KPACK_ARCH_FAMILY";
  return out;
}

std::string ArchList(const std::vector<Arch>& archs) {
  std::string out;
  for (const Arch& a : archs) {
    if (!out.empty()) out += ',';
    out += a.Name();
  }
  return out;
}

Scalar ElementScalar(const Specialization& s, const ParamType& t) {
  if (t.dtype_constexpr.empty()) return t.scalar;
  const Kernel& k = *s.kernel;
  for (size_t i = 0; i < k.constexprs.size(); ++i)
    if (k.constexprs[i].name == t.dtype_constexpr) return s.values[i].dtype;
  return t.scalar;
}

// "const kpack_f16 *x" in a typed launcher.
// A tensordesc param adds its shape and strides after the base pointer.
std::string TypedParam(const Specialization& s, const Param& p) {
  std::string type = std::string(p.type.is_const ? "const " : "") + std::string(Info(ElementScalar(s, p.type)).c_type);
  if (p.tensordesc) return Join({type + " *" + p.name, DescShapeParams(p)[0], DescShapeParams(p)[1]}, ", ");
  return p.type.is_pointer ? type + " *" + p.name : type + " " + p.name;
}

// "const void *x" in a dispatcher, where the element type varies.
std::string DispatchParam(const Param& p) {
  std::string base;
  if (p.type.dtype_constexpr.empty()) {
    std::string type = std::string(p.type.is_const ? "const " : "") + std::string(Info(p.type.scalar).c_type);
    base = p.type.is_pointer ? type + " *" + p.name : type + " " + p.name;
  } else {
    base = std::string(p.type.is_const ? "const void *" : "void *") + p.name;
  }
  return p.tensordesc ? Join({base, DescShapeParams(p)[0], DescShapeParams(p)[1]}, ", ") : base;
}

std::string ConstexprCType(const Constexpr& c) {
  switch (c.kind) {
    case ConstexprKind::kDtype: return "kpack_dtype";
    case ConstexprKind::kFloat: return "double";
    case ConstexprKind::kStr: return "const char *";
    default: return "int";
  }
}

std::string Join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// The specializations of `k` that the API names (the other builds are
// chosen inside their typed launcher).
std::vector<const Specialization*> SpecsOf(const Kernel& k, const std::vector<Specialization>& specs) {
  std::vector<const Specialization*> out;
  for (const Specialization& s : specs)
    if (s.kernel == &k && s.api) out.push_back(&s);
  return out;
}

size_t CountApiSpecs(const std::vector<Specialization>& specs) {
  size_t n = 0;
  for (const Specialization& s : specs) n += s.api ? 1 : 0;
  return n;
}

namespace {

// "a, b and c": the params `pick` selects, in order.
std::string ParamList(const Kernel& k, bool (*pick)(const Param&)) {
  std::vector<std::string> names;
  for (const Param& p : k.params)
    if (pick(p)) names.push_back(p.name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

}  // namespace

// "x, n and stride": the params that are `divisibility: auto`.
std::string AutoParams(const Kernel& k) { return ParamList(k, [](const Param& p) { return p.divisibility_auto; }); }

// "n and stride": the params that are `width: auto`.
std::string NarrowParams(const Kernel& k) { return ParamList(k, [](const Param& p) { return p.width_auto; }); }

// "stride_d": the params that are `equal_to_1: auto`.
std::string OneParams(const Kernel& k) { return ParamList(k, [](const Param& p) { return p.equal_to_1; }); }

// The low four bits survive the casts, negative values included.
std::string AlignedVariantTest(const Kernel& k, std::string* what) {
  if (!k.HasAlignedVariant()) return "";
  std::vector<std::string> tests, values, said;
  for (const Param& p : k.params)
    if (p.divisibility_auto)
      values.push_back(p.type.is_pointer ? "(uint64_t)(uintptr_t)" + p.name : "(uint64_t)" + p.name);
  if (!values.empty()) tests.push_back("((" + Join(values, " | ") + ") & 15) == 0");
  for (const Param& p : k.params)
    if (p.equal_to_1) tests.push_back(p.name + " == 1");
  if (!values.empty()) said.push_back("every divisibility: auto param (" + AutoParams(k) + ") is a multiple of 16");
  if (!OneParams(k).empty()) said.push_back("every equal_to_1 param (" + OneParams(k) + ") is 1");
  if (what) *what = Join(said, " and ");
  return Join(tests, " && ");
}


// "kpack_stream stream, kpack_dtype T, int BLOCK, const void *x, ...".
std::vector<std::string> LeadingParams(const Kernel& k) {
  std::vector<std::string> params = {"kpack_stream stream"};
  if (k.launch.pdl == Pdl::kPerCall) params.push_back("int pdl");
  return params;
}

std::string DispatcherParams(const Kernel& k) {
  std::vector<std::string> params = LeadingParams(k);
  for (const Constexpr& c : k.constexprs)
    if (c.InApi()) params.push_back(ConstexprCType(c) + (c.kind == ConstexprKind::kStr ? "" : " ") + c.name);
  for (const Param& p : k.params) params.push_back(DispatchParam(p));
  return Join(params, ", ");
}

}  // namespace kpack::codegen
