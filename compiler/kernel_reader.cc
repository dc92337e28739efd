#include "kernel_reader.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <set>
#include <sstream>

#include "auto_rules.h"
#include "cuda_reader.h"
#include "debug_guard.h"
#include "flag_policy.h"
#include "tensordesc.h"
#include "triton_merge.h"
#include "triton_reader.h"
#include "tune_reader.h"

namespace kpack {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool IsNamePart(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
  });
}

}  // namespace

std::string FloatText(double value) {
  // The shortest digits that read back as `value`, then Python's layout:
  // positional for exponents -4..15 with at least one decimal, else
  // d.ddde[+-]XX.
  std::array<char, 64> buffer{};
  auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value, std::chars_format::scientific);
  std::string sci(buffer.data(), result.ptr);  // "-1.2345e-06"
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  int exponent = std::stoi(sci.substr(e + 1));
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exponent) + 1) + "." + digits.substr(static_cast<size_t>(exponent) + 1);
    }
  } else {
    out = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "");
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exp;
  }
  return (negative ? "-" : "") + out;
}

std::vector<ConstexprValue> BothBoolValues(const SourceLoc& loc) {
  std::vector<ConstexprValue> out(2);
  out[1].integer = 1;
  for (ConstexprValue& v : out) v.loc = loc;
  return out;
}

std::optional<ConstexprValue> ReadConstexprValue(FileReader& r, const YAML::Node& item, ConstexprKind kind,
                                                 const std::string& what) {
  ConstexprValue value;
  value.loc = r.Loc(item);
  switch (kind) {
    case ConstexprKind::kInt: {
      std::optional<int64_t> i = r.Integer(item, "a value of int constexpr '" + what + "'");
      if (!i) return std::nullopt;
      if (*i < INT32_MIN || *i > INT32_MAX) {
        r.Error(item, "value " + std::to_string(*i) + " of '" + what + "' does not fit in a C int");
        return std::nullopt;
      }
      value.integer = *i;
      return value;
    }
    case ConstexprKind::kBool: {
      std::optional<bool> b = r.Bool(item, "a value of bool constexpr '" + what + "'");
      if (!b) return std::nullopt;
      value.integer = *b ? 1 : 0;
      return value;
    }
    case ConstexprKind::kFloat: {
      std::optional<double> d = r.Float(item, "a value of float constexpr '" + what + "'");
      if (!d) return std::nullopt;
      value.real = *d == 0 ? 0.0 : *d;  // -0.0 and 0.0 are one value (and one name)
      value.text = FloatText(value.real);
      return value;
    }
    case ConstexprKind::kStr: {
      std::optional<std::string> s = r.String(item, "a value of str constexpr '" + what + "'");
      if (!s) return std::nullopt;
      // The value is part of the specialization's C name.
      if (!IsNamePart(*s)) {
        r.Error(item, "str value '" + *s + "' of '" + what + "' must hold only letters, digits and '_' (it is "
                      "part of the specialization's name)");
        return std::nullopt;
      }
      value.text = *s;
      return value;
    }
    case ConstexprKind::kDtype:
      break;
  }
  std::optional<std::string> s = r.String(item, "a dtype");
  if (!s) return std::nullopt;
  std::optional<Scalar> dtype = ParseScalar(*s);
  if (!dtype || !IsDtype(*dtype)) {
    r.Error(item, "unknown dtype '" + *s + "' (expected one of: " + std::string(DtypeList()) + ")");
    return std::nullopt;
  }
  value.dtype = *dtype;
  return value;
}

void ReadConstexprValues(FileReader& r, const YAML::Node& values, Constexpr& c) {
  for (const YAML::Node& item : values) {
    std::optional<ConstexprValue> value = ReadConstexprValue(r, item, c.kind, c.name);
    if (!value) continue;
    bool duplicate = std::any_of(c.values.begin(), c.values.end(),
                                 [&](const ConstexprValue& other) { return SameValue(other, *value); });
    if (duplicate) {
      r.Error(item, "duplicate value in '" + c.name + "'");
      continue;
    }
    c.values.push_back(*value);
  }
}

bool KernelReader::Read() {
  errors_before_ = r_.diag().error_count();
  root_ = r_.Parse();
  if (!root_) return false;
  if (!r_.CheckMap(*root_, "a kernel manifest",
                   {"kernel", "language", "source", "module", "entry", "doc", "constexprs", "options", "params",
                    "exclude", "launch", "archs", "ptx", "nvcc_flags", "debug", "allow_debug", "autotune",
                    "variants", "load", "assume", "tune", "batch"},
                   {"kernel", "entry", "params", "launch"}))
    return false;
  k_.manifest_path = r_.file();
  k_.archs = package_.archs;
  k_.ptx = package_.ptx;
  k_.batch = package_.batch;
  k_.nvcc_flags = package_.nvcc_flags;
  k_.nvcc_flag_locs = package_.nvcc_flag_locs;
  k_.allow_debug = package_.allow_debug;
  k_.python_path = package_.python_path;
  k_.include_dirs = package_.include_dirs;
  k_.assume = package_.assume;
  k_.loc = r_.Loc(*root_);
  // The language first (other keys are read differently for Triton), then
  // the constexprs (params name dtype constexprs), then the rest.
  for (const char* first : {"language", "constexprs"})
    for (const auto& entry : *root_)
      if (entry.first.Scalar() == first) ReadField(first, entry.first, entry.second);
  for (const auto& entry : *root_)
    if (entry.first.Scalar() != "language" && entry.first.Scalar() != "constexprs")
      ReadField(entry.first.Scalar(), entry.first, entry.second);
  if (k_.source_loc.line == 0 && k_.module.empty())
    r_.diag().Error(r_.Loc(*root_), k_.language == Language::kTriton
                                         ? "a kernel manifest is missing required key 'source' (or 'module')"
                                         : "a kernel manifest is missing required key 'source'");
  if (!k_.module.empty()) ResolveTritonModule(r_, k_);
  return r_.diag().error_count() == errors_before_;
}

void KernelReader::ReadField(const std::string& key, const YAML::Node& key_node, const YAML::Node& v) {
  if (key == "kernel") {
    if (auto s = r_.Identifier(v, "kernel name")) k_.name = *s;
    k_.loc = r_.Loc(v);
  } else if (key == "language") {
    if (auto s = r_.String(v, "language")) {
      if (*s == "cuda") k_.language = Language::kCuda;
      else if (*s == "triton") k_.language = Language::kTriton;
      else r_.Error(v, "unknown language '" + *s + "' (expected cuda or triton)");
    }
  } else if (key == "source") {
    ReadSource(v);
  } else if (key == "entry") {
    ReadEntry(r_, v, k_);
  } else if (key == "doc") {
    if (auto s = r_.String(v, "doc")) k_.doc = *s;
  } else if (key == "constexprs") {
    ReadConstexprs(v);
  } else if (key == "params") {
    k_.params_loc = r_.Loc(key_node);
    ReadParams(v);
  } else if (key == "exclude") {
    exclude_ = v;
  } else if (key == "tune") {
    tune_key_ = key_node;
    tune_ = v;
  } else if (key == "launch") {
    ReadLaunch(v);
  } else if (key == "archs") {
    k_.archs = r_.Archs(v);
  } else if (key == "ptx") {
    if (auto b = r_.Bool(v, "ptx")) k_.ptx = *b;
  } else if (key == "batch") {
    if (k_.language == Language::kTriton) {
      r_.Error(v, "batch is for CUDA kernels: Triton compiles one kernel per unit, in a compiler process kept "
                  "for the build");
    } else if (auto i = r_.Integer(v, "batch")) {
      if (*i < 1 || *i > kMaxBatch) r_.Error(v, "batch must be between 1 and " + std::to_string(kMaxBatch));
      else k_.batch = static_cast<uint32_t>(*i);
    }
  } else if (key == "nvcc_flags") {
    for (std::string& flag : FlagList(r_, v, k_.nvcc_flag_locs)) k_.nvcc_flags.push_back(std::move(flag));
  } else if (key == "debug") {
    if (auto b = r_.Bool(v, "debug"); b && *b) {
      k_.debug = true;
      k_.debug_reason = "debug: true";
      k_.debug_loc = r_.Loc(key_node);
    }
  } else if (key == "allow_debug") {
    if (auto b = r_.Bool(v, "allow_debug")) k_.allow_debug = *b;
  } else if (key == "options") {
    triton_keys_.options = v;
  } else if (key == "autotune") {
    triton_keys_.autotune = v;
  } else if (key == "module" || key == "variants" || key == "load" || key == "assume") {
    ReadTritonKey(r_, key, key_node, v, k_);
  }
}

void KernelReader::ReadSource(const YAML::Node& v) {
  std::optional<std::string> s = r_.String(v, "source");
  if (!s) return;
  k_.source_text = *s;
  k_.source_loc = r_.Loc(v);
  if (s->size() >= 2 && s->front() == '<' && s->back() == '>') {
    ResolveIncludedSource(r_, v, *s, k_);
    return;
  }
  k_.source_path = ResolveBeside(r_.file(), *s);
  k_.source_name = RootRelative(k_.source_path, r_.root());
  if (std::string e = IncludePathProblem("source path '" + k_.source_path + "'", k_.source_path); !e.empty()) {
    r_.Error(v, e);
    return;
  }
  if (!r_.Inside(v, "source file '" + *s + "'", k_.source_path)) return;
  if (!InputExists(k_.source_path, r_.options()))
    r_.Error(v, "source file '" + *s + "' not found (looked for " + k_.source_path + ")");
}

bool KernelReader::ReadConstexprType(const YAML::Node& type, Constexpr& c) {
  std::optional<std::string> s = r_.String(type, "constexpr type");
  if (!s) return true;
  if (*s == "int") c.kind = ConstexprKind::kInt;
  else if (*s == "bool") c.kind = ConstexprKind::kBool;
  else if (*s == "dtype") c.kind = ConstexprKind::kDtype;
  else if (*s == "cpp" && k_.language == Language::kCuda) {
    c.kind = ConstexprKind::kStr;
    c.cpp_name = true;
  }
  else if (*s == "float" && k_.language == Language::kTriton) c.kind = ConstexprKind::kFloat;
  else if (*s == "str" && k_.language == Language::kTriton) c.kind = ConstexprKind::kStr;
  else if (*s == "cpp") {
    r_.Error(type, "constexpr type 'cpp' applies to CUDA kernels only (a C++ name as a template argument)");
    return false;
  } else if (*s == "float" || *s == "str") {
    r_.Error(type, "constexpr type '" + *s + "' applies to Triton kernels only (a C++ template takes int, bool "
                   "and type parameters here)");
    return false;
  } else {
    r_.Error(type, "unknown constexpr type '" + *s + "' (expected " +
                       (k_.language == Language::kTriton ? "int, bool, dtype, float or str)" : "int, bool, dtype or cpp)"));
    return false;
  }
  return true;
}

void KernelReader::ReadConstexprs(const YAML::Node& v) {
  if (!v.IsSequence()) {
    r_.Error(v, "constexprs must be a list");
    return;
  }
  for (const YAML::Node& item : v) {
    if (!r_.CheckMap(item, "a constexpr", {"name", "type", "values", "tag", "rule", "auto"}, {"name", "type"}))
      continue;
    Constexpr c;
    c.loc = r_.Loc(item);
    YAML::Node name = FileReader::Get(item, "name");
    YAML::Node type = FileReader::Get(item, "type");
    YAML::Node values = FileReader::Get(item, "values");
    YAML::Node tag = FileReader::Get(item, "tag");
    YAML::Node rule = FileReader::Get(item, "rule");
    YAML::Node auto_rule = FileReader::Get(item, "auto");
    // An invalid name is still recorded, so that uses of it do not cascade
    // into "unknown type" errors; the kernel is rejected all the same.
    if (name.IsDefined()) c.name = r_.SpelledIdentifier(name, "constexpr name");
    if (type.IsDefined() && !ReadConstexprType(type, c)) continue;
    c.tag = c.kind == ConstexprKind::kDtype || c.kind == ConstexprKind::kStr ? "" : Lower(c.name);
    if (tag.IsDefined()) {
      if (auto s = r_.String(tag, "tag")) {
        if (!s->empty() && !IsNamePart(*s)) r_.Error(tag, "tag '" + *s + "' may only hold letters, digits and '_'");
        else c.tag = *s;
      }
    }
    if (rule.IsDefined()) {
      if (rule.IsScalar() && rule.Scalar() == "none" && rule.Tag() != "!") c.rule_none = true;
      else if ((c.rule = ReadExpr(r_, rule, "rule"))) c.rule_source = "rule at " + r_.Loc(rule).ToString();
    }
    if (auto_rule.IsDefined()) {  // checked with the whole kernel (auto_rules.h)
      c.auto_loc = r_.Loc(auto_rule);
      c.auto_rule = ReadExpr(r_, auto_rule, "auto");
    }
    if (values.IsDefined() && r_.NonEmptySequence(values, "values of '" + c.name + "'")) {
      if (c.cpp_name) ReadCppNameValues(r_, values, c);
      else ReadConstexprValues(r_, values, c);
    } else if (!values.IsDefined() && c.rule && c.kind == ConstexprKind::kBool)
      c.values = BothBoolValues(c.loc);  // a computed bool is built for what its rule may give
    else if (!values.IsDefined() && k_.language != Language::kTriton)
      r_.Error(item, "a constexpr is missing required key 'values'");
    // Options named among the constexprs (the form before `options:`) are
    // options unless the kernel has a tl.constexpr of that name
    // (triton_merge.cc decides once it has read the source).
    c.option = k_.language == Language::kTriton && IsTritonOption(c.name);
    k_.constexprs.push_back(std::move(c));
  }
}

void KernelReader::ReadParams(const YAML::Node& v) {
  if (!v.IsSequence()) {
    r_.Error(v, "params must be a list");
    return;
  }
  for (const YAML::Node& item : v) ReadParam(item);
}

void KernelReader::ReadParam(const YAML::Node& item) {
  if (!r_.CheckMap(item, "a param",
                   {"name", "type", "divisibility", "width", "equal_to_1", "launch_only", "dtype", "block",
                    "padding", "swizzle"},
                   {"name", "type"}))
    return;
  Param p;
  p.loc = r_.Loc(item);
  YAML::Node name = FileReader::Get(item, "name");
  YAML::Node type = FileReader::Get(item, "type");
  YAML::Node divisibility = FileReader::Get(item, "divisibility");
  if (divisibility.IsDefined()) ReadDivisibility(divisibility, p);
  YAML::Node width = FileReader::Get(item, "width");
  if (width.IsDefined()) ReadWidth(width, p);
  YAML::Node equal_to_1 = FileReader::Get(item, "equal_to_1");
  if (equal_to_1.IsDefined()) {
    p.equal_to_1_loc = r_.Loc(equal_to_1);
    if (equal_to_1.IsScalar() && equal_to_1.Scalar() == "auto") p.equal_to_1 = true;
    else r_.Error(equal_to_1, "equal_to_1 must be auto (the aligned builds take the value 1 as a constant, as Triton's "
                              "JIT does)");
  }
  YAML::Node launch_only = FileReader::Get(item, "launch_only");
  if (launch_only.IsDefined())
    if (std::optional<bool> b = r_.Bool(launch_only, "launch_only")) p.launch_only = *b;
  p.name = r_.SpelledIdentifier(name, "param name");
  std::optional<std::string> t = r_.String(type, "param type");
  if (p.name.empty() || !t) return;
  p.type_text = *t;
  if (bool is_const; IsTensorDescType(*t, &is_const)) {
    if (ReadTensorDesc(r_, item, k_, is_const, p)) k_.params.push_back(std::move(p));
    return;  // CheckTensorDescs checks the rest with the whole kernel
  }
  for (const char* key : kTensorDescKeys)
    if (YAML::Node v = FileReader::Get(item, key); v.IsDefined())
      r_.Error(v, std::string(key) + " applies to tensordesc params only ('" + p.name + "' is " + p.type_text + ")");
  if (!ParseParamType(*t, type, p.type)) return;
  // Triton hints only integers and pointers (a pointer's hint is its
  // address: 16-byte aligned).
  if (p.divisibility && !p.type.is_pointer && (!Info(p.type.scalar).is_integer || p.type.scalar == Scalar::kBool))
    r_.diag().Error(p.divisibility_loc, "divisibility applies only to pointer and integer params ('" + p.name +
                                            "' is " + p.type_text + ")");
  // The JIT narrows only 64-bit integers it was given as Python ints.
  if (p.width_auto && (p.type.is_pointer || !p.type.dtype_constexpr.empty() || p.type.scalar != Scalar::kI64))
    r_.diag().Error(p.width_loc, "width: auto applies only to i64 params ('" + p.name + "' is " + p.type_text + ")");
  if (p.launch_only && (p.divisibility_loc.line > 0 || p.width_loc.line > 0))
    r_.diag().Error(p.divisibility_loc.line > 0 ? p.divisibility_loc : p.width_loc,
                    "'" + p.name + "' is launch-only: it is not passed to the kernel, so divisibility and width do "
                    "not apply");
  // The JIT makes a constant only of an integer equal to 1, which then has
  // no divisibility hint to carry.
  if (p.equal_to_1 && (p.type.is_pointer || !Info(p.type.scalar).is_integer || p.type.scalar == Scalar::kBool))
    r_.diag().Error(p.equal_to_1_loc, "equal_to_1 applies only to integer params ('" + p.name + "' is " +
                                          p.type_text + ")");
  else if (p.equal_to_1 && p.divisibility)
    r_.diag().Error(p.equal_to_1_loc, "'" + p.name + "' cannot be both equal_to_1 and divisible by 16 in the aligned "
                                          "builds; give it divisibility: none");
  if (p.launch_only && p.equal_to_1_loc.line > 0)
    r_.diag().Error(p.equal_to_1_loc, "'" + p.name + "' is launch-only: it is not passed to the kernel, so "
                                          "equal_to_1 does not apply");
  if (p.launch_only && (p.type.is_pointer || !Info(p.type.scalar).is_integer))
    r_.Error(launch_only, "launch-only param '" + p.name + "' must be an integer (it sizes the launch)");
  k_.params.push_back(std::move(p));
}

// `divisibility: 16` (a promise the launcher enforces), `auto` (an aligned
// variant besides the unhinted one; the launcher picks) or `none` (never
// hinted, whatever the kernel's defaults).
void KernelReader::ReadDivisibility(const YAML::Node& node, Param& p) {
  p.divisibility_loc = r_.Loc(node);
  if (node.IsScalar() && node.Scalar() == "auto") {
    p.divisibility = 16;
    p.divisibility_auto = true;
  } else if (node.IsScalar() && node.Tag() != "!" && node.Scalar() == "16") {
    p.divisibility = 16;
  } else if (node.IsScalar() && node.Scalar() == "none") {
    p.divisibility = 0;
  } else {
    r_.Error(node, "divisibility must be 16, auto or none (16 is Triton's only divisibility hint)");
  }
}

// `width: auto`: an i32 variant besides the i64 build; the launcher picks
// it when every such value fits in 32 bits.  `fixed`: the manifest's type
// in every build.
void KernelReader::ReadWidth(const YAML::Node& node, Param& p) {
  p.width_loc = r_.Loc(node);
  if (node.IsScalar() && node.Scalar() == "auto") {
    p.width_auto = true;
  } else if (node.IsScalar() && node.Scalar() == "fixed") {
    p.width_auto = false;
  } else {
    r_.Error(node, "width must be auto (an i32 variant, run when the value fits in 32 bits, as Triton's JIT does) "
                   "or fixed");
  }
}

// `[const] NAME [*]` where NAME is a scalar or a dtype constexpr.
bool KernelReader::ParseParamType(const std::string& text, const YAML::Node& node, ParamType& out) {
  std::istringstream words(text);
  std::vector<std::string> tokens;
  for (std::string word; words >> word;) {
    // Every '*' is a token of its own: "T*", "T *" and "T**" all split.
    size_t start = 0;
    for (size_t star = word.find('*'); star != std::string::npos; star = word.find('*', start)) {
      if (star > start) tokens.push_back(word.substr(start, star - start));
      tokens.push_back("*");
      start = star + 1;
    }
    if (start < word.size()) tokens.push_back(word.substr(start));
  }
  size_t i = 0;
  if (i < tokens.size() && tokens[i] == "const") {
    out.is_const = true;
    ++i;
  }
  if (i >= tokens.size()) return BadType(node, text);
  std::string base = tokens[i++];
  if (i < tokens.size() && tokens[i] == "*") {
    out.is_pointer = true;
    ++i;
  }
  if (i != tokens.size()) return BadType(node, text);
  if (out.is_const && !out.is_pointer) {
    r_.Error(node, "type '" + text + "': const applies only to pointers");
    return false;
  }
  if (const Constexpr* c = k_.FindConstexpr(base); c && c->kind == ConstexprKind::kDtype) {
    if (!out.is_pointer) {
      r_.Error(node, "type '" + text + "': a dtype constexpr can only be used behind a pointer");
      return false;
    }
    out.dtype_constexpr = base;
    return true;
  }
  std::optional<Scalar> s = ParseScalar(base);
  if (!s) {
    r_.Error(node, "unknown type '" + base + "' (expected a dtype constexpr or one of: " + std::string(ScalarList()) +
                       ")");
    return false;
  }
  out.scalar = *s;
  return true;
}

bool KernelReader::BadType(const YAML::Node& node, const std::string& text) {
  r_.Error(node, "malformed type '" + text + "' (expected [const] TYPE[*])");
  return false;
}

void KernelReader::ReadExclusions(const YAML::Node& v) {
  if (!v.IsSequence()) {
    r_.Error(v, "exclude must be a list");
    return;
  }
  for (const YAML::Node& item : v) {
    if (!item.IsMap() || item.size() == 0) {
      r_.Error(item, "each exclude entry must be a non-empty mapping of constexpr names to values");
      continue;
    }
    Exclusion ex;
    ex.loc = r_.Loc(item);
    std::set<std::string> seen;
    for (const auto& entry : item) {
      std::string name = entry.first.IsScalar() ? entry.first.Scalar() : "";
      if (!seen.insert(name).second) {
        r_.Error(entry.first, "duplicate key '" + name + "' in exclude entry");
        continue;
      }
      auto it = std::find_if(k_.constexprs.begin(), k_.constexprs.end(),
                             [&](const Constexpr& c) { return c.name == name; });
      if (it == k_.constexprs.end()) {
        r_.Error(entry.first, "exclude names unknown constexpr '" + name + "'");
        continue;
      }
      std::optional<ConstexprValue> value = MatchValue(*it, entry.second);
      if (value) ex.matches.emplace_back(static_cast<size_t>(it - k_.constexprs.begin()), *value);
    }
    k_.exclusions.push_back(std::move(ex));
  }
}

// The value of constexpr `c` that `node` spells, or an error.
std::optional<ConstexprValue> KernelReader::MatchValue(const Constexpr& c, const YAML::Node& node) {
  std::string spelled = node.IsScalar() ? node.Scalar() : "?";
  if (node.IsScalar() && c.cpp_name) {  // a C++ name, as written among the values
    for (const ConstexprValue& built : c.values)
      if (built.text == spelled) return built;
  } else if (node.IsScalar()) {
    Diagnostics quiet;
    FileReader probe(r_.file(), r_.options(), quiet);
    std::optional<ConstexprValue> value = ReadConstexprValue(probe, node, c.kind, c.name);
    for (const ConstexprValue& built : c.values)
      if (value && SameValue(built, *value)) return built;
  }
  r_.Error(node, "'" + spelled + "' is not one of the values of '" + c.name + "'");
  return std::nullopt;
}

void KernelReader::ReadLaunch(const YAML::Node& v) {
  k_.launch.loc = r_.Loc(v);
  if (!r_.CheckMap(v, "launch", {"grid", "block", "shared_mem", "launch_bounds", "pdl", "cluster", "cooperative"},
                   {"grid"}))
    return;
  k_.launch.shared_mem.kind = Expr::Kind::kInteger;
  for (const auto& entry : v) {
    const std::string key = entry.first.Scalar();
    const YAML::Node& value = entry.second;
    if (key == "grid") k_.launch.grid = ReadDims(value, "grid");
    if (key == "block") {
      k_.launch.block = ReadDims(value, "block");
      k_.launch.block_loc = r_.Loc(entry.first);
    }
    if (key == "shared_mem") {
      if (auto e = ReadExpr(r_, value, "shared_mem")) k_.launch.shared_mem = *e;
      k_.launch.shared_mem_loc = r_.Loc(entry.first);
    }
    if (key == "launch_bounds") {
      k_.launch.launch_bounds = ReadExpr(r_, value, "launch_bounds");
      k_.launch.launch_bounds_loc = r_.Loc(entry.first);
    }
    if (key == "cluster") {
      k_.launch.cluster = ReadDims(value, "cluster");
      k_.launch.cluster_loc = r_.Loc(entry.first);
    }
    if (key == "pdl" || key == "cooperative") ReadLaunchAttribute(r_, key, entry.first, value, k_);
  }
}

std::vector<Expr> KernelReader::ReadDims(const YAML::Node& v, const std::string& what) {
  std::vector<Expr> out;
  if (v.IsScalar()) {
    if (auto e = ReadExpr(r_, v, what)) out.push_back(*e);
    return out;
  }
  if (!v.IsSequence() || v.size() == 0 || v.size() > 3) {
    r_.Error(v, what + " must be an expression or a list of 1 to 3 expressions");
    return out;
  }
  for (const YAML::Node& item : v)
    if (auto e = ReadExpr(r_, item, what)) out.push_back(*e);
  return out;
}

std::optional<Expr> ReadExpr(FileReader& r, const YAML::Node& v, const std::string& what) {
  if (!v.IsScalar()) {
    r.Error(v, what + " must be an integer expression");
    return std::nullopt;
  }
  return ParseExpr(v.Scalar(), r.ValueLoc(v), r.diag());
}

// Constexprs and params share one namespace: both are dispatcher
// arguments.  Names starting kpack_ are the generated code's own.
void KernelReader::CheckNames() {
  std::set<std::string> seen = {"stream"};
  auto check = [&](const std::string& name, const SourceLoc& loc) {
    if (name.rfind("kpack_", 0) == 0) r_.diag().Error(loc, "name '" + name + "' is reserved (kpack_ prefix)");
    else if (name == "pdl" && k_.launch.pdl == Pdl::kPerCall)
      r_.diag().Error(loc, "name 'pdl' is reserved: the launchers of a kernel with pdl: per_call take 'int pdl'");
    else if (!seen.insert(name).second)
      r_.diag().Error(loc, "name '" + name + "' is used twice among constexprs and params (or is 'stream')");
  };
  for (const Constexpr& c : k_.constexprs) check(c.name, c.loc);
  for (const Param& p : k_.params) check(p.name, p.loc);
  if (k_.constexprs.empty()) r_.diag().Error(k_.loc, "kernel '" + k_.name + "' has no constexprs");
}

void KernelReader::CheckCuda() {
  if (k_.launch.block_loc.line == 0 && k_.launch.loc.line > 0)
    r_.diag().Error(k_.launch.loc, "launch is missing required key 'block'");
  for (const Param& p : k_.params)
    if (p.divisibility_loc.line > 0)
      r_.diag().Error(p.divisibility_loc, "divisibility hints apply to Triton kernels only");
  for (const Param& p : k_.params)
    if (p.equal_to_1_loc.line > 0)
      r_.diag().Error(p.equal_to_1_loc, "equal_to_1 applies to Triton kernels only");
  for (const Param& p : k_.params)
    if (p.width_loc.line > 0)
      r_.diag().Error(p.width_loc, std::string(p.width_auto ? "width: auto" : "width") +
                                       " applies to Triton kernels only (a CUDA kernel's C++ signature fixes its types)");
  for (const Constexpr& c : k_.constexprs)
    if (c.rule || c.rule_none)
      r_.diag().Error(c.loc, "rules apply to Triton kernels only for now (constexpr '" + c.name + "')");
}

NameKind LookUpName(const Kernel& k, const std::string& name) {
  if (const Constexpr* c = k.FindConstexpr(name)) {
    if (c->kind == ConstexprKind::kInt) return NameKind::kIntConstexpr;
    if (c->kind == ConstexprKind::kBool) return NameKind::kBoolConstexpr;
    if (c->kind == ConstexprKind::kDtype) return NameKind::kDtypeConstexpr;
    return NameKind::kOtherParam;
  }
  if (const Param* p = k.FindParam(name)) {
    if (p->type.is_pointer) return NameKind::kPointerParam;
    return Info(p->type.scalar).is_integer ? NameKind::kIntegerParam : NameKind::kOtherParam;
  }
  return NameKind::kUnknown;
}

void KernelReader::CheckLaunch() {
  auto lookup = [this](const std::string& name) { return LookUpName(k_, name); };
  for (const Expr& e : k_.launch.grid) CheckExpr(e, lookup, true, r_.diag());
  for (const Expr& e : k_.launch.block) CheckExpr(e, lookup, true, r_.diag());
  CheckExpr(k_.launch.shared_mem, lookup, true, r_.diag());
  if (k_.launch.launch_bounds) CheckExpr(*k_.launch.launch_bounds, lookup, false, r_.diag());
  for (const Expr& e : k_.launch.cluster) CheckExpr(e, lookup, false, r_.diag());  // compiled in, as the bounds
}

TritonDescribeRequest KernelReader::DescribeRequest() const {
  return TritonDescribeRequest{k_.source_path, k_.source_name, k_.entry, k_.python_path, r_.root(),
                               k_.assume,      k_.execute_module};
}

std::optional<Kernel> KernelReader::Finish(const TritonSourceInfo* source) {
  if (k_.language == Language::kTriton) {
    if (source) MergeTritonSource(r_, *source, triton_keys_, k_);
    else ReadTritonOptions(r_, triton_keys_, k_);
  } else if (triton_keys_.options.IsDefined() || triton_keys_.autotune.IsDefined()) {
    r_.Error(triton_keys_.options.IsDefined() ? triton_keys_.options : triton_keys_.autotune,
             "options and autotune apply to Triton kernels only");
  }
  if (r_.diag().error_count() != errors_before_) return std::nullopt;
  if (exclude_.IsDefined()) ReadExclusions(exclude_);
  MarkDebugKernel(k_);
  CheckNames();
  if (k_.language == Language::kTriton) CheckTritonKernel(r_, k_);
  else CheckCuda();
  CheckCudaEntry(r_, k_);
  CheckLaunch();
  CheckAutoRules(r_.diag(), k_);
  CheckTensorDescs(r_.diag(), k_);
  // Last: it checks its names against the whole kernel, the source's
  // constexprs and the auto rules included.
  if (tune_.IsDefined()) ReadTune(r_, tune_key_, tune_, k_);
  if (k_.tune && HasTensorDesc(k_))
    r_.diag().Error(k_.tune->loc, "tune: cannot time a kernel with tensordesc params yet; choose its tiles with auto: "
                                  "rules");
  if (r_.diag().error_count() != errors_before_) return std::nullopt;
  return std::move(k_);
}

}  // namespace kpack
