// auto_dispatcher_gen.cc - <prefix>_<kernel>_auto: the rules of a kernel's
// auto constexprs, in generated C, in front of its dispatcher.
#include "auto_dispatcher_gen.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include "codegen_text.h"
#include "expr_bounds.h"
#include "tensordesc.h"
#include "tuned_table_gen.h"

namespace kpack::codegen {
namespace {

void NamesRead(const Expr& e, std::set<std::string>& out) {
  if (e.kind == Expr::Kind::kName) out.insert(e.name);
  for (const Expr& arg : e.args) NamesRead(arg, out);
}

void SizeofNames(const Expr& e, std::set<std::string>& out) {
  if (e.kind == Expr::Kind::kCall && e.name == "sizeof" && e.args.size() == 1) out.insert(e.args[0].name);
  for (const Expr& arg : e.args) SizeofNames(arg, out);
}

// The dtype constexprs whose sizes the rules read, in manifest order: the
// auto dispatcher branches on their values.
std::vector<size_t> SizeAxes(const Kernel& k) {
  std::set<std::string> names;
  for (const Constexpr& c : k.constexprs)
    if (c.Auto()) SizeofNames(*c.auto_rule, names);
  std::vector<size_t> out;
  for (size_t i = 0; i < k.constexprs.size(); ++i)
    if (names.count(k.constexprs[i].name)) out.push_back(i);
  return out;
}

// Values of the SizeAxes, one per axis.
using Combo = std::vector<ConstexprValue>;

// The combinations of the SizeAxes' values that were built, in
// specialization order; one empty combination where there are no axes.
std::vector<Combo> BuiltCombos(const std::vector<size_t>& axes, const std::vector<const Specialization*>& specs) {
  std::vector<Combo> out;
  for (const Specialization* s : specs) {
    Combo combo;
    for (size_t axis : axes) combo.push_back(s->values[axis]);
    bool seen = std::any_of(out.begin(), out.end(), [&](const Combo& other) {
      return std::equal(other.begin(), other.end(), combo.begin(), SameValue);
    });
    if (!seen) out.push_back(std::move(combo));
  }
  if (axes.empty()) out = {Combo{}};
  return out;
}

// Bindings for the rules in the branch of `combo` (which must outlive
// them): the sizes are constants; what the caller passes and what the rules
// compute are variables; a constexpr every build shares (an autotune field
// all configs set alike) is its one value.
ExprBindings AutoBindings(const Kernel& k, const std::vector<size_t>& axes, const Combo& combo) {
  ExprBindings b;
  b.constant = [&k](const std::string& name) -> std::optional<int64_t> {
    const Constexpr* c = k.FindConstexpr(name);
    if (c && !c->in_api && !c->Computed() && c->values.size() == 1 &&
        (c->kind == ConstexprKind::kInt || c->kind == ConstexprKind::kBool))
      return c->values[0].integer;
    return std::nullopt;
  };
  b.size_of = [&k, &axes, &combo](const std::string& name) -> int64_t {
    for (size_t j = 0; j < axes.size(); ++j)
      if (k.constexprs[axes[j]].name == name) return Info(combo[j].dtype).size;
    return 0;  // not reached: SizeAxes holds every dtype a rule sizes
  };
  return b;
}

// The bool constexprs the caller passes (as an int, like the dispatcher)
// that a rule reads: the auto dispatcher reads them as 0 or 1, as the
// dispatcher does (any nonzero int is true), under their own names.
std::set<std::string> CallerBools(const Kernel& k) {
  std::set<std::string> read;
  for (const Constexpr& c : k.constexprs)
    if (c.Auto()) NamesRead(*c.auto_rule, read);
  std::set<std::string> out;
  for (const Constexpr& c : k.constexprs)
    if (c.kind == ConstexprKind::kBool && c.InApi() && !c.Auto() && read.count(c.name)) out.insert(c.name);
  return out;
}

// `text` as lines of a doc block (" * ..."), wrapped at 78 columns.
std::string CommentLines(const std::string& text) {
  std::string out, line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.find(' ', start), text.size());
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && 3 + line.size() + 1 + word.size() > 78) {
      out += " * " + CommentText(line) + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  return line.empty() ? out : out + " * " + CommentText(line) + "\n";
}

// `text` as part of a printf format: '%' doubled (a rule's modulo).
std::string FormatText(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '%' ? std::string("%%") : std::string(1, c);
  return out;
}

class AutoWriter {
 public:
  AutoWriter(const Package& pkg, const Kernel& k, const std::vector<const Specialization*>& specs)
      : pkg_(pkg), k_(k), specs_(specs), name_(k.name + "_auto"), axes_(SizeAxes(k)), combos_(BuiltCombos(axes_, specs)),
        order_(k.AutoOrder().value_or(std::vector<size_t>{})) {
    for (size_t i : order_) Prove(k_.constexprs[i]);
  }

  std::string Write() {
    // The decision tables of the tuning files come first; "" without any.
    const std::string tables = TunedChoiceSource(pkg_, k_, specs_, name_);
    const std::string public_name = pkg_.prefix + "_" + name_;
    const std::string body_name = "kpack_" + name_ + "_body_";
    out_ += (tables.empty() ? "kpack_status " + public_name : "static kpack_status " + body_name) + "(" +
            AutoDispatcherParams(k_, true) + ") {\n";
    for (const std::string& name : CallerBools(k_))
      out_ += "  const int " + name + " = kpack_arg_" + name + " != 0;  /* a bool, as " + pkg_.prefix + "_" +
              k_.name + "() reads it */\n";
    WriteDeviceAttributes();
    out_ += tables;
    out_ += "  /* The auto constexprs, in the order their rules read each other";
    out_ += fallible_.empty() ? ". */\n" : ", and\n     for those that can fail, whether kpack_bad was set by then. */\n";
    if (!fallible_.empty()) out_ += "  int kpack_bad = 0;\n";
    for (size_t i : order_) {
      const std::string& name = k_.constexprs[i].name;
      out_ += "  int64_t " + name + " = 0;\n";
      if (fallible_.count(name)) out_ += "  int kpack_bad_" + name + " = 0;\n";
    }
    WriteBranches();
    for (size_t i : order_) WriteChecks(k_.constexprs[i]);
    WriteCall();
    out_ += "}\n\n";
    if (!tables.empty()) WriteHintWrapper(public_name, body_name);
    return out_;
  }

  std::set<std::string> Functions() const {
    std::set<std::string> used;
    for (const Combo& combo : combos_) {
      ExprBindings b = AutoBindings(k_, axes_, combo);
      for (size_t i : order_) used.merge(FunctionsUsed(*k_.constexprs[i].auto_rule, b));
    }
    used.merge(TunedFunctionsUsed(k_));
    return used;
  }

 private:
  // What the build can prove of `c`'s rule, in every branch: whether its C
  // can set kpack_bad (else it needs no test of it), and whether its value
  // always fits its constexpr (else it is tested: a C int, or 0 and 1).
  // Names range over their C types; an auto constexpr read by a later rule
  // over what its own test lets through.
  void Prove(const Constexpr& c) {
    const Interval type = c.kind == ConstexprKind::kBool ? Interval{0, 1} : Interval{INT32_MIN, INT32_MAX};
    NameRange ranges = [this](const std::string& name) -> std::optional<Interval> {
      if (auto it = known_.find(name); it != known_.end()) return it->second;
      if (const Constexpr* other = k_.FindConstexpr(name))
        return other->kind == ConstexprKind::kBool ? Interval{0, 1} : Interval{INT32_MIN, INT32_MAX};
      if (const Param* p = k_.FindParam(name); p && !p->type.is_pointer) return ScalarRange(p->type.scalar);
      return std::nullopt;
    };
    std::optional<Interval> bound;
    bool first = true;
    for (const Combo& combo : combos_) {
      ExprBindings b = AutoBindings(k_, axes_, combo);
      if (EmitExprC(*c.auto_rule, b).find("&kpack_bad") != std::string::npos) fallible_.insert(c.name);
      std::optional<Interval> here = BoundExpr(*c.auto_rule, b, ranges);
      if (!here || (!first && !bound)) bound.reset();
      else bound = first ? *here : Interval{std::min(bound->lo, here->lo), std::max(bound->hi, here->hi)};
      first = false;
    }
    if (!bound || bound->lo < type.lo || bound->hi > type.hi) {
      unproven_.insert(c.name);
      known_[c.name] = type;
    } else {
      known_[c.name] = *bound;
    }
  }

  void WriteDeviceAttributes() {
    std::set<std::string> used;
    for (const Combo& combo : combos_) {
      ExprBindings b = AutoBindings(k_, axes_, combo);
      for (size_t i : order_) used.merge(DeviceAttributesUsed(*k_.constexprs[i].auto_rule, b));
    }
    used.merge(TunedDeviceAttributes(pkg_, k_));
    if (used.empty()) return;
    out_ += "  /* The attributes of the launching device that the rules read. */\n";
    out_ += "  kpack_status kpack_device_st;\n";
    for (const std::string& name : DeviceAttributeNames()) {
      if (!used.count(name)) continue;
      out_ += "  int64_t kpack_device_" + name + " = 0;\n";
      out_ += "  if ((kpack_device_st = kpack_device_attribute(" + CString(name_) + ", KPACK_DEVICE_ATTR_" +
              Upper(name) + ", &kpack_device_" + name + ")) != KPACK_SUCCESS)\n";
      out_ += "    return kpack_device_st;\n";
    }
  }

  // Each rule in turn, the sizes of `combo` folded in.  kpack_bad only
  // grows, so the first constexpr (in order) whose copy of it is set is
  // the one whose rule failed.
  std::string Statements(const Combo& combo, const std::string& indent) const {
    ExprBindings b = AutoBindings(k_, axes_, combo);
    std::string out;
    for (size_t i : order_) {
      const Constexpr& c = k_.constexprs[i];
      out += indent + c.name + " = " + EmitExprC(*c.auto_rule, b) + ";\n";
      if (fallible_.count(c.name)) out += indent + "kpack_bad_" + c.name + " = kpack_bad;\n";
    }
    return out;
  }

  // One branch per built combination of the sized dtypes (combinations
  // whose statements are the same share one); any other dtype is a
  // specialization that was not built.
  void WriteBranches() {
    if (axes_.empty()) {
      out_ += Statements({}, "  ");
      return;
    }
    std::vector<std::pair<std::string, std::vector<std::string>>> branches;  // statements, tests
    for (const Combo& combo : combos_) {
      std::vector<std::string> tests;
      for (size_t j = 0; j < axes_.size(); ++j)
        tests.push_back(k_.constexprs[axes_[j]].name + " == " + std::string(Info(combo[j].dtype).enumerator));
      std::string test = tests.size() > 1 ? "(" + Join(tests, " && ") + ")" : tests[0];
      std::string body = Statements(combo, "    ");
      auto same = std::find_if(branches.begin(), branches.end(), [&](const auto& br) { return br.first == body; });
      if (same != branches.end()) same->second.push_back(test);
      else branches.emplace_back(body, std::vector<std::string>{test});
    }
    for (size_t i = 0; i < branches.size(); ++i)
      out_ += (i == 0 ? "  if (" : "  } else if (") + Join(branches[i].second, " || ") + ") {\n" + branches[i].first;
    out_ += "  } else {\n";
    WriteUnbuiltDtypes();
    out_ += "  }\n";
  }

  void WriteUnbuiltDtypes() {
    std::vector<std::string> names, kinds, values, built;
    for (size_t axis : axes_) {
      names.push_back(CString(k_.constexprs[axis].name));
      kinds.push_back("KPACK_CONSTEXPR_DTYPE");
      values.push_back("(int64_t)" + k_.constexprs[axis].name);
    }
    for (const Combo& combo : combos_) {
      std::vector<std::string> parts;
      for (size_t j = 0; j < axes_.size(); ++j)
        parts.push_back(k_.constexprs[axes_[j]].name + "=" + ValueText(k_.constexprs[axes_[j]], combo[j]));
      built.push_back(Join(parts, " "));
    }
    std::string n = std::to_string(axes_.size());
    out_ += "    static const char *const kpack_names[" + n + "] = {" + Join(names, ", ") + "};\n";
    out_ += "    static const int kpack_kinds[" + n + "] = {" + Join(kinds, ", ") + "};\n";
    out_ += "    const int64_t kpack_values[" + n + "] = {" + Join(values, ", ") + "};\n";
    out_ += "    return kpack_fail_no_specialization(" + CString(name_) + ", " + CString(Join(built, ", ")) + ", " + n +
            ", kpack_names, kpack_kinds, kpack_values);\n";
  }

  // A failed rule, then a value its constexpr cannot take, naming the rule;
  // what Prove() proved is not tested.
  void WriteChecks(const Constexpr& c) {
    const std::string what = FormatText(name_ + ": the rule of " + c.name + ", " + FormatExpr(*c.auto_rule) + ",");
    if (fallible_.count(c.name)) {
      out_ += "  if (kpack_bad_" + c.name + ")\n";
      out_ += "    return kpack_fail(KPACK_ERROR_INVALID_ARGUMENT, " +
              CString(what + " failed (division by zero, overflow or log2 of a value <= 0)") + ");\n";
    }
    if (!unproven_.count(c.name)) return;
    if (c.kind == ConstexprKind::kBool) {
      out_ += "  if (" + c.name + " != 0 && " + c.name + " != 1)\n";
      out_ += "    return kpack_fail(KPACK_ERROR_INVALID_ARGUMENT, " +
              CString(what + " gave %lld; a bool constexpr must be 0 or 1") + ", (long long)" + c.name + ");\n";
    } else {
      out_ += "  if (" + c.name + " < INT32_MIN || " + c.name + " > INT32_MAX)\n";
      out_ += "    return kpack_fail(KPACK_ERROR_INVALID_ARGUMENT, " +
              CString(what + " gave %lld, which does not fit in a C int") + ", (long long)" + c.name + ");\n";
    }
  }

  // With tables, the auto dispatcher is the body above and then drops the
  // device hint that kpack_tuning_select left for its launch
  // (kpack_internal.h), on every path: the launch took it, or none
  // happened.
  void WriteHintWrapper(const std::string& public_name, const std::string& body_name) {
    const std::set<std::string> renamed = CallerBools(k_);
    std::vector<std::string> args = {"stream"};
    if (k_.launch.pdl == Pdl::kPerCall) args.push_back("pdl");
    for (const Constexpr& c : k_.constexprs)
      if (c.InApi() && !c.Auto()) args.push_back((renamed.count(c.name) ? "kpack_arg_" : "") + c.name);
    for (const Param& p : k_.params)
      for (const std::string& name : ParamArgNames(p)) args.push_back(name);
    out_ += "kpack_status " + public_name + "(" + AutoDispatcherParams(k_, true) + ") {\n";
    out_ += "  const kpack_status kpack_st = " + body_name + "(" + Join(args, ", ") + ");\n";
    out_ += "  /* The launch took the device kpack_tuning_select found, or none was made. */\n";
    out_ += "  kpack_device_hint_clear();\n";
    out_ += "  return kpack_st;\n}\n\n";
  }

  void WriteCall() {
    std::vector<std::string> args = {"stream"};
    if (k_.launch.pdl == Pdl::kPerCall) args.push_back("pdl");
    for (const Constexpr& c : k_.constexprs)
      if (c.InApi()) args.push_back(c.Auto() ? "(int)" + c.name : c.name);
    for (const Param& p : k_.params)
      for (const std::string& name : ParamArgNames(p)) args.push_back(name);
    out_ += "  return " + pkg_.prefix + "_" + k_.name + "(" + Join(args, ", ") + ");\n";
  }

  const Package& pkg_;
  const Kernel& k_;
  const std::vector<const Specialization*> specs_;
  const std::string name_;  // "<kernel>_auto", as details say
  const std::vector<size_t> axes_;
  const std::vector<Combo> combos_;
  const std::vector<size_t> order_;
  std::set<std::string> fallible_;          // rules whose C can set kpack_bad
  std::set<std::string> unproven_;          // values that may not fit their constexpr
  std::map<std::string, Interval> known_;   // what each value is once tested
  std::string out_;
};

}  // namespace

std::string AutoDispatcherParams(const Kernel& k, bool definition) {
  const std::set<std::string> renamed = definition ? CallerBools(k) : std::set<std::string>{};
  std::vector<std::string> params = LeadingParams(k);
  for (const Constexpr& c : k.constexprs)
    if (c.InApi() && !c.Auto())
      params.push_back(ConstexprCType(c) + (c.kind == ConstexprKind::kStr ? "" : " ") +
                       (renamed.count(c.name) ? "kpack_arg_" : "") + c.name);
  for (const Param& p : k.params) params.push_back(DispatchParam(p));
  return Join(params, ", ");
}

std::string AutoDispatcherDecl(const Package& pkg, const Kernel& k) {
  if (!k.HasAuto()) return "";
  const std::string base = pkg.prefix + "_" + k.name;
  std::string out = "/*\n * Launches " + k.name + " as " + base + "() does, with these constexprs chosen\n" +
                    " * by their rules (auto: in the manifest) from this call's arguments:\n";
  std::set<std::string> device;
  for (const Constexpr& c : k.constexprs) {
    if (!c.Auto()) continue;
    out += " *   " + c.name + " = " + CommentText(FormatExpr(*c.auto_rule)) + "\n";
    device.merge(DeviceAttributesUsed(*c.auto_rule));
  }
  if (!device.empty()) {
    std::vector<std::string> names;
    for (const std::string& name : DeviceAttributeNames())
      if (device.count(name)) names.push_back("device." + name);
    out += " * (" + Join(names, ", ") + ": of the calling thread's current device).\n";
  }
  if (k.tune) {
    std::string key;
    for (size_t i = 0; i < k.tune->key.size(); ++i)
      key += (i == 0 ? "" : i + 1 == k.tune->key.size() ? " and " : ", ") + k.tune->key[i].param;
    out += CommentLines("Where a tuning file (kpack tune) of the package has a decision table for this kernel on "
                        "the calling thread's device (its model, else its sm), the table chooses them instead: the "
                        "candidate, valid for this call, whose worst slowdown over the tuned shapes that enclose this "
                        "call's " + key + " is least (docs/tuning.md).");
  }
  out += " * The other arguments are " + base + "()'s.  No allocation; thread-safe.\n *\n";
  out += " * Returns KPACK_ERROR_INVALID_ARGUMENT, naming the constexpr and its rule,\n"
         " * when a rule divides by zero, overflows or takes log2 of a value <= 0, or\n"
         " * gives a value its constexpr cannot take (beyond a C int; not 0 or 1 for\n"
         " * a bool); KPACK_ERROR_NO_SPECIALIZATION, with the computed values, when\n"
         " * they were not built; otherwise what " + base + "() returns.\n";
  std::vector<std::string> sized;
  for (size_t axis : SizeAxes(k)) sized.push_back(k.constexprs[axis].name);
  if (sized.size() == 1)
    out += " * The rules read sizeof(" + sized[0] + "): a " + sized[0] + " that was not built gives\n"
           " * KPACK_ERROR_NO_SPECIALIZATION too, listing those that were.\n";
  if (sized.size() > 1)
    out += " * The rules read the sizes of " + Join(sized, " and ") + ": a combination of them that was\n"
           " * not built gives KPACK_ERROR_NO_SPECIALIZATION too, listing those that were.\n";
  out += " */\n";
  out += "kpack_status " + base + "_auto(" + AutoDispatcherParams(k) + ");\n\n";
  return out;
}

std::string AutoDispatcherSource(const Package& pkg, const Kernel& k, const std::vector<const Specialization*>& specs) {
  if (!k.HasAuto()) return "";
  return AutoWriter(pkg, k, specs).Write();
}

std::set<std::string> AutoFunctionsUsed(const Kernel& k, const std::vector<const Specialization*>& specs) {
  if (!k.HasAuto()) return {};
  const Package unnamed;  // the functions do not depend on the prefix
  return AutoWriter(unnamed, k, specs).Functions();
}

}  // namespace kpack::codegen
