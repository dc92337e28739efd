// auto_rules.h - the load pass's checks of `auto:` rules (docs/manifest.md,
// "Rules: the auto dispatcher"): which constexprs may have one, what a rule
// may read, and the order the auto dispatcher evaluates them in.
#pragma once

#include <string>

#include "diagnostics.h"
#include "model.h"

namespace kpack {

// Reports each problem of `k`'s auto rules at its position: `auto` on a
// constexpr that is not int or bool, or that a rule (the manifest's or a
// heuristic's) computes; names a rule cannot read (CheckExpr's, and
// computed constexprs, whose values the typed launcher makes after the
// auto dispatcher chose); rules that read each other in a cycle.
void CheckAutoRules(Diagnostics& diag, const Kernel& k);

// Reports each name in `e` that is a computed constexpr: the auto
// dispatcher, which evaluates `e`, runs before the typed launcher computes
// it.  `reader` names what reads it in the message ("an auto rule").
void CheckNoComputed(Diagnostics& diag, const Kernel& k, const Expr& e, const std::string& reader);

}  // namespace kpack
