// tuner_gen.cc - the generated tables of the tuning harness: per kernel
// with `tune:`, its grid, combinations, candidates and buffers, and the C
// of its tune expressions (params, buffer counts and fills, valid) and of
// the launch of a candidate through the package's dispatcher.
#include "tuner_gen.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "codegen_text.h"
#include "expr_bounds.h"
#include "tune_hash.h"
#include "tune_probe.h"

namespace kpack {
namespace {

using codegen::CommentText;
using codegen::CString;
using codegen::Join;

size_t ValueIndex(const Constexpr& c, const ConstexprValue& v) {
  for (size_t i = 0; i < c.values.size(); ++i)
    if (SameValue(c.values[i], v)) return i;
  return c.values.size();
}

// The positions of a build's values of `axes` in their lists: what orders
// combinations and candidates.
std::vector<size_t> Positions(const Specialization& s, const std::vector<size_t>& axes) {
  std::vector<size_t> out;
  for (size_t axis : axes) out.push_back(ValueIndex(s.kernel->constexprs[axis], s.values[axis]));
  return out;
}

std::vector<ConstexprValue> ValuesOf(const Specialization& s, const std::vector<size_t>& axes) {
  std::vector<ConstexprValue> out;
  for (size_t axis : axes) out.push_back(s.values[axis]);
  return out;
}

std::string Labels(const Kernel& k, const std::vector<size_t>& axes, const std::vector<ConstexprValue>& values) {
  std::vector<std::string> parts;
  for (size_t j = 0; j < axes.size(); ++j)
    parts.push_back(k.constexprs[axes[j]].name + "=" + ValueText(k.constexprs[axes[j]], values[j]));
  return Join(parts, " ");
}

// Whether the unaligned twin passes param `p`'s buffer one element off:
// a `divisibility: auto` pointer.
bool OffsetInTwin(const Param& p) { return p.divisibility_auto && p.type.is_pointer; }

TuneLayout MakeLayout(const Kernel& k, const std::vector<const Specialization*>& specs) {
  TuneLayout l;
  l.kernel = &k;
  l.hash = TuneManifestHash(k, specs);
  for (size_t i = 0; i < k.constexprs.size(); ++i) {
    const Constexpr& c = k.constexprs[i];
    if (!c.InApi()) continue;
    (c.Auto() ? l.tuned : l.combo_axes).push_back(i);
  }
  std::map<std::vector<size_t>, size_t> combo_at, candidate_at;
  for (const Specialization* s : specs) {
    combo_at.emplace(Positions(*s, l.combo_axes), 0);
    candidate_at.emplace(Positions(*s, l.tuned), 0);
  }
  // The maps are ordered by positions: number them in that order.
  for (auto& [pos, index] : combo_at) index = l.combos.size(), l.combos.emplace_back();
  for (auto& [pos, index] : candidate_at) index = l.candidates.size(), l.candidates.emplace_back();
  l.built.assign(l.combos.size(), std::vector<const Specialization*>(l.candidates.size(), nullptr));
  for (const Specialization* s : specs) {
    size_t m = combo_at[Positions(*s, l.combo_axes)], c = candidate_at[Positions(*s, l.tuned)];
    l.combos[m] = ValuesOf(*s, l.combo_axes);
    l.candidates[c] = ValuesOf(*s, l.tuned);
    if (!l.built[m][c]) l.built[m][c] = s;
  }
  l.probes = 1;
  for (const TuneAxis& axis : k.tune->key) {
    l.shapes *= axis.values.size();
    l.probe_axes.push_back(ProbeAxis(axis.values));
    l.probes *= l.probe_axes.back().size();
  }
  l.unaligned_twin = k.HasAlignedVariant() && std::any_of(k.params.begin(), k.params.end(), OffsetInTwin);
  return l;
}

}  // namespace

std::string TuneLayout::ComboLabel(size_t combo) const { return Labels(*kernel, combo_axes, combos[combo]); }

std::string TuneLayout::CandidateLabel(size_t candidate) const {
  return Labels(*kernel, tuned, candidates[candidate]);
}

std::vector<int64_t> TuneLayout::ShapeKey(size_t s) const {
  const std::vector<TuneAxis>& key = kernel->tune->key;
  std::vector<int64_t> out(key.size());
  const bool probe = s >= shapes;
  if (probe) s -= shapes;
  for (size_t i = key.size(); i-- > 0;) {
    const std::vector<int64_t>& values = probe ? probe_axes[i] : key[i].values;
    out[i] = values[s % values.size()];
    s /= values.size();
  }
  return out;
}

std::string TuneLayout::ShapeLabel(size_t s) const {
  std::vector<int64_t> values = ShapeKey(s);
  std::vector<std::string> parts;
  for (size_t i = 0; i < values.size(); ++i)
    parts.push_back(kernel->tune->key[i].param + "=" + std::to_string(values[i]));
  return Join(parts, " ");
}

std::vector<TuneLayout> TuneLayouts(const Package& pkg, const std::vector<Specialization>& specs) {
  std::vector<TuneLayout> out;
  for (const Kernel& k : pkg.kernels)
    if (k.tune) out.push_back(MakeLayout(k, codegen::SpecsOf(k, specs)));
  return out;
}

namespace {

// The checked arithmetic and every function helper that EmitExprC's C may
// call (codegen_text.h), as the launcher source defines them; all of them,
// since unused static inline functions cost nothing.
std::string Helpers() {
  std::string out = "/* Checked 64-bit arithmetic of the tune expressions (expr.h): overflow,\n"
                    "   division by zero and log2 of x <= 0 set *bad. */\n" +
                    std::string(codegen::kCheckedArithmeticC);
  for (const std::string& function : codegen::FunctionHelperNames()) out += codegen::FunctionHelperC(function);
  return out;
}

constexpr const char* kUnknownCombo = "  *kpack_what = \"no such combination\";\n  return -1;\n";

constexpr const char* kFailed = " failed (division by zero, overflow or log2 of a value <= 0)";

void NamesRead(const Expr& e, std::set<std::string>& out) {
  if (e.kind == Expr::Kind::kName) out.insert(e.name);
  for (const Expr& arg : e.args) NamesRead(arg, out);
}

size_t ParamIndex(const Kernel& k, const std::string& name) {
  for (size_t i = 0; i < k.params.size(); ++i)
    if (k.params[i].name == name) return i;
  return k.params.size();
}

std::string Literal(int64_t v) { return v == INT64_MIN ? "INT64_MIN" : std::to_string(v); }

// The bindings of tune expressions of a combination: the values of the
// constexprs `rep` (one of its builds) shares with every candidate of it;
// the auto constexprs and the rules' are not constants there.
ExprBindings ComboBindings(const Specialization& rep) {
  ExprBindings b = BindingsFor(rep);
  b.constant = [&rep, inner = b.constant](const std::string& name) -> std::optional<int64_t> {
    const Constexpr* c = rep.kernel->FindConstexpr(name);
    if (c && (c->Auto() || c->Computed())) return std::nullopt;
    return inner(name);
  };
  return b;
}


class TunerWriter {
 public:
  TunerWriter(const Package& pkg, const std::vector<Specialization>& specs, const CodegenOptions& o)
      : pkg_(pkg), layouts_(TuneLayouts(pkg, specs)), o_(o) {}

  std::string Write() {
    out_ += "/* Generated by kpack " + std::string(codegen::kVersion) + " from " + CommentText(o_.manifest_label) +
            ": the tables of its tuning harness\n   (kpack_tune.h, docs/tuning.md). Do not edit. */\n";
    out_ += "#include \"" + o_.header_name + "\"\n#include \"kpack_tune.h\"\n\n#include <stdint.h>\n\n";
    out_ += "_Static_assert(KPACK_TUNE_ABI == 3, \"generated for kpack_tune.h ABI 3: use the kpack_tune_main.c and "
            "kpack_tune.h of the kpack that generated it\");\n\n";
    if (!layouts_.empty()) out_ += Helpers() + "\n";
    std::vector<std::string> entries;
    for (size_t i = 0; i < layouts_.size(); ++i)
      entries.push_back(WriteKernel(layouts_[i], "kpack_tune_k" + std::to_string(i)));
    if (!entries.empty())
      out_ += "static const kpack_tune_kernel kpack_tune_kernels_[" + std::to_string(entries.size()) + "] = {\n" +
              Join(entries, ",\n") + "\n};\n\n";
    out_ += "const kpack_tune_package kpack_tune_tables = {KPACK_TUNE_ABI, " + CString(pkg_.name) + ", " +
            CString(codegen::kVersion) + ", " + std::to_string(entries.size()) + ", " +
            (entries.empty() ? "NULL" : "kpack_tune_kernels_") + "};\n";
    return out_;
  }

 private:
  // Writes the tables and functions of one kernel (names starting with
  // `p`: numbered, so no kernel name can make two of them collide);
  // returns its kpack_tune_kernel initializer.
  std::string WriteKernel(const TuneLayout& l, const std::string& p) {
    const Kernel& k = *l.kernel;
    out_ += "/* ==== " + CommentText(k.name) + " " +
            std::string(std::max<int>(3, 70 - static_cast<int>(k.name.size())), '=') + " */\n\n";
    WriteTables(l, p);
    WriteParams(l, p);
    WriteFills(l, p);
    WriteValid(l, p);
    WriteLaunch(l, p);
    WriteAligned(l, p);
    const Tune& t = *k.tune;
    std::vector<std::string> fields = {
        CString(k.name), CString(pkg_.prefix + "_" + k.name), CString(l.hash), std::to_string(k.params.size()),
        std::to_string(t.key.size()), p + "_key", p + "_key_params", p + "_grid_sizes", p + "_grid",
        p + "_probe_sizes", p + "_probes", std::to_string(l.tuned.size()), l.tuned.empty() ? "NULL" : p + "_tuned",
        std::to_string(l.combos.size()), p + "_combos", std::to_string(l.candidates.size()), p + "_candidates",
        p + "_built", std::to_string(t.buffers.size()), t.buffers.empty() ? "NULL" : p + "_buffers",
        t.buffers.empty() ? "NULL" : p + "_elements", p + "_params", p + "_fills", p + "_valid", p + "_launch",
        p + "_launch_auto", l.unaligned_twin ? p + "_aligned" : "NULL"};
    return "  {" + Join(fields, ", ") + "}";
  }

  void Array(const std::string& type, const std::string& name, const std::vector<std::string>& items) {
    out_ += "static " + type + " " + name + "[" + std::to_string(items.size()) + "] = {" + Join(items, ", ") + "};\n";
  }

  void WriteTables(const TuneLayout& l, const std::string& p) {
    const Kernel& k = *l.kernel;
    const Tune& t = *k.tune;
    std::vector<std::string> names, params, sizes, axes;
    for (size_t i = 0; i < t.key.size(); ++i) {
      names.push_back(CString(t.key[i].param));
      params.push_back(std::to_string(ParamIndex(k, t.key[i].param)));
      sizes.push_back(std::to_string(t.key[i].values.size()));
      std::vector<std::string> values;
      for (int64_t v : t.key[i].values) values.push_back(Literal(v));
      Array("const int64_t", p + "_grid_" + std::to_string(i), values);
      axes.push_back(p + "_grid_" + std::to_string(i));
    }
    Array("const char *const", p + "_key", names);
    Array("const int", p + "_key_params", params);
    Array("const int", p + "_grid_sizes", sizes);
    Array("const int64_t *const", p + "_grid", axes);
    WriteProbes(l, p);
    std::vector<std::string> tuned, combos, candidates, built, buffers, elements;
    for (size_t i : l.tuned) tuned.push_back(CString(k.constexprs[i].name));
    if (!tuned.empty()) Array("const char *const", p + "_tuned", tuned);
    for (size_t m = 0; m < l.combos.size(); ++m) combos.push_back(CString(l.ComboLabel(m)));
    Array("const char *const", p + "_combos", combos);
    for (size_t c = 0; c < l.candidates.size(); ++c) candidates.push_back(CString(l.CandidateLabel(c)));
    Array("const char *const", p + "_candidates", candidates);
    for (const auto& row : l.built)
      for (const Specialization* s : row) built.push_back(s ? "1" : "0");
    out_ += "/* [combination * " + std::to_string(l.candidates.size()) + " + candidate]: built */\n";
    Array("const unsigned char", p + "_built", built);
    if (t.buffers.empty()) return;
    for (const TuneBuffer& b : t.buffers)
      buffers.push_back("{" + CString(b.param) + ", " + std::to_string(ParamIndex(k, b.param)) + ", " +
                        FillKind(b.fill) + ", " + (TwinOffset(l, b.param) ? "1" : "0") + "}");
    Array("const kpack_tune_buffer", p + "_buffers", buffers);
    for (size_t m = 0; m < l.combos.size(); ++m)
      for (const TuneBuffer& b : t.buffers) elements.push_back(ElementOf(*Representative(l, m), b.param));
    out_ += "/* [combination * " + std::to_string(t.buffers.size()) + " + buffer]: the element type */\n";
    Array("const kpack_dtype", p + "_elements", elements);
    out_ += "\n";
  }

  // The probe shapes' values per key (an empty axis: a NULL row).
  void WriteProbes(const TuneLayout& l, const std::string& p) {
    std::vector<std::string> sizes, axes;
    out_ += "/* Probe values between the grid's, per key (tune_probe.h): " + std::to_string(l.probes) +
            " probe shape" + (l.probes == 1 ? "" : "s") + ". */\n";
    for (size_t i = 0; i < l.probe_axes.size(); ++i) {
      sizes.push_back(std::to_string(l.probe_axes[i].size()));
      if (l.probe_axes[i].empty()) {
        axes.push_back("NULL");
        continue;
      }
      std::vector<std::string> values;
      for (int64_t v : l.probe_axes[i]) values.push_back(Literal(v));
      Array("const int64_t", p + "_probes_" + std::to_string(i), values);
      axes.push_back(p + "_probes_" + std::to_string(i));
    }
    Array("const int", p + "_probe_sizes", sizes);
    Array("const int64_t *const", p + "_probes", axes);
  }

  // Whether the twin passes buffer `param` one element off: a
  // `divisibility: auto` pointer of a kernel with unaligned twins.
  static bool TwinOffset(const TuneLayout& l, const std::string& param) {
    const Param* q = l.kernel->FindParam(param);
    return l.unaligned_twin && q && OffsetInTwin(*q);
  }

  static std::string FillKind(const TuneFill& f) {
    switch (f.kind) {
      case TuneFill::Kind::kRandom: return "KPACK_TUNE_FILL_RANDOM";
      case TuneFill::Kind::kZero: return "KPACK_TUNE_FILL_ZERO";
      case TuneFill::Kind::kRange: return "KPACK_TUNE_FILL_RANGE";
      case TuneFill::Kind::kValue: return "KPACK_TUNE_FILL_VALUE";
      case TuneFill::Kind::kStep: return "KPACK_TUNE_FILL_STEP";
      case TuneFill::Kind::kDefault: break;
    }
    return "KPACK_TUNE_FILL_DEFAULT";
  }

  static std::string ElementOf(const Specialization& s, const std::string& param) {
    const Param* p = s.kernel->FindParam(param);
    if (!p) return "KPACK_TUNE_BOOL";  // not reached: buffers name pointer params
    Scalar e = codegen::ElementScalar(s, p->type);
    return e == Scalar::kBool ? "KPACK_TUNE_BOOL" : std::string(Info(e).enumerator);
  }

  // The first build of combination m: what it shares with every candidate.
  static const Specialization* Representative(const TuneLayout& l, size_t m) {
    for (const Specialization* s : l.built[m])
      if (s) return s;
    return nullptr;  // not reached: a combination exists because something was built
  }

  // The declarations of the names `exprs` read, as locals from kpack_v (or,
  // for pointers, which are never NULL while tuning, a non-NULL pointer),
  // and of the device attributes they use.
  std::string Locals(const Kernel& k, const std::vector<const Expr*>& exprs, const std::set<std::string>& skip) {
    std::set<std::string> names, device;
    for (const Expr* e : exprs) {
      NamesRead(*e, names);
      device.merge(DeviceAttributesUsed(*e));
    }
    std::string out;
    for (size_t i = 0; i < k.params.size(); ++i) {
      const Param& p = k.params[i];
      if (!names.count(p.name) || skip.count(p.name)) continue;
      if (p.type.is_pointer)
        out += "  const void *const " + p.name + " = (const void *)kpack_v; /* a buffer: never NULL */\n";
      else
        out += "  const int64_t " + p.name + " = kpack_v[" + std::to_string(i) + "];\n";
      out += "  (void)" + p.name + ";\n";
    }
    const std::vector<std::string>& attrs = DeviceAttributeNames();
    for (size_t i = 0; i < attrs.size(); ++i)
      if (device.count(attrs[i]))
        out += "  const int64_t kpack_device_" + attrs[i] + " = kpack_device[KPACK_TUNE_DEVICE_" +
               codegen::Upper(attrs[i]) + "];\n";
    return out;
  }

  // `bodies` (one per case value) as a switch on `subject`, cases with the
  // same body sharing it, each ending in `last` (a statement, or ""); then
  // `fallback` for other values.  One body without a switch when all agree.
  std::string Switch(const std::string& subject, const std::vector<std::pair<size_t, std::string>>& bodies,
                     const std::string& last, const std::string& fallback) {
    std::vector<std::pair<std::string, std::vector<size_t>>> groups;
    for (const auto& [value, body] : bodies) {
      auto same = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == body; });
      if (same != groups.end()) same->second.push_back(value);
      else groups.emplace_back(body, std::vector<size_t>{value});
    }
    if (groups.size() == 1) return groups[0].first + (last.empty() ? "" : "  " + last + "\n");
    std::string out = "  switch (" + subject + ") {\n";
    for (const auto& [body, values] : groups) {
      for (size_t v : values) out += "  case " + std::to_string(v) + ":\n";
      std::string indented;
      for (size_t at = 0; at < body.size();) {
        size_t end = body.find('\n', at);
        indented += "  " + body.substr(at, end - at + 1);
        at = end + 1;
      }
      out += "  {\n" + indented + (last.empty() ? "" : "    " + last + "\n") + "  }\n";
    }
    return out + "  default:\n    break;\n  }\n" + fallback;
  }

  // Assigns `e` to `target`, returning -1 with `what` when it fails.
  static std::string Checked(const std::string& target, const Expr& e, const ExprBindings& b, const std::string& what) {
    std::string c = EmitExprC(e, b);
    std::string out = "  " + target + " = " + c + ";\n";
    if (c.find("&kpack_bad") != std::string::npos)
      out += "  if (kpack_bad) { *kpack_what = " + CString(what + kFailed) + "; return -1; }\n";
    return out;
  }

  // The tune params in an order that computes each after those it reads
  // (the manifest's order where that holds).
  static std::vector<const TuneParam*> ParamOrder(const Tune& t) {
    std::vector<const TuneParam*> left, out;
    for (const TuneParam& p : t.params) left.push_back(&p);
    std::set<std::string> done;
    while (!left.empty()) {
      auto ready = std::find_if(left.begin(), left.end(), [&](const TuneParam* p) {
        std::set<std::string> read;
        NamesRead(p->value, read);
        return std::none_of(left.begin(), left.end(),
                            [&](const TuneParam* q) { return q != p && read.count(q->param); });
      });
      if (ready == left.end()) ready = left.begin();  // a cycle: the reader refuses it
      out.push_back(*ready);
      left.erase(ready);
    }
    return out;
  }

  void WriteParams(const TuneLayout& l, const std::string& p) {
    const Kernel& k = *l.kernel;
    const Tune& t = *k.tune;
    out_ += "/* Every scalar param at a shape: the keys, then tune: params. */\n";
    out_ += "static int " + p + "_params(int kpack_combo, const int64_t *kpack_key, const int64_t *kpack_device, "
            "int64_t *kpack_v, const char **kpack_what) {\n";
    out_ +=
        "  int kpack_bad = 0;\n  (void)kpack_bad;\n  (void)kpack_combo;\n  (void)kpack_device;\n  (void)kpack_what;\n";
    for (size_t i = 0; i < t.key.size(); ++i)
      out_ +=
          "  kpack_v[" + std::to_string(ParamIndex(k, t.key[i].param)) + "] = kpack_key[" + std::to_string(i) + "];\n";
    std::vector<const Expr*> exprs;
    std::set<std::string> computed;
    for (const TuneParam& tp : t.params) exprs.push_back(&tp.value), computed.insert(tp.param);
    out_ += Locals(k, exprs, computed);
    std::vector<std::pair<size_t, std::string>> bodies;
    for (size_t m = 0; m < l.combos.size(); ++m) {
      ExprBindings b = ComboBindings(*Representative(l, m));
      std::string body;
      for (const TuneParam* tp : ParamOrder(t)) {
        const std::string what = "tune param " + tp->param + " = " + FormatExpr(tp->value);
        body += Checked("const int64_t " + tp->param, tp->value, b, what);
        body += RangeCheck(*k.FindParam(tp->param), what);
        body += "  kpack_v[" + std::to_string(ParamIndex(k, tp->param)) + "] = " + tp->param + ";\n";
      }
      bodies.emplace_back(m, body);
    }
    out_ += Switch("kpack_combo", bodies, "return 0;", kUnknownCombo);
    out_ += "}\n\n";
  }

  // Refuses a value the param's C type cannot hold.
  static std::string RangeCheck(const Param& p, const std::string& what) {
    std::optional<Interval> range = ScalarRange(p.type.scalar);
    if (!range || (range->lo == INT64_MIN && range->hi == INT64_MAX)) return "";
    return "  if (" + p.name + " < " + Literal(range->lo) + " || " + p.name + " > " + Literal(range->hi) +
           ") { *kpack_what = " + CString(what + " is beyond " + std::string(Info(p.type.scalar).manifest)) +
           "; return -1; }\n";
  }

  void WriteFills(const TuneLayout& l, const std::string& p) {
    const Kernel& k = *l.kernel;
    const Tune& t = *k.tune;
    out_ += "/* Each buffer's element count and fill at a shape. */\n";
    out_ += "static int " + p + "_fills(int kpack_combo, const int64_t *kpack_v, const int64_t *kpack_device, "
            "kpack_tune_fill_at *kpack_out, const char **kpack_what) {\n";
    out_ += "  int kpack_bad = 0;\n  (void)kpack_bad;\n  (void)kpack_combo;\n  (void)kpack_v;\n"
            "  (void)kpack_device;\n  (void)kpack_out;\n  (void)kpack_what;\n";
    std::vector<const Expr*> exprs;
    for (const TuneBuffer& b : t.buffers)
      for (const std::optional<Expr>* e : {&b.fill.lo, &b.fill.hi, &b.fill.value})
        if (*e) exprs.push_back(&**e);
    for (const TuneBuffer& b : t.buffers) exprs.push_back(&b.count);
    out_ += Locals(k, exprs, {});
    std::vector<std::pair<size_t, std::string>> bodies;
    for (size_t m = 0; m < l.combos.size(); ++m) {
      ExprBindings bind = ComboBindings(*Representative(l, m));
      std::string body;
      for (size_t i = 0; i < t.buffers.size(); ++i) {
        const TuneBuffer& b = t.buffers[i];
        const std::string slot = "kpack_out[" + std::to_string(i) + "]";
        const std::string what = "the count of buffer " + b.param + ", " + FormatExpr(b.count) + ",";
        body += Checked(slot + ".count", b.count, bind, what);
        body += "  if (" + slot + ".count < 0) { *kpack_what = " + CString(what + " is negative") + "; return -1; }\n";
        const std::pair<const char*, const std::optional<Expr>*> parts[] = {
            {"lo", &b.fill.lo}, {"hi", &b.fill.hi}, {"value", &b.fill.value}};
        for (const auto& [field, e] : parts) {
          if (*e)
            body +=
                Checked(slot + "." + field, **e, bind, "the fill of buffer " + b.param + ", " + FormatExpr(**e) + ",");
          else body += "  " + slot + "." + field + " = 0;\n";
        }
      }
      bodies.emplace_back(m, body);
    }
    out_ += Switch("kpack_combo", bodies, "return 0;", kUnknownCombo);
    out_ += "}\n\n";
  }

  void WriteValid(const TuneLayout& l, const std::string& p) {
    const Kernel& k = *l.kernel;
    const Tune& t = *k.tune;
    out_ += t.valid
                ? "/* Whether a built candidate may run at the params' values: " + CommentText(FormatExpr(*t.valid)) +
                      ". */\n"
                : "/* Whether a built candidate may run at the params' values: everywhere (no valid:). */\n";
    out_ += "static int " + p + "_valid(int kpack_combo, int kpack_candidate, const int64_t *kpack_v, "
            "const int64_t *kpack_device, const char **kpack_what) {\n";
    out_ +=
        "  int kpack_bad = 0;\n  (void)kpack_bad;\n  (void)kpack_combo;\n  (void)kpack_candidate;\n  (void)kpack_v;\n"
        "  (void)kpack_device;\n  (void)kpack_what;\n";
    std::vector<std::pair<size_t, std::string>> bodies;
    if (t.valid) out_ += Locals(k, {&*t.valid}, {});
    const std::string what = "valid: " + (t.valid ? FormatExpr(*t.valid) : std::string());
    for (size_t m = 0; m < l.combos.size(); ++m)
      for (size_t c = 0; c < l.candidates.size(); ++c) {
        if (!l.built[m][c]) continue;
        std::string body = t.valid ? Checked("const int64_t kpack_ok", *t.valid, LauncherBindings(*l.built[m][c]), what) +
                                         "  return kpack_ok != 0;\n"
                                   : "  return 1;\n";
        bodies.emplace_back(m * l.candidates.size() + c, body);
      }
    const std::string subject = "kpack_combo * " + std::to_string(l.candidates.size()) + " + kpack_candidate";
    out_ += Switch(subject, bodies, "", "  return 0; /* not built */\n");
    out_ += "}\n\n";
  }

  void WriteLaunch(const TuneLayout& l, const std::string& p) {
    const Kernel& k = *l.kernel;
    std::vector<std::string> args = {"stream"};
    if (k.launch.pdl == Pdl::kPerCall) args.push_back("0");
    for (size_t i = 0; i < k.constexprs.size(); ++i) {
      const Constexpr& c = k.constexprs[i];
      if (!c.InApi()) continue;
      const bool tuned = c.Auto();
      const std::vector<size_t>& axes = tuned ? l.tuned : l.combo_axes;
      const size_t j = std::find(axes.begin(), axes.end(), i) - axes.begin();
      std::vector<std::string> values;
      for (const auto& row : tuned ? l.candidates : l.combos) values.push_back(codegen::ConstexprCLiteral(c, row[j]));
      const std::string table = p + "_axis" + std::to_string(i);
      Array(c.kind == ConstexprKind::kStr ? "const char *const" : "const " + codegen::ConstexprCType(c), table, values);
      args.push_back(table + "[" + (tuned ? "kpack_candidate" : "kpack_combo") + "]");
    }
    for (size_t i = 0; i < k.params.size(); ++i) args.push_back(ParamArgument(k.params[i], i));
    out_ += "static kpack_status " + p + "_launch(int kpack_combo, int kpack_candidate, const int64_t *kpack_v, "
            "void *const *kpack_p, kpack_stream stream) {\n";
    out_ += "  (void)kpack_combo;\n  (void)kpack_candidate;\n  (void)kpack_v;\n  (void)kpack_p;\n";
    out_ += "  return " + pkg_.prefix + "_" + k.name + "(" + Join(args, ", ") + ");\n}\n\n";
    WriteLaunchAuto(l, p);
  }

  // The same call through the auto dispatcher: the combination's
  // constexprs, no tuned ones (the library's tables or rules pick them).
  void WriteLaunchAuto(const TuneLayout& l, const std::string& p) {
    const Kernel& k = *l.kernel;
    std::vector<std::string> args = {"stream"};
    if (k.launch.pdl == Pdl::kPerCall) args.push_back("0");
    for (size_t i = 0; i < k.constexprs.size(); ++i)
      if (k.constexprs[i].InApi() && !k.constexprs[i].Auto())
        args.push_back(p + "_axis" + std::to_string(i) + "[kpack_combo]");
    for (size_t i = 0; i < k.params.size(); ++i) args.push_back(ParamArgument(k.params[i], i));
    out_ += "static kpack_status " + p + "_launch_auto(int kpack_combo, const int64_t *kpack_v, "
            "void *const *kpack_p, kpack_stream stream) {\n";
    out_ += "  (void)kpack_combo;\n  (void)kpack_v;\n  (void)kpack_p;\n";
    out_ += "  return " + pkg_.prefix + "_" + k.name + "_auto(" + Join(args, ", ") + ");\n}\n\n";
  }

  // The launcher's test for its aligned variant (codegen::AlignedVariantTest)
  // over the params it names, bound from kpack_v and kpack_p; only for a
  // kernel with unaligned twins.
  void WriteAligned(const TuneLayout& l, const std::string& p) {
    if (!l.unaligned_twin) return;
    const Kernel& k = *l.kernel;
    std::string what;
    const std::string test = codegen::AlignedVariantTest(k, &what);
    out_ += "/* The launcher's aligned variant runs when " + CommentText(what) + ". */\n";
    out_ += "static int " + p + "_aligned(const int64_t *kpack_v, void *const *kpack_p) {\n";
    out_ += "  (void)kpack_v;\n  (void)kpack_p;\n";
    for (size_t i = 0; i < k.params.size(); ++i) {
      const Param& q = k.params[i];
      if (!q.divisibility_auto && !q.equal_to_1) continue;
      const std::string n = std::to_string(i);
      if (q.type.is_pointer) {
        out_ += "  const void *const " + q.name + " = kpack_p[" + n + "];\n";
      } else if (Info(q.type.scalar).is_integer && q.type.scalar != Scalar::kBool) {
        const std::string type(Info(q.type.scalar).c_type);
        out_ += "  const " + type + " " + q.name + " = (" + type + ")kpack_v[" + n + "];\n";
      } else {
        out_ += "  const int64_t " + q.name + " = kpack_v[" + n + "];\n";
      }
    }
    out_ += "  return " + test + ";\n}\n\n";
  }

  static std::string ParamArgument(const Param& p, size_t i) {
    const std::string n = std::to_string(i);
    if (p.type.is_pointer) return "kpack_p[" + n + "]";
    const std::string v = "kpack_v[" + n + "]";
    switch (p.type.scalar) {
      case Scalar::kF16: return "kpack_tune_to_f16(" + v + ")";
      case Scalar::kBF16: return "kpack_tune_to_bf16(" + v + ")";
      case Scalar::kBool: return "(" + v + " != 0)";
      default: return "(" + std::string(Info(p.type.scalar).c_type) + ")" + v;
    }
  }

  const Package& pkg_;
  const std::vector<TuneLayout> layouts_;
  const CodegenOptions& o_;
  std::string out_;
};

}  // namespace

std::string GenerateTuner(const Package& pkg, const std::vector<Specialization>& specs, const CodegenOptions& options) {
  return TunerWriter(pkg, specs, options).Write();
}

}  // namespace kpack
