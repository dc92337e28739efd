// dispatcher_gen.cc - the generate pass's dispatchers: one function per
// kernel that takes the constexprs callers choose as run-time values and
// calls the typed launcher of the built specialization, or says what was
// built.
#include "dispatcher_gen.h"

#include <algorithm>
#include <cstdio>

#include "codegen_text.h"
#include "tensordesc.h"

namespace kpack::codegen {
namespace {

// The constexprs a dispatcher takes: the ones callers choose.
std::vector<size_t> ApiAxes(const Kernel& k) {
  std::vector<size_t> out;
  for (size_t i = 0; i < k.constexprs.size(); ++i)
    if (k.constexprs[i].InApi()) out.push_back(i);
  return out;
}

// A C string literal's content is CString's; for a case label an integer.
std::string CaseLabel(const Constexpr& c, const ConstexprValue& v) {
  return c.kind == ConstexprKind::kDtype ? std::string(Info(v.dtype).enumerator) : std::to_string(v.integer);
}

// The C test that argument `c` has value `v`, for the kinds a switch
// cannot take.
std::string Matches(const Constexpr& c, const ConstexprValue& v) {
  if (c.kind == ConstexprKind::kStr) return c.name + " != NULL && strcmp(" + c.name + ", " + CString(v.text) + ") == 0";
  // %.17g reads back as the same double: exact comparison is what the
  // dispatcher of a float axis does.
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v.real);
  std::string literal = text;
  if (literal.find_first_of(".eEn") == std::string::npos) literal += ".0";
  return c.name + " == " + literal;
}

// The position of `v` among the values `c` lists.
size_t ValueIndex(const Constexpr& c, const ConstexprValue& v) {
  for (size_t i = 0; i < c.values.size(); ++i)
    if (SameValue(c.values[i], v)) return i;
  return c.values.size();
}

// `specs` ordered by their API values, axis by axis (each axis in the order
// its values are listed).  Expansion order is the order of every
// constexpr, computed ones included: one listed before an API axis, and an
// exclusion tying them, would leave equal API values apart, and the nested
// switches need them together (a case label twice does not compile).
std::vector<const Specialization*> ByApiValues(const Kernel& k, std::vector<const Specialization*> specs,
                                               const std::vector<size_t>& axes) {
  std::stable_sort(specs.begin(), specs.end(), [&](const Specialization* a, const Specialization* b) {
    for (size_t axis : axes) {
      size_t x = ValueIndex(k.constexprs[axis], a->values[axis]), y = ValueIndex(k.constexprs[axis], b->values[axis]);
      if (x != y) return x < y;
    }
    return false;
  });
  return specs;
}

class DispatcherWriter {
 public:
  DispatcherWriter(const Package& pkg, const Kernel& k, const std::vector<const Specialization*>& specs)
      : pkg_(pkg), k_(k), axes_(ApiAxes(k)), specs_(ByApiValues(k, specs, axes_)) {}

  std::string Write() {
    std::string base = pkg_.prefix + "_" + k_.name;
    out_ += "kpack_status " + base + "(" + DispatcherParams(k_) + ") {\n";
    WriteLevel(0, specs_.size(), 0, "  ");
    std::vector<std::string> names, kinds, values;
    for (size_t axis : axes_) {
      const Constexpr& c = k_.constexprs[axis];
      names.push_back(CString(c.name));
      kinds.push_back(ValueKind(c));
      values.push_back(ValueBits(c));
    }
    if (names.empty()) {  // C has no empty arrays: one unused slot
      names.push_back("NULL");
      kinds.push_back("0");
      values.push_back("0");
    }
    std::string n = std::to_string(names.size());
    out_ += "  {\n    static const char *const kpack_names[" + n + "] = {" + Join(names, ", ") + "};\n";
    out_ += "    static const int kpack_kinds[" + n + "] = {" + Join(kinds, ", ") + "};\n";
    out_ += "    const int64_t kpack_values[" + n + "] = {" + Join(values, ", ") + "};\n";
    out_ += "    return kpack_fail_no_specialization(" + CString(k_.name) + ", " + CString(BuiltList()) + ", " +
            std::to_string(axes_.size()) + ", kpack_names, kpack_kinds, kpack_values);\n  }\n}\n\n";
    return out_;
  }

 private:
  static std::string ValueKind(const Constexpr& c) {
    switch (c.kind) {
      case ConstexprKind::kDtype: return "KPACK_CONSTEXPR_DTYPE";
      case ConstexprKind::kBool: return "KPACK_CONSTEXPR_BOOL";
      case ConstexprKind::kFloat: return "KPACK_CONSTEXPR_FLOAT";
      case ConstexprKind::kStr: return "KPACK_CONSTEXPR_STR";
      case ConstexprKind::kInt: break;
    }
    return "KPACK_CONSTEXPR_INT";
  }

  static std::string ValueBits(const Constexpr& c) {
    if (c.kind == ConstexprKind::kFloat) return "kpack_float_bits_(" + c.name + ")";
    if (c.kind == ConstexprKind::kStr) return "(int64_t)(intptr_t)" + c.name;
    return "(int64_t)" + c.name;
  }

  void WriteCall(const Specialization& s, const std::string& indent) {
    std::vector<std::string> args = {"stream"};
    if (k_.launch.pdl == Pdl::kPerCall) args.push_back("pdl");
    for (const Param& p : k_.params) {
      if (p.type.dtype_constexpr.empty()) {
        args.push_back(p.name);
      } else {
        std::string type = std::string(p.type.is_const ? "const " : "") +
                           std::string(Info(ElementScalar(s, p.type)).c_type) + " *";
        args.push_back("(" + type + ")" + p.name);
      }
      const std::vector<std::string> names = ParamArgNames(p);  // a tensordesc's shape and strides
      args.insert(args.end(), names.begin() + 1, names.end());
    }
    out_ += indent + "return " + s.launcher + "(" + Join(args, ", ") + ");\n";
  }

  // Nested switches (or if-chains, for float and str), one level per API
  // constexpr, over the specializations [begin, end) which agree on the
  // levels above.
  void WriteLevel(size_t begin, size_t end, size_t depth, const std::string& indent) {
    if (depth == axes_.size()) {
      WriteCall(*specs_[begin], indent);
      return;
    }
    const size_t axis = axes_[depth];
    const Constexpr& c = k_.constexprs[axis];
    const bool chain = IsChain(c);
    // A bool switches on (int)(x != 0): a switch on a boolean value warns.
    std::string subject = c.kind == ConstexprKind::kBool ? "(int)(" + c.name + " != 0)" : c.name;
    if (!chain) out_ += indent + "switch (" + subject + ") {\n";
    for (size_t i = begin; i < end;) {
      size_t j = i;
      while (j < end && SameValue(specs_[j]->values[axis], specs_[i]->values[axis])) ++j;
      const ConstexprValue& v = specs_[i]->values[axis];
      if (chain) {
        out_ += indent + "if (" + Matches(c, v) + ") {\n";
        WriteLevel(i, j, depth + 1, indent + "  ");
        out_ += indent + "}\n";
      } else {
        out_ += indent + "  case " + CaseLabel(c, v) + ":\n";
        WriteLevel(i, j, depth + 1, indent + "    ");
      }
      i = j;
    }
    if (!chain) out_ += indent + "  default:\n" + indent + "    break;\n" + indent + "}\n";
    // A case of the level above must not fall through into the next one.
    if (depth > 0 && !IsChain(k_.constexprs[axes_[depth - 1]])) out_ += indent + "break;\n";
  }

  static bool IsChain(const Constexpr& c) { return c.kind == ConstexprKind::kFloat || c.kind == ConstexprKind::kStr; }

  std::string BuiltList() const {
    constexpr size_t kMaxListed = 64;
    std::vector<std::string> items;
    for (size_t i = 0; i < specs_.size() && i < kMaxListed; ++i) {
      std::vector<std::string> parts;
      for (size_t axis : axes_)
        parts.push_back(k_.constexprs[axis].name + "=" + ValueText(k_.constexprs[axis], specs_[i]->values[axis]));
      items.push_back(Join(parts, " "));
    }
    std::string list = Join(items, ", ");
    if (specs_.size() > kMaxListed) list += ", ... (" + std::to_string(specs_.size()) + " in all)";
    return list;
  }

  const Package& pkg_;
  const Kernel& k_;
  const std::vector<size_t> axes_;
  const std::vector<const Specialization*> specs_;
  std::string out_;
};

}  // namespace

std::string DispatcherSource(const Package& pkg, const Kernel& k, const std::vector<const Specialization*>& specs) {
  return DispatcherWriter(pkg, k, specs).Write();
}

}  // namespace kpack::codegen
