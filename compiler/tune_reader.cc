#include "tune_reader.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "auto_rules.h"
#include "kernel_reader.h"

namespace kpack {
namespace {

// Why a tune value cannot read a name: the same shape's values serve every
// specialization, on every GPU, and are computed in the order listed.
const char* const kTuneReads =
    "; tune params and buffers read only the key params and the tune params listed before them";

const char* const kFillKinds = "random, zero, {range: [LO, HI]}, {value: E} or {step: E}";

// "'a'", "'a' and 'b'", "'a', 'b' and 'c'".
std::string QuotedList(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += "'" + names[i] + "'";
  }
  return out;
}

// The largest value of an integer scalar type; shapes are positive, so the
// smallest does not matter.  Integers beyond 18 digits are not read at all.
int64_t MaxValue(Scalar s) {
  const uint32_t bits = Info(s).size * 8;
  const bool is_unsigned = s == Scalar::kU8 || s == Scalar::kU16 || s == Scalar::kU32 || s == Scalar::kU64;
  if (bits >= 64) return INT64_MAX;
  return is_unsigned ? (int64_t{1} << bits) - 1 : (int64_t{1} << (bits - 1)) - 1;
}

// A key must be an integer the grid can hold: not a pointer, float or bool.
bool IsIntegerParam(const Param& p) {
  return !p.type.is_pointer && Info(p.type.scalar).is_integer && p.type.scalar != Scalar::kBool;
}

// Why pointer param `p`'s elements may be floats ("f32", "T may be f16");
// "" when each element type it is built with is an integer.
std::string FloatElement(const Kernel& k, const Param& p) {
  if (const Constexpr* c = k.FindConstexpr(p.type.dtype_constexpr)) {
    for (const ConstexprValue& value : c->values)
      if (!Info(value.dtype).is_integer) return c->name + " may be " + std::string(Info(value.dtype).manifest);
    return "";
  }
  return Info(p.type.scalar).is_integer ? "" : std::string(Info(p.type.scalar).manifest);
}

class TuneReader {
 public:
  TuneReader(FileReader& r, const Kernel& k) : r_(r), k_(k) {}

  Tune Read(const YAML::Node& key, const YAML::Node& v);

 private:
  struct Section {
    YAML::Node key{YAML::NodeType::Undefined}, value{YAML::NodeType::Undefined};
  };

  void ReadKey(const YAML::Node& v);
  void AdoptAutotuneKey();
  // Where the key or the params could not be read, which names a value may
  // read is not known: every scalar param, so that the one error stands
  // alone.
  void AllowEveryScalar() {
    for (const Param& p : k_.params)
      if (!p.type.is_pointer) readable_.insert(p.name);
  }
  void ReadShapes(const Section& s);
  void ReadAxisValues(const Param& p, const YAML::Node& values, TuneAxis& axis);
  void CheckGrid(const YAML::Node& shapes_key);
  void ReadParams(const Section& s, const SourceLoc& tune_loc);
  void ReadBuffers(const Section& s, const SourceLoc& tune_loc);
  TuneBuffer ReadBuffer(const Param& p, const YAML::Node& name, const YAML::Node& v);
  void ReadFill(const Param& p, const YAML::Node& v, TuneFill& fill);
  void ReadValid(const YAML::Node& v);
  std::vector<std::pair<YAML::Node, YAML::Node>> Entries(const YAML::Node& v, const std::string& what);
  const Param* Named(const YAML::Node& node, const std::string& what);
  std::optional<Expr> ReadValue(const YAML::Node& v, const std::string& what);
  void CheckReads(const Expr& e);
  void CheckNoDevice(const Expr& e);
  // Whether `key:` lists `name`, good or not.
  bool Listed(const std::string& name) const { return key_names_.count(name) != 0; }
  // Whether `name` is a good key param (an axis of the grid).
  bool IsKey(const std::string& name) const {
    return std::any_of(t_.key.begin(), t_.key.end(), [&](const TuneAxis& a) { return a.param == name; });
  }

  FileReader& r_;
  const Kernel& k_;
  Tune t_;
  // Every name `key:` lists, good or not, so that a bad key is reported
  // once rather than again as an unknown shape or a missing param.  The
  // good ones are t_.key's.
  std::set<std::string> key_names_;
  bool key_read_ = false;
  // What the next tune value may read: the good key params, then each tune
  // param once its own value is read.
  std::set<std::string> readable_;
};

Tune TuneReader::Read(const YAML::Node& key, const YAML::Node& v) {
  t_.loc = r_.Loc(key);
  // The section chooses the auto constexprs; without one there is nothing
  // for a table to hold.
  if (!k_.HasAuto())
    r_.diag().Error(t_.loc, "tune: " + k_.name + " has no auto constexpr to choose; give one an auto: rule (the "
                                                 "auto dispatcher runs it where no tuning applies)");
  // A Triton kernel's @autotune key is the default key (docs/manifest.md,
  // "Autotune configs as a tuning section").
  const bool autotune_key = k_.configs && !k_.configs->key.empty();
  const bool mapped = autotune_key ? r_.CheckMap(v, "tune", {"key", "shapes", "params", "buffers", "valid"}, {"shapes"})
                                    : r_.CheckMap(v, "tune", {"key", "shapes", "params", "buffers", "valid"}, {"key", "shapes"});
  if (!mapped) return t_;
  // Nodes are copied, never assigned: a YAML::Node assignment rewrites the
  // node it refers to.
  auto section = [&v](const char* name) {
    for (const auto& entry : v)
      if (entry.first.IsScalar() && entry.first.Scalar() == name) return Section{entry.first, entry.second};
    return Section{};
  };
  // In dependency order, whatever the manifest's: shapes and params are
  // checked against the key, buffers may read the params.
  const Section key_section = section("key"), shapes = section("shapes"), valid = section("valid");
  if (key_section.value.IsDefined()) ReadKey(key_section.value);
  else if (autotune_key) AdoptAutotuneKey();
  if (!key_read_) AllowEveryScalar();
  if (key_read_ && shapes.value.IsDefined()) ReadShapes(shapes);
  ReadParams(section("params"), t_.loc);
  ReadBuffers(section("buffers"), t_.loc);
  if (valid.value.IsDefined()) ReadValid(valid.value);
  return t_;
}

void TuneReader::ReadKey(const YAML::Node& v) {
  if (!r_.NonEmptySequence(v, "tune key")) return;
  key_read_ = true;
  for (const YAML::Node& item : v) {
    std::optional<std::string> name = r_.String(item, "a tune key");
    if (!name) continue;
    if (Listed(*name)) {
      r_.Error(item, "tune key lists '" + *name + "' twice");
      continue;
    }
    key_names_.insert(*name);
    const Param* p = Named(item, "tune key");
    if (!p) continue;
    if (!IsIntegerParam(*p)) {
      r_.Error(item, "tune key '" + *name + "' must be an integer param, not " + p->type_text);
      continue;
    }
    TuneAxis axis;
    axis.param = *name;
    axis.loc = r_.Loc(item);
    t_.key.push_back(std::move(axis));
    readable_.insert(*name);
  }
}

// Without `key:`, the autotune key's params, each at the decorator (or the
// manifest's autotune:); one that is no integer param needs a `key:`.
void TuneReader::AdoptAutotuneKey() {
  for (const std::string& name : k_.configs->key) {
    const Param* p = k_.FindParam(name);
    if (!p || !IsIntegerParam(*p)) {
      // As an unreadable key: the one error stands alone.
      r_.diag().Error(t_.loc, "tune: " + k_.name + "'s autotune key '" + name + "' is not an integer param" +
                                  (p ? " (" + p->type_text + ")" : "") + "; give tune a key:");
      t_.key.clear();
      key_names_.clear();
      readable_.clear();
      return;
    }
  }
  key_read_ = true;
  for (const std::string& name : k_.configs->key) {
    key_names_.insert(name);
    TuneAxis axis;
    axis.param = name;
    axis.loc = k_.configs->loc;
    t_.key.push_back(std::move(axis));
    readable_.insert(name);
  }
}

// `shapes:` maps each key param to its values; the axes keep `key:` order.
void TuneReader::ReadShapes(const Section& s) {
  std::vector<std::pair<YAML::Node, YAML::Node>> entries = Entries(s.value, "tune shapes");
  if (!s.value.IsMap()) return;
  std::set<std::string> given;
  for (const auto& [name_node, values] : entries) {
    const std::string name = name_node.Scalar();
    if (!Listed(name)) {
      r_.Error(name_node, "tune shapes names '" + name + "', which is not in tune key");
      continue;
    }
    given.insert(name);
    auto axis = std::find_if(t_.key.begin(), t_.key.end(), [&](const TuneAxis& a) { return a.param == name; });
    if (axis == t_.key.end()) continue;  // a bad key, reported there, needs no values
    axis->loc = r_.Loc(name_node);
    ReadAxisValues(*k_.FindParam(name), values, *axis);
  }
  std::vector<std::string> missing;
  for (const TuneAxis& axis : t_.key)
    if (!given.count(axis.param)) missing.push_back(axis.param);
  if (!missing.empty())
    r_.Error(s.key, "tune shapes is missing " + QuotedList(missing) + " (every key param needs its values)");
  CheckGrid(s.key);
}

// Ascending and distinct, so that the tables' nearest-value search is a
// walk; positive, since the search is in log space.
void TuneReader::ReadAxisValues(const Param& p, const YAML::Node& values, TuneAxis& axis) {
  if (!r_.NonEmptySequence(values, "tune shapes of '" + p.name + "'")) return;
  const int64_t max = MaxValue(p.type.scalar);
  for (const YAML::Node& item : values) {
    std::optional<int64_t> value = r_.Integer(item, "a tune shape of '" + p.name + "'");
    if (!value) continue;
    const std::string shape = "tune shape " + std::to_string(*value) + " of '" + p.name + "'";
    if (*value <= 0) {
      r_.Error(item, shape + " must be positive");
    } else if (*value > max) {
      r_.Error(item, shape + " does not fit in its type (" + p.type_text + ")");
    } else if (std::binary_search(axis.values.begin(), axis.values.end(), *value)) {  // kept ascending
      r_.Error(item, shape + " is listed twice");
    } else if (!axis.values.empty() && *value < axis.values.back()) {
      r_.Error(item, shape + " comes after " + std::to_string(axis.values.back()) +
                         "; list the values in ascending order");
    } else {
      axis.values.push_back(*value);
    }
  }
}

// Every shape is timed for every built specialization: the grid's size is
// what a tuning run costs.
void TuneReader::CheckGrid(const YAML::Node& shapes_key) {
  uint64_t count = 1;
  std::string sizes;
  for (const TuneAxis& axis : t_.key) {
    const uint64_t n = axis.values.size();
    count = n != 0 && count > UINT64_MAX / n ? UINT64_MAX : count * n;
    sizes += (sizes.empty() ? "" : " x ") + std::to_string(n);
  }
  if (count > kMaxTuneShapes)
    r_.Error(shapes_key, "tune shapes make a grid of " + std::to_string(count) + " shapes (" + sizes +
                             "), more than the " + std::to_string(kMaxTuneShapes) + " kpack tune measures");
}

// `params:` gives every scalar param that is not a key a value at each
// shape, in the order listed: each may read those before it.
void TuneReader::ReadParams(const Section& s, const SourceLoc& tune_loc) {
  std::set<std::string> listed;
  if (s.value.IsDefined() && !s.value.IsMap()) {
    r_.Error(s.value, "tune params must be a mapping");
    AllowEveryScalar();
    return;
  }
  if (s.value.IsDefined()) {
    for (const auto& [name_node, value] : Entries(s.value, "tune params")) {
      const Param* p = Named(name_node, "tune params");
      if (!p) continue;
      if (p->type.is_pointer) {
        r_.Error(name_node, "tune params names pointer param '" + p->name + "'; give it a buffer under tune buffers");
        continue;
      }
      if (IsKey(p->name)) {
        r_.Error(name_node, "tune params names key param '" + p->name + "', whose values are the tune shapes");
        continue;
      }
      listed.insert(p->name);
      TuneParam param;
      param.param = p->name;
      param.loc = r_.Loc(name_node);
      if (std::optional<Expr> e = ReadValue(value, "tune param '" + p->name + "'")) param.value = std::move(*e);
      t_.params.push_back(std::move(param));
      readable_.insert(p->name);
    }
  }
  if (!key_read_) return;  // which params are keys is not known
  std::vector<std::string> missing;
  for (const Param& p : k_.params)
    if (!p.type.is_pointer && !Listed(p.name) && !listed.count(p.name)) missing.push_back(p.name);
  if (!missing.empty())
    r_.diag().Error(s.key.IsDefined() ? r_.Loc(s.key) : tune_loc,
                    "tune params is missing " + QuotedList(missing) +
                        " (every scalar param that is not a key needs a value)");
}

// `buffers:` gives every pointer param a buffer: its element count, and
// what fills it.  Kept in param order, as the kernel takes them.
void TuneReader::ReadBuffers(const Section& s, const SourceLoc& tune_loc) {
  std::set<std::string> listed;
  if (s.value.IsDefined()) {
    for (const auto& [name_node, value] : Entries(s.value, "tune buffers")) {
      const Param* p = Named(name_node, "tune buffers");
      if (!p) continue;
      if (!p->type.is_pointer) {
        const std::string why = IsKey(p->name) ? "key param '" + p->name + "', whose values are the tune shapes"
                                               : "scalar param '" + p->name + "'; give it a value under tune params";
        r_.Error(name_node, "tune buffers names " + why);
        continue;
      }
      listed.insert(p->name);
      t_.buffers.push_back(ReadBuffer(*p, name_node, value));
    }
  }
  auto index = [this](const TuneBuffer& b) { return k_.FindParam(b.param) - k_.params.data(); };
  std::stable_sort(t_.buffers.begin(), t_.buffers.end(),
                   [&](const TuneBuffer& a, const TuneBuffer& b) { return index(a) < index(b); });
  std::vector<std::string> missing;
  for (const Param& p : k_.params)
    if (p.type.is_pointer && !listed.count(p.name)) missing.push_back(p.name);
  if (!missing.empty())
    r_.diag().Error(s.key.IsDefined() ? r_.Loc(s.key) : tune_loc,
                    "tune buffers is missing " + QuotedList(missing) + " (every pointer param needs a buffer)");
}

// `NAME: COUNT` or `NAME: {count: COUNT, fill: FILL}`.
TuneBuffer TuneReader::ReadBuffer(const Param& p, const YAML::Node& name, const YAML::Node& v) {
  TuneBuffer b;
  b.param = p.name;
  b.loc = r_.Loc(name);
  b.fill.loc = b.loc;
  const std::string what = "tune buffer '" + p.name + "'";
  if (v.IsMap()) {
    r_.CheckMap(v, what, {"count", "fill"}, {"count"});
  } else if (!v.IsScalar()) {
    r_.Error(v, what + " must be a count expression or a mapping {count: COUNT, fill: FILL}");
    return b;
  }
  const YAML::Node count = v.IsMap() ? FileReader::Get(v, "count") : v;
  const YAML::Node fill = v.IsMap() ? FileReader::Get(v, "fill") : YAML::Node(YAML::NodeType::Undefined);
  if (count.IsDefined())
    if (std::optional<Expr> e = ReadValue(count, "the count of " + what)) b.count = std::move(*e);
  if (fill.IsDefined()) ReadFill(p, fill, b.fill);
  return b;
}

// random | zero | {range: [LO, HI]} | {value: E} | {step: E}; the last three
// write integers.
void TuneReader::ReadFill(const Param& p, const YAML::Node& v, TuneFill& fill) {
  fill.loc = r_.Loc(v);
  const std::string of = " of tune buffer '" + p.name + "'";
  if (v.IsScalar()) {
    if (v.Scalar() == "random") fill.kind = TuneFill::Kind::kRandom;
    else if (v.Scalar() == "zero") fill.kind = TuneFill::Kind::kZero;
    else r_.Error(v, "unknown fill '" + v.Scalar() + "'" + of + " (expected " + kFillKinds + ")");
    return;
  }
  if (!v.IsMap()) {
    r_.Error(v, "the fill" + of + " must be " + kFillKinds);
    return;
  }
  const int errors = r_.diag().error_count();
  if (!r_.CheckMap(v, "the fill" + of, {"range", "value", "step"}, {}) || r_.diag().error_count() != errors) return;
  if (v.size() != 1) {
    r_.Error(v, "the fill" + of + " takes one of range, value or step");
    return;
  }
  // Copies: the iterator's pair is a temporary.
  const YAML::const_iterator only = v.begin();
  const YAML::Node kind = only->first;
  const YAML::Node arg = only->second;
  // A float element would take a rounded integer: refused rather than
  // filled with something the author did not mean.
  if (std::string why = FloatElement(k_, p); !why.empty()) {
    r_.Error(kind, "fill " + kind.Scalar() + " applies to integer buffers only ('" + p.name + "' is " + p.type_text +
                       (p.type.dtype_constexpr.empty() ? "" : ", and " + why) + ")");
    return;
  }
  if (kind.Scalar() == "range") {
    fill.kind = TuneFill::Kind::kRange;
    if (!arg.IsSequence() || arg.size() != 2) {
      r_.Error(arg, "fill range" + of + " must be a list [LO, HI] of two expressions");
      return;
    }
    fill.lo = ReadValue(arg[0], "fill range" + of);
    fill.hi = ReadValue(arg[1], "fill range" + of);
    return;
  }
  fill.kind = kind.Scalar() == "value" ? TuneFill::Kind::kValue : TuneFill::Kind::kStep;
  fill.value = ReadValue(arg, "fill " + kind.Scalar() + of);
}

// `valid:` is evaluated by the auto dispatcher at each call (with the
// call's params and each candidate's constexprs) and by the tuner, which
// knows no device attributes of the caller's device and no computed
// constexprs: the launch-expression names without those.
void TuneReader::ReadValid(const YAML::Node& v) {
  std::optional<Expr> e = ReadExpr(r_, v, "tune valid");
  if (!e) return;
  auto lookup = [this](const std::string& name) { return LookUpName(k_, name); };
  if (CheckExpr(*e, lookup, true, r_.diag())) {
    CheckNoDevice(*e);
    CheckNoComputed(r_.diag(), k_, *e, "tune's valid");
  }
  t_.valid = std::move(*e);
}

// The entries of map `v` whose keys are plain and distinct (the others
// reported, as CheckMap reports them): the keys here are the kernel's
// names, so CheckMap's fixed list does not apply.
std::vector<std::pair<YAML::Node, YAML::Node>> TuneReader::Entries(const YAML::Node& v, const std::string& what) {
  std::vector<std::pair<YAML::Node, YAML::Node>> out;
  if (!v.IsMap()) {
    r_.Error(v, what + " must be a mapping");
    return out;
  }
  std::set<std::string> seen;
  for (const auto& entry : v) {
    if (!entry.first.IsScalar()) {
      r_.Error(entry.first, "keys of " + what + " must be plain names");
    } else if (!seen.insert(entry.first.Scalar()).second) {
      r_.Error(entry.first, "duplicate key '" + entry.first.Scalar() + "' in " + what);
    } else {
      out.emplace_back(entry.first, entry.second);
    }
  }
  return out;
}

// The param `node` names; nullptr, reported, for a constexpr or an unknown
// name.
const Param* TuneReader::Named(const YAML::Node& node, const std::string& what) {
  const std::string name = node.Scalar();
  if (const Param* p = k_.FindParam(name)) return p;
  if (k_.FindConstexpr(name)) r_.Error(node, what + " names constexpr '" + name + "', not a param");
  else r_.Error(node, what + " names unknown param '" + name + "'");
  return nullptr;
}

// A tune param's value, a buffer's count or a fill's expression: an
// expression of the launch language (CheckExpr's names and functions), then
// only of what a shape knows.
std::optional<Expr> TuneReader::ReadValue(const YAML::Node& v, const std::string& what) {
  std::optional<Expr> e = ReadExpr(r_, v, what);
  if (!e) return std::nullopt;
  auto lookup = [this](const std::string& name) { return LookUpName(k_, name); };
  if (CheckExpr(*e, lookup, true, r_.diag())) CheckReads(*e);
  return e;
}

// A shape's values are computed once for every specialization and GPU,
// in the order listed: no constexprs, pointers or device attributes, and
// no tune param before its own value.
void TuneReader::CheckReads(const Expr& e) {
  if (e.kind == Expr::Kind::kDevice) {
    r_.diag().Error(e.loc, "'device." + e.name + "' is a property of the device" + kTuneReads);
  } else if (e.kind == Expr::Kind::kName && !readable_.count(e.name)) {
    const Param* p = k_.FindParam(e.name);
    if (!p) r_.diag().Error(e.loc, "'" + e.name + "' is a constexpr" + kTuneReads);
    else if (p->type.is_pointer) r_.diag().Error(e.loc, "'" + e.name + "' is a pointer param" + kTuneReads);
    else r_.diag().Error(e.loc, "'" + e.name + "' has no value yet" + kTuneReads);
  }
  for (const Expr& arg : e.args) CheckReads(arg);
}

void TuneReader::CheckNoDevice(const Expr& e) {
  if (e.kind == Expr::Kind::kDevice)
    r_.diag().Error(e.loc, "'device." + e.name + "' is a property of the device; tune's valid reads only params and "
                                                 "constexprs (the tuner and the auto dispatcher must agree)");
  for (const Expr& arg : e.args) CheckNoDevice(arg);
}

}  // namespace

// A Triton kernel's @autotune configs are what its tuning section chooses:
// each int or bool field the caller would otherwise pass becomes an auto
// constexpr, and its rule, used where no tuning table applies, is the first
// config's value (Triton's list order; the configs all run, so any is
// correct).  Without `tune:` the caller keeps choosing them.
void AdoptAutotuneConfigs(Kernel& k) {
  if (!k.configs || k.configs->tuples.empty()) return;
  const ConfigSet& configs = *k.configs;
  for (size_t j = 0; j < configs.axes.size(); ++j) {
    Constexpr& c = k.constexprs[configs.axes[j]];
    if (!c.InApi() || c.Auto() || (c.kind != ConstexprKind::kInt && c.kind != ConstexprKind::kBool)) continue;
    Expr first;
    first.kind = Expr::Kind::kInteger;
    first.value = configs.tuples[0][j].integer;
    first.loc = configs.loc;
    c.auto_rule = first;
    c.auto_loc = configs.loc;
  }
}

void ReadTune(FileReader& r, const YAML::Node& key, const YAML::Node& value, Kernel& k) {
  AdoptAutotuneConfigs(k);
  Tune tune = TuneReader(r, k).Read(key, value);
  k.tune = std::move(tune);
}

}  // namespace kpack
