// auto_dispatcher_gen.h - the generate pass's auto dispatchers: for a kernel
// with `auto:` rules, <prefix>_<kernel>_auto computes those constexprs from
// the call's arguments and the device, then calls the kernel's dispatcher
// (dispatcher_gen.h) with them (docs/manifest.md, "Rules: the auto
// dispatcher").
#pragma once

#include <set>
#include <string>
#include <vector>

#include "expand.h"
#include "model.h"

namespace kpack::codegen {

// "kpack_stream stream[, int pdl], <the API constexprs without auto>,
// <params as the dispatcher takes them>".  In the `definition`, a bool
// constexpr that a rule reads is kpack_arg_NAME: the body reads it as 0 or
// 1 under its own name.
std::string AutoDispatcherParams(const Kernel& k, bool definition = false);

// The header's doc block and declaration of `k`'s auto dispatcher; "" for a
// kernel without auto constexprs.
std::string AutoDispatcherDecl(const Package& pkg, const Kernel& k);

// Its definition, for the launcher source; "" without auto constexprs.  The
// rules are the launch expressions' C (EmitExprC, kpack_*_ helpers setting
// kpack_bad, kpack_device_attribute), evaluated in AutoOrder; where they
// read sizeof of dtype constexprs, once per built combination of those
// dtypes, so that each branch folds the sizes.  `specs` are the kernel's
// API specializations.
std::string AutoDispatcherSource(const Package& pkg, const Kernel& k, const std::vector<const Specialization*>& specs);

// The functions (expr.h names) that definition calls: the launcher source
// defines their helpers.
std::set<std::string> AutoFunctionsUsed(const Kernel& k, const std::vector<const Specialization*>& specs);

}  // namespace kpack::codegen
