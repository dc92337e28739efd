#include "triton_merge.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <set>

#include "triton_reader.h"

namespace kpack {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// A config field's value with its kind, as read from a JSON literal (the
// decorator's configs) or a YAML scalar (the manifest's).
struct TypedValue {
  ConstexprKind kind = ConstexprKind::kInt;
  ConstexprValue value;
};

std::optional<TypedValue> FromJson(const std::string& literal) {
  TypedValue t;
  if (literal == "true" || literal == "false") {
    t.kind = ConstexprKind::kBool;
    t.value.integer = literal == "true";
    return t;
  }
  if (literal.size() >= 2 && literal.front() == '"') {
    t.kind = ConstexprKind::kStr;
    t.value.text = literal.substr(1, literal.size() - 2);
    return t;
  }
  if (literal.find_first_of(".eE") == std::string::npos) {
    int64_t i = 0;
    auto [end, ec] = std::from_chars(literal.data(), literal.data() + literal.size(), i);
    // An int axis is a C int in the dispatcher and the config struct.
    if (ec != std::errc() || end != literal.data() + literal.size() || i < INT32_MIN || i > INT32_MAX)
      return std::nullopt;
    t.value.integer = i;
    return t;
  }
  double d = 0;
  auto [end, ec] = std::from_chars(literal.data(), literal.data() + literal.size(), d);
  if (ec != std::errc() || end != literal.data() + literal.size()) return std::nullopt;
  t.kind = ConstexprKind::kFloat;
  t.value.real = d == 0 ? 0.0 : d;
  t.value.text = FloatText(t.value.real);
  return t;
}

// One autotune config: field name -> value, in the order the fields came.
struct Config {
  std::vector<std::pair<std::string, TypedValue>> fields;
  SourceLoc loc;

  const TypedValue* Find(const std::string& name) const {
    for (const auto& [n, v] : fields)
      if (n == name) return &v;
    return nullptr;
  }
};

TypedValue IntValue(int64_t i) {
  TypedValue t;
  t.value.integer = i;
  return t;
}

std::optional<Config> FromDecorator(FileReader& r, const TritonConfigFacts& facts, const SourceLoc& loc) {
  Config c;
  c.loc = loc;
  for (const auto& [name, literal] : facts.kwargs) {
    std::optional<TypedValue> v = FromJson(literal);
    if (!v) {
      r.diag().Error(loc, "autotune config field '" + name + "' has the value " + literal +
                              ", which is not a C int, a bool, a float or a string");
      return std::nullopt;
    }
    c.fields.emplace_back(name, *v);
  }
  c.fields.emplace_back("num_warps", IntValue(facts.num_warps));
  // A cluster only where a config asks for one: num_ctas=1 is no axis.
  if (facts.num_ctas != 1) c.fields.emplace_back("num_ctas", IntValue(facts.num_ctas));
  c.fields.emplace_back("num_stages", IntValue(facts.num_stages));
  if (facts.maxnreg) c.fields.emplace_back("maxnreg", IntValue(*facts.maxnreg));
  // Checks of the values (num_warps 3) are reported at the decorator.
  for (auto& [name, value] : c.fields) value.value.loc = loc;
  return c;
}

std::optional<Config> FromManifest(FileReader& r, const YAML::Node& node) {
  if (!node.IsMap() || node.size() == 0) {
    r.Error(node, "an autotune config must be a mapping of constexprs and options to values");
    return std::nullopt;
  }
  Config c;
  c.loc = r.Loc(node);
  for (const auto& entry : node) {
    std::optional<std::string> name = r.String(entry.first, "an autotune config key");
    std::optional<std::string> literal = r.JsonLiteral(entry.second, "an autotune config value");
    if (!name || !literal) return std::nullopt;
    // YAML accepts a key twice; which value was meant is unknown.
    if (c.Find(*name)) {
      r.Error(entry.first, "duplicate key '" + *name + "' in an autotune config");
      return std::nullopt;
    }
    std::optional<TypedValue> v = FromJson(*literal);
    if (!v || *literal == "null") {
      r.Error(entry.second, "an autotune config value must be a C int, a bool, a float or a string");
      return std::nullopt;
    }
    v->value.loc = r.Loc(entry.second);
    c.fields.emplace_back(*name, *v);
  }
  return c;
}

const char* OptionTag(const std::string& name) {
  if (name == "num_warps") return "w";
  if (name == "num_stages") return "stages";
  return nullptr;
}

class Merger {
 public:
  Merger(FileReader& r, const TritonSourceInfo& source, const PendingTritonKeys& keys, Kernel& k)
      : r_(r), source_(source), keys_(keys), k_(k) {}

  void Run() {
    for (const auto& [loc, message] : source_.errors) r_.diag().Error(loc, message);
    if (!source_.errors.empty()) return;
    k_.triton.inputs = source_.inputs;
    k_.triton.line = source_.line;
    CheckParams();
    ClassifyConstexprs();
    ReadTritonOptions(r_, keys_, k_);
    ApplyAutotune();
    ApplyHeuristics();
    CheckDefaults();
    ApplyVariantDefaults();
  }

 private:
  std::vector<std::string> SourceNames(bool constexprs) const {
    std::vector<std::string> out;
    for (const TritonParamFacts& p : source_.params)
      if (p.is_constexpr == constexprs) out.push_back(p.name);
    return out;
  }

  // The manifest's params are the kernel's runtime parameters in order,
  // but for those whose default is None (passed as None, as the JIT does
  // when a caller leaves them out).  Launch-only params are the caller's.
  void CheckParams() {
    std::vector<std::string> listed, runtime;
    for (const Param& p : k_.params)
      if (!p.launch_only) listed.push_back(p.name);
    for (const TritonParamFacts& p : source_.params) {
      if (p.is_constexpr) continue;
      bool omitted = std::find(listed.begin(), listed.end(), p.name) == listed.end();
      if (omitted && p.has_default && p.default_json == "null") continue;
      runtime.push_back(p.name);
    }
    if (listed != runtime)
      r_.diag().Error(k_.params_loc, "the manifest's params (" + JoinNames(listed) + ") are not " + k_.entry +
                                         "'s runtime parameters in order (" + JoinNames(runtime) +
                                         "); mark params the kernel does not take launch_only: true");
  }

  // Manifest constexprs must be the kernel's tl.constexpr parameters.  An
  // option named among them (num_warps) is the kernel's own constexpr when
  // the kernel has one of that name.
  void ClassifyConstexprs() {
    std::vector<std::string> kernel_constexprs = SourceNames(true);
    auto is_kernel_constexpr = [&](const std::string& name) {
      return std::find(kernel_constexprs.begin(), kernel_constexprs.end(), name) != kernel_constexprs.end();
    };
    for (Constexpr& c : k_.constexprs) {
      if (c.kind == ConstexprKind::kDtype) continue;
      if (c.option && is_kernel_constexpr(c.name)) c.option = false;
      if (c.option || is_kernel_constexpr(c.name) || IsHeuristic(c.name)) continue;
      r_.diag().Error(c.loc, "constexpr '" + c.name + "' is not a tl.constexpr parameter of " + k_.entry +
                                 " (its tl.constexpr parameters: " + JoinNames(kernel_constexprs) + ")");
    }
  }

  bool IsHeuristic(const std::string& name) const {
    return std::any_of(source_.heuristics.begin(), source_.heuristics.end(),
                       [&](const TritonHeuristicFacts& h) { return h.name == name; });
  }

  std::vector<Config> ConfigsOf(const TritonAutotuneFacts& a) {
    std::vector<Config> configs;
    const YAML::Node manifest = keys_.autotune.IsDefined() ? FileReader::Get(keys_.autotune, "configs")
                                                           : YAML::Node(YAML::NodeType::Undefined);
    if (manifest.IsDefined()) {
      if (r_.NonEmptySequence(manifest, "autotune configs"))
        for (const YAML::Node& item : manifest)
          if (std::optional<Config> c = FromManifest(r_, item)) configs.push_back(*c);
    } else if (!a.configs_error.empty()) {
      r_.diag().Error(a.loc, "the autotune decorator of " + k_.entry + ": " + a.configs_error);
    } else {
      for (const TritonConfigFacts& f : a.configs)
        if (std::optional<Config> c = FromDecorator(r_, f, a.loc)) configs.push_back(*c);
    }
    const YAML::Node add = keys_.autotune.IsDefined() ? FileReader::Get(keys_.autotune, "add")
                                                      : YAML::Node(YAML::NodeType::Undefined);
    if (add.IsDefined() && r_.NonEmptySequence(add, "autotune add"))
      for (const YAML::Node& item : add)
        if (std::optional<Config> c = FromManifest(r_, item)) configs.push_back(*c);
    return configs;
  }

  void ApplyAutotune() {
    if (keys_.autotune.IsDefined() && !r_.CheckMap(keys_.autotune, "autotune", {"configs", "add"}, {})) return;
    if (source_.autotunes.size() > 1) {
      r_.diag().Error(source_.autotunes[1].loc, k_.entry + " has two autotune decorators; kpack reads one");
      return;
    }
    if (source_.autotunes.empty()) {
      if (keys_.autotune.IsDefined())
        r_.Error(keys_.autotune, "autotune: in the manifest, but " + k_.entry + " has no autotune decorator");
      return;
    }
    const TritonAutotuneFacts& a = source_.autotunes[0];
    if (!a.error.empty()) {
      r_.diag().Error(a.loc, "the autotune decorator of " + k_.entry + " cannot be packaged: " + a.error);
      return;
    }
    k_.triton.autotune_key = a.key;
    std::vector<Config> configs = ConfigsOf(a);
    if (configs.empty()) return;  // reported
    MakeConfigAxes(configs, a.loc);
  }

  // The fields the configs set, in first-seen order.
  static std::vector<std::string> FieldNames(const std::vector<Config>& configs) {
    std::vector<std::string> names;
    for (const Config& c : configs)
      for (const auto& [name, value] : c.fields)
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    return names;
  }

  // A config's value of `field`: its own, or what Triton uses without it
  // (an option's default, the kernel's default for a constexpr; maxnreg 0
  // is no limit, which triton.cc leaves out of Triton's options).
  std::optional<TypedValue> FieldValue(const Config& c, const std::string& field) {
    if (const TypedValue* v = c.Find(field)) return *v;
    if (field == "num_warps") return IntValue(4);
    if (field == "num_stages") return IntValue(3);
    if (field == "maxnreg") return IntValue(0);
    if (field == "num_ctas") return IntValue(1);
    const TritonParamFacts* p = source_.FindParam(field);
    if (p && p->default_json) return FromJson(*p->default_json);
    return std::nullopt;
  }

  void MakeConfigAxes(std::vector<Config> configs, const SourceLoc& loc) {
    std::vector<std::string> fields = FieldNames(configs);
    const std::vector<std::string> kernel_constexprs = SourceNames(true);
    for (const std::string& f : fields) {
      if (IsTritonOption(f) || std::find(kernel_constexprs.begin(), kernel_constexprs.end(), f) != kernel_constexprs.end())
        continue;
      const Config& first = *std::find_if(configs.begin(), configs.end(), [&](const Config& c) { return c.Find(f); });
      r_.diag().Error(first.loc, "autotune config field '" + f + "' is neither a tl.constexpr parameter of " +
                                     k_.entry + " nor a Triton option");
      return;
    }
    // The manifest's values of a field restrict the configs.  A value no
    // config has is an error of its own; values that each exist but never
    // together leave none.
    const std::vector<Config> all = configs;
    for (const std::string& f : fields) {
      const Constexpr* listed = k_.FindConstexpr(f);
      if (!listed || listed->values.empty()) continue;
      for (const ConstexprValue& v : listed->values) {
        bool found = std::any_of(all.begin(), all.end(), [&](const Config& c) {
          std::optional<TypedValue> cv = FieldValue(c, f);
          return cv && SameValue(cv->value, v);
        });
        if (!found)
          r_.diag().Error(v.loc, f + " value " + ValueSpelling(*listed, v) + " is in none of " + k_.entry +
                                     "'s autotune configs (" + loc.ToString() + "); add one with autotune: add:");
      }
      std::erase_if(configs, [&](const Config& c) {
        std::optional<TypedValue> cv = FieldValue(c, f);
        return !cv || std::none_of(listed->values.begin(), listed->values.end(),
                                   [&](const ConstexprValue& v) { return SameValue(cv->value, v); });
      });
    }
    if (configs.empty()) {
      r_.diag().Error(loc, "the manifest's values leave none of " + k_.entry + "'s autotune configs");
      return;
    }
    ConfigSet set;
    set.loc = loc;
    set.key = k_.triton.autotune_key;
    for (const std::string& f : fields)
      if (std::optional<size_t> axis = ConfigAxis(f, configs)) set.axes.push_back(*axis);
    for (const Config& c : configs) {
      std::vector<ConstexprValue> tuple;
      for (size_t axis : set.axes) tuple.push_back(FieldValue(c, k_.constexprs[axis].name)->value);
      bool seen = std::any_of(set.tuples.begin(), set.tuples.end(), [&](const std::vector<ConstexprValue>& t) {
        return std::equal(t.begin(), t.end(), tuple.begin(), [](const auto& a, const auto& b) { return SameValue(a, b); });
      });
      if (!seen) set.tuples.push_back(std::move(tuple));
    }
    k_.configs = std::move(set);
  }

  static std::string ValueSpelling(const Constexpr& c, const ConstexprValue& v) {
    if (c.kind == ConstexprKind::kBool) return v.integer ? "true" : "false";
    if (c.kind == ConstexprKind::kFloat || c.kind == ConstexprKind::kStr) return v.text;
    return std::to_string(v.integer);
  }

  // The axis of config field `f`: the manifest's constexpr, or a new one
  // with the values the configs give it.  nullopt when reported.
  std::optional<size_t> ConfigAxis(const std::string& f, const std::vector<Config>& configs) {
    std::vector<TypedValue> values;
    for (const Config& c : configs) {
      std::optional<TypedValue> v = FieldValue(c, f);
      if (!v) {
        r_.diag().Error(c.loc, "an autotune config of " + k_.entry + " does not set '" + f +
                                   "', which has no default in the kernel");
        return std::nullopt;
      }
      if (!values.empty() && v->kind != values[0].kind) {
        r_.diag().Error(c.loc, "autotune config field '" + f + "' has values of different types");
        return std::nullopt;
      }
      if (std::none_of(values.begin(), values.end(), [&](const TypedValue& x) { return SameValue(x.value, v->value); }))
        values.push_back(*v);
    }
    for (size_t i = 0; i < k_.constexprs.size(); ++i)
      if (k_.constexprs[i].name == f) return i;
    Constexpr c;
    c.name = f;
    c.kind = values.empty() ? ConstexprKind::kInt : values[0].kind;
    c.option = IsTritonOption(f);
    c.origin = ConstexprOrigin::kAutotune;
    c.loc = configs[0].loc;
    c.tag = OptionTag(f) ? OptionTag(f) : (c.kind == ConstexprKind::kStr ? "" : Lower(f));
    for (const TypedValue& v : values) c.values.push_back(v.value);
    // What every config sets alike is no axis of the API's names.
    c.in_api = values.size() > 1;
    // A str the API names is part of C names, as a manifest's str values are.
    for (const TypedValue& v : values) {
      const std::string& text = v.value.text;
      bool name_part = !text.empty() && std::all_of(text.begin(), text.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
      });
      if (c.in_api && c.kind == ConstexprKind::kStr && !name_part)
        r_.diag().Error(v.value.loc, "str value '" + text + "' of '" + f + "' must hold only letters, digits and "
                                     "'_' (it is part of the specialization's name)");
    }
    k_.constexprs.push_back(std::move(c));
    return k_.constexprs.size() - 1;
  }

  void ApplyHeuristics();
  void CheckDefaults();
  void ApplyVariantDefaults();

  FileReader& r_;
  const TritonSourceInfo& source_;
  const PendingTritonKeys& keys_;
  Kernel& k_;
};

// Whether a translated heuristic yields a truth value (a comparison, a
// logical operation or a NULL test) rather than an integer.
bool IsTruthValue(const Expr& e) {
  if (e.kind == Expr::Kind::kNot) return true;
  if (e.kind == Expr::Kind::kConditional) return IsTruthValue(e.args[1]) && IsTruthValue(e.args[2]);
  if (e.kind == Expr::Kind::kInteger) return e.value == 0 || e.value == 1;
  if (e.kind != Expr::Kind::kBinary) return false;
  static const std::set<std::string> kTruth = {"==", "!=", "<", "<=", ">", ">=", "&&", "||"};
  return kTruth.count(e.op) > 0;
}

void Merger::ApplyHeuristics() {
  auto lookup = [this](const std::string& name) { return LookUpName(k_, name); };
  for (const TritonHeuristicFacts& h : source_.heuristics) {
    Constexpr* listed = nullptr;
    for (Constexpr& c : k_.constexprs)
      if (c.name == h.name) listed = &c;
    if (listed && (listed->rule || listed->rule_none)) continue;  // the manifest decides
    const std::string fix = "; give " + h.name + " a rule in the manifest's constexprs (rule: EXPR), or rule: "
                            "none to let the caller choose it";
    if (!h.error.empty() || h.expr.empty()) {
      r_.diag().Error(h.loc, "heuristic '" + h.name + "' (" + h.source + ") has no launch-expression equivalent: " +
                                 h.error + fix);
      continue;
    }
    Diagnostics scratch;
    std::optional<Expr> rule = ParseExpr(h.expr, h.loc, scratch);
    if (rule) CheckExpr(*rule, lookup, true, scratch);
    if (scratch.HasErrors()) {
      std::string why = scratch.lines().front();
      size_t at = why.find(": error: ");
      r_.diag().Error(h.loc, "heuristic '" + h.name + "' (" + h.source + ") cannot be computed by the launcher (" +
                                 h.expr + ": " + (at == std::string::npos ? why : why.substr(at + 9)) + ")" + fix);
      continue;
    }
    if (!listed) {
      Constexpr c;
      c.name = h.name;
      c.kind = IsTruthValue(*rule) ? ConstexprKind::kBool : ConstexprKind::kInt;
      c.option = IsTritonOption(h.name);
      c.loc = h.loc;
      c.tag = Lower(h.name);
      if (c.kind != ConstexprKind::kBool) {
        r_.diag().Error(h.loc, "heuristic '" + h.name + "' (" + h.source + ") computes an integer; list " + h.name +
                                   " in the manifest's constexprs with the values to build");
        continue;
      }
      c.values = BothBoolValues(h.loc);
      k_.constexprs.push_back(std::move(c));
      listed = &k_.constexprs.back();
    } else if (listed->values.empty() && listed->kind == ConstexprKind::kBool) {
      listed->values = BothBoolValues(listed->loc);  // listed without values: both, as when not listed
    }
    listed->origin = ConstexprOrigin::kHeuristic;
    listed->rule = std::move(rule);
    listed->rule_source = "heuristic at " + h.loc.ToString() + " (" + h.source + ")";
  }
}

// A tl.constexpr parameter that neither the manifest, the autotune configs
// nor the heuristics give a value takes its default, which must be one.
void Merger::CheckDefaults() {
  for (const TritonParamFacts& p : source_.params) {
    if (!p.is_constexpr || k_.FindConstexpr(p.name)) continue;
    if (!p.has_default) {
      r_.diag().Error(p.loc, k_.entry + "'s tl.constexpr parameter '" + p.name +
                                 "' has no values in the manifest's constexprs and no default (" + k_.manifest_path +
                                 " lists the values to build)");
    } else if (!p.default_json) {
      r_.diag().Error(p.loc, k_.entry + "'s tl.constexpr parameter '" + p.name + "' is not in the manifest's "
                                 "constexprs, and " + p.default_error + "; list its values in the manifest");
    }
  }
}

// The JIT hints every pointer and integer argument divisible by 16 when it
// is, and passes every Python int that fits as i32: params the manifest
// does not mark get the same, except the source's do_not_specialize ones
// (and launch-only params, which the kernel never sees).
void Merger::ApplyVariantDefaults() {
  for (Param& p : k_.params) {
    if (k_.variants == Variants::kNone || p.launch_only) continue;
    const TritonParamFacts* facts = source_.FindParam(p.name);
    const bool hintable = p.type.is_pointer || (Info(p.type.scalar).is_integer && p.type.scalar != Scalar::kBool);
    const bool specialized = !facts || (!facts->do_not_specialize && !facts->do_not_specialize_on_alignment);
    if (p.divisibility_loc.line == 0 && hintable && specialized && !p.equal_to_1) {
      p.divisibility = 16;
      p.divisibility_auto = true;
    }
    const bool annotated_wide = facts && facts->annotation_type == "i64";
    if (p.width_loc.line == 0 && !p.type.is_pointer && p.type.dtype_constexpr.empty() &&
        p.type.scalar == Scalar::kI64 && !annotated_wide)
      p.width_auto = true;
  }
}

}  // namespace

void MergeTritonSource(FileReader& r, const TritonSourceInfo& source, const PendingTritonKeys& keys, Kernel& k) {
  Merger(r, source, keys, k).Run();
}

}  // namespace kpack
