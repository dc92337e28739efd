#include "tune_hash.h"

#include "fs_util.h"

namespace kpack {
namespace {

void AddOptionalExpr(Hasher& h, const std::optional<Expr>& e) { h.Add(e ? FormatExpr(*e) : std::string("-")); }

void AddFill(Hasher& h, const TuneFill& f) {
  h.Add(std::to_string(static_cast<int>(f.kind)));
  AddOptionalExpr(h, f.lo);
  AddOptionalExpr(h, f.hi);
  AddOptionalExpr(h, f.value);
}

void AddTune(Hasher& h, const Tune& t) {
  h.Add("tune");
  for (const TuneAxis& axis : t.key) {
    h.Add(axis.param);
    for (int64_t v : axis.values) h.Add(std::to_string(v));
    h.Add(";");
  }
  for (const TuneParam& p : t.params) h.Add(p.param).Add(FormatExpr(p.value));
  for (const TuneBuffer& b : t.buffers) {
    h.Add(b.param).Add(FormatExpr(b.count));
    AddFill(h, b.fill);
  }
  AddOptionalExpr(h, t.valid);
}

}  // namespace

std::string TuneManifestHash(const Kernel& k, const std::vector<const Specialization*>& specs) {
  Hasher h;
  h.Add("kpack-tune-1").Add(k.name).Add(k.language == Language::kCuda ? "cuda" : "triton").Add(k.entry);
  for (const Constexpr& c : k.constexprs) {
    h.Add(c.name).Add(std::to_string(static_cast<int>(c.kind))).Add(c.option ? "option" : "");
    for (const ConstexprValue& v : c.values) h.Add(ValueText(c, v));
    AddOptionalExpr(h, c.auto_rule);
    AddOptionalExpr(h, c.rule);
  }
  for (const Param& p : k.params)
    h.Add(p.name).Add(p.type_text).Add(std::to_string(p.divisibility)).Add(p.divisibility_auto ? "da" : "")
        .Add(p.width_auto ? "wa" : "").Add(p.equal_to_1 ? "e1" : "").Add(p.launch_only ? "lo" : "");
  for (const Expr& e : k.launch.grid) h.Add(FormatExpr(e));
  h.Add("|");
  for (const Expr& e : k.launch.block) h.Add(FormatExpr(e));
  h.Add(FormatExpr(k.launch.shared_mem));
  if (k.tune) AddTune(h, *k.tune);
  h.Add("specs");
  for (const Specialization* s : specs) h.Add(s->name);
  return h.HexDigest().substr(0, 16);
}

}  // namespace kpack
