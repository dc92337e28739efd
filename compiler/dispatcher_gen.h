// dispatcher_gen.h - the generated dispatcher of one kernel (launcher_gen.cc
// writes the rest of the launcher source).
#pragma once

#include <string>
#include <vector>

#include "expand.h"
#include "model.h"

namespace kpack::codegen {

// The C of `<prefix>_<kernel>(stream, constexprs..., params...)`: a switch
// per constexpr callers choose (an if-chain for float and str ones, which
// need <string.h> and kpack_float_bits_ from the launcher source), calling
// the typed launcher of the match, else KPACK_ERROR_NO_SPECIALIZATION with
// the values asked and the combinations built.  `specs` are the kernel's
// API specializations, in expansion order.
std::string DispatcherSource(const Package& pkg, const Kernel& k, const std::vector<const Specialization*>& specs);

}  // namespace kpack::codegen
