#include "auto_rules.h"

#include "kernel_reader.h"

namespace kpack {
namespace {

const char* KindName(const Constexpr& c) {
  switch (c.kind) {
    case ConstexprKind::kDtype: return "dtype";
    case ConstexprKind::kFloat: return "float";
    case ConstexprKind::kStr: return c.cpp_name ? "cpp" : "str";
    case ConstexprKind::kBool: return "bool";
    case ConstexprKind::kInt: break;
  }
  return "int";
}

}  // namespace

// A computed constexpr's value exists only inside the typed launcher, which
// runs after the auto dispatcher chose: reported at each use.
void CheckNoComputed(Diagnostics& diag, const Kernel& k, const Expr& e, const std::string& reader) {
  if (e.kind == Expr::Kind::kName)
    if (const Constexpr* c = k.FindConstexpr(e.name); c && c->Computed())
      diag.Error(e.loc, "'" + e.name + "' is computed by the typed launcher (" + c->rule_source +
                            "), after the auto dispatcher chose; " + reader + " cannot read it");
  for (const Expr& arg : e.args) CheckNoComputed(diag, k, arg, reader);
}

void CheckAutoRules(Diagnostics& diag, const Kernel& k) {
  auto lookup = [&k](const std::string& name) { return LookUpName(k, name); };
  for (const Constexpr& c : k.constexprs) {
    if (c.auto_loc.line == 0) continue;
    if (c.kind != ConstexprKind::kInt && c.kind != ConstexprKind::kBool) {
      diag.Error(c.auto_loc, "auto applies to int and bool constexprs only ('" + c.name + "' is a " + KindName(c) +
                                 " constexpr, which the auto dispatcher takes from its caller)");
      continue;
    }
    if (c.Computed() && c.origin == ConstexprOrigin::kHeuristic) {
      diag.Error(c.auto_loc, "constexpr '" + c.name + "' is computed by the " + c.rule_source +
                                 "; give it rule: none in the manifest for its auto rule to choose it instead");
      continue;
    }
    // A CUDA kernel's rule is refused on its own (CheckCuda).
    if (c.Computed() && k.language == Language::kTriton) {
      diag.Error(c.auto_loc, "constexpr '" + c.name + "' has both rule and auto: a rule makes the typed launcher "
                             "compute it on every call, auto lets the auto dispatcher choose it; keep one");
      continue;
    }
    if (!c.auto_rule) continue;
    CheckExpr(*c.auto_rule, lookup, true, diag);
    CheckNoComputed(diag, k, *c.auto_rule, "an auto rule");
  }
  std::string cycle;
  if (!k.AutoOrder(&cycle)) {
    const Constexpr* c = k.FindConstexpr(cycle);
    diag.Error(c->auto_loc, "the auto rules read each other in a cycle (through '" + cycle +
                                "'); the auto dispatcher cannot compute them");
  }
}

}  // namespace kpack
