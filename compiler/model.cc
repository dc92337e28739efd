#include "model.h"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>

namespace kpack {
namespace {

struct KnownArch {
  std::string_view name;
  Arch arch;
};

// What `nvcc --list-gpu-code` of CUDA 13.0 accepts (sm_75 is the oldest).
constexpr std::array<KnownArch, 16> kKnownArchs = {{
    {"sm_75", {75, Arch::Variant::kPlain}},
    {"sm_80", {80, Arch::Variant::kPlain}},
    {"sm_86", {86, Arch::Variant::kPlain}},
    {"sm_87", {87, Arch::Variant::kPlain}},
    {"sm_89", {89, Arch::Variant::kPlain}},
    {"sm_90", {90, Arch::Variant::kPlain}},
    {"sm_90a", {90, Arch::Variant::kSpecific}},
    {"sm_100", {100, Arch::Variant::kPlain}},
    {"sm_100a", {100, Arch::Variant::kSpecific}},
    {"sm_100f", {100, Arch::Variant::kFamily}},
    {"sm_103", {103, Arch::Variant::kPlain}},
    {"sm_103a", {103, Arch::Variant::kSpecific}},
    {"sm_110", {110, Arch::Variant::kPlain}},
    {"sm_120", {120, Arch::Variant::kPlain}},
    {"sm_120a", {120, Arch::Variant::kSpecific}},
    {"sm_121", {121, Arch::Variant::kPlain}},
}};

}  // namespace

std::string Arch::Name() const { return "sm_" + SmValue(); }

std::string Arch::SmValue() const {
  std::string s = std::to_string(number);
  if (variant == Variant::kSpecific) s += "a";
  if (variant == Variant::kFamily) s += "f";
  return s;
}

uint32_t Arch::RuntimeCode() const {
  uint32_t code = static_cast<uint32_t>(number);
  if (variant == Variant::kSpecific) code |= 0x10000;  // KPACK_ARCH_SPECIFIC
  if (variant == Variant::kFamily) code |= 0x20000;    // KPACK_ARCH_FAMILY
  return code;
}

std::optional<Arch> ParseArch(const std::string& name) {
  for (const KnownArch& known : kKnownArchs)
    if (known.name == name) return known.arch;
  return std::nullopt;
}

std::string SupportedArchList() {
  std::string out;
  for (const KnownArch& known : kKnownArchs) {
    if (!out.empty()) out += ", ";
    out += known.name;
  }
  return out;
}

std::vector<Arch> Kernel::BuildArchs() const {
  if (language != Language::kTriton) return archs;
  std::vector<Arch> out;
  for (Arch a : archs) {
    if (a.number >= 90) a.variant = Arch::Variant::kSpecific;
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  return out;
}

bool SameValue(const ConstexprValue& a, const ConstexprValue& b) {
  // Floats compare by value (so 1e-6 and 0.000001 are one), strings by text.
  return a.integer == b.integer && a.dtype == b.dtype && a.real == b.real && a.text == b.text;
}

const ConstexprValue* Kernel::Option(const std::vector<ConstexprValue>& values, const std::string& name) const {
  for (size_t i = 0; i < constexprs.size() && i < values.size(); ++i)
    if (constexprs[i].option && constexprs[i].name == name) return &values[i];
  return nullptr;
}

namespace {

// An option's value: the option axis, else a kernel's own tl.constexpr of
// that name (Triton's JIT, called with num_warps=8 as a keyword, gives the
// value to both the parameter and the option), else Triton's default.
int64_t OptionOrConstexpr(const Kernel& k, const std::vector<ConstexprValue>& values, const std::string& name,
                          int64_t fallback) {
  if (const ConstexprValue* v = k.Option(values, name)) return v->integer;
  for (size_t i = 0; i < k.constexprs.size() && i < values.size(); ++i)
    if (k.constexprs[i].name == name && k.constexprs[i].kind == ConstexprKind::kInt) return values[i].integer;
  return fallback;
}

}  // namespace

int64_t Kernel::NumWarps(const std::vector<ConstexprValue>& values) const {
  return OptionOrConstexpr(*this, values, "num_warps", 4);
}

int64_t Kernel::NumStages(const std::vector<ConstexprValue>& values) const {
  return OptionOrConstexpr(*this, values, "num_stages", 3);
}

int64_t Kernel::NumCtas(const std::vector<ConstexprValue>& values) const {
  const ConstexprValue* v = Option(values, "num_ctas");
  return v ? v->integer : 1;
}

namespace {

void NamesRead(const Expr& e, std::set<std::string>& out) {
  if (e.kind == Expr::Kind::kName) out.insert(e.name);
  for (const Expr& arg : e.args) NamesRead(arg, out);
}

}  // namespace

namespace {

// The constexprs that `rule_of` gives a rule, ordered so that each comes
// after those its rule reads; nullopt, with one of them in *cycle, when
// rules read each other in a cycle.  A rule reading its own constexpr is a
// cycle unless `self_ok`.  Repeatedly takes the first whose inputs are all
// placed: a few rules per kernel, so the quadratic walk is fine.
std::optional<std::vector<size_t>> RuleOrder(const std::vector<Constexpr>& constexprs,
                                             const std::optional<Expr>& (*rule_of)(const Constexpr&), bool self_ok,
                                             std::string* cycle) {
  std::vector<size_t> pending, order;
  for (size_t i = 0; i < constexprs.size(); ++i)
    if (rule_of(constexprs[i])) pending.push_back(i);
  while (!pending.empty()) {
    auto ready = std::find_if(pending.begin(), pending.end(), [&](size_t i) {
      std::set<std::string> reads;
      NamesRead(*rule_of(constexprs[i]), reads);
      return std::none_of(pending.begin(), pending.end(), [&](size_t j) {
        return (j != i || !self_ok) && reads.count(constexprs[j].name);
      });
    });
    if (ready == pending.end()) {
      if (cycle) *cycle = constexprs[pending.front()].name;
      return std::nullopt;
    }
    order.push_back(*ready);
    pending.erase(ready);
  }
  return order;
}

const std::optional<Expr>& ComputedRule(const Constexpr& c) { return c.rule; }
const std::optional<Expr>& AutoRule(const Constexpr& c) { return c.auto_rule; }

}  // namespace

std::optional<std::vector<size_t>> Kernel::ComputedOrder(std::string* cycle) const {
  return RuleOrder(constexprs, ComputedRule, true, cycle);
}

// A rule reading its own constexpr is a cycle here: the auto dispatcher has
// no value of it to read.
std::optional<std::vector<size_t>> Kernel::AutoOrder(std::string* cycle) const {
  return RuleOrder(constexprs, AutoRule, false, cycle);
}

bool Kernel::HasAuto() const {
  return std::any_of(constexprs.begin(), constexprs.end(), [](const Constexpr& c) { return c.Auto(); });
}

bool Kernel::HasComputed() const {
  return std::any_of(constexprs.begin(), constexprs.end(), [](const Constexpr& c) { return c.Computed(); });
}

bool Kernel::HasAlignedVariant() const {
  return std::any_of(params.begin(), params.end(), [](const Param& p) { return p.divisibility_auto || p.equal_to_1; });
}

bool Kernel::HasNarrowVariant() const {
  return std::any_of(params.begin(), params.end(), [](const Param& p) { return p.width_auto; });
}

const Constexpr* Kernel::FindConstexpr(const std::string& n) const {
  for (const Constexpr& c : constexprs)
    if (c.name == n) return &c;
  return nullptr;
}

const Param* Kernel::FindParam(const std::string& n) const {
  for (const Param& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

}  // namespace kpack
