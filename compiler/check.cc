#include "check.h"

#include "cubin.h"
#include "debug_guard.h"
#include "triton.h"

namespace kpack {
namespace {

uint32_t ParamSize(const ParamType& t) {
  return t.is_pointer ? 8 : Info(t.scalar).size;
}

std::string Layout(uint32_t offset, uint32_t size) {
  return "offset " + std::to_string(offset) + ", size " + std::to_string(size);
}

void CheckUnit(const Unit& u, const CompiledUnit& c, UnitFacts& facts, Diagnostics& diag) {
  const Specialization& s = *u.spec;
  const Kernel& k = *s.kernel;
  std::string label = s.BuildLabel();
  std::string where = "specialization " + s.name + " (" + (label.empty() ? "" : label + ", ") + u.arch.Name() + ")";
  std::string error;
  std::optional<CubinInfo> info = ReadCubin(c.binary, &error);
  if (!info) {
    diag.Error(k.loc, where + ": cannot read the cubin nvcc produced: " + error);
    return;
  }
  Arch got{static_cast<int>(info->sm), info->arch_specific   ? Arch::Variant::kSpecific
                                       : info->family_specific ? Arch::Variant::kFamily
                                                               : Arch::Variant::kPlain};
  if (got != u.arch) {
    diag.Error(k.loc, where + ": the cubin is for " + got.Name() + ", expected " + u.arch.Name());
    return;
  }
  const CubinKernel* kernel = info->Find(s.symbol);
  if (!kernel) {
    diag.Error(k.loc, where + ": kernel symbol '" + s.symbol + "' is missing from the cubin");
    return;
  }
  uint32_t hidden = 0;
  if (u.triton) {
    std::optional<TritonMeta> meta = ParseTritonMeta(c.meta, &error);
    if (!meta) {
      diag.Error(k.loc, where + ": " + error);
      return;
    }
    hidden = meta->hidden_pointer_params;
  }
  std::vector<std::pair<uint32_t, uint32_t>> expected = ExpectedLayout(s, hidden);
  if (kernel->params.empty() && kernel->param_bytes > 4352) {
    // ptxas omits EIATTR_KPARAM_INFO for parameter blocks over 4352 bytes;
    // the manifest's types cannot reach that size, so this is a foreign cubin.
    diag.Error(k.params_loc, where + ": the cubin's " + std::to_string(kernel->param_bytes) +
                                 "-byte parameter block has no layout information");
    return;
  }
  if (kernel->params.size() != expected.size()) {
    diag.Error(k.params_loc, where + ": the kernel takes " + std::to_string(kernel->params.size()) +
                                 " parameters but the manifest lists " + std::to_string(expected.size()));
    return;
  }
  std::vector<const Param*> passed;  // the params the kernel takes, in order
  for (const Param& p : k.params)
    if (!p.launch_only && !(s.aligned && p.equal_to_1)) passed.push_back(&p);
  for (size_t i = 0; i < expected.size(); ++i) {
    const KernelParamInfo& got = kernel->params[i];
    if (got.ordinal == i && got.offset == expected[i].first && got.size == expected[i].second) continue;
    const bool is_hidden = i >= passed.size();
    const SourceLoc& loc = is_hidden ? k.params_loc : passed[i]->loc;
    std::string what = is_hidden ? "hidden parameter " + std::to_string(i - passed.size()) + " (Triton's scratch pointer)"
                                 : "parameter '" + passed[i]->name + "' (" + passed[i]->type_text + ")";
    diag.Error(loc, where + ": " + what + " is at " + Layout(got.offset, got.size) +
                        " in the cubin, but the launcher passes " + Layout(expected[i].first, expected[i].second));
  }
  facts.registers = kernel->registers;
  facts.static_shared_bytes = kernel->static_shared_bytes;
  facts.local_bytes = kernel->local_bytes;
  facts.max_threads = kernel->max_threads;
  facts.has_debug_info = info->has_debug_info;
  facts.debug_code = CubinIsDebug(*info);
}

}  // namespace

std::vector<std::pair<uint32_t, uint32_t>> ExpectedLayout(const Specialization& s, uint32_t hidden_pointers) {
  std::vector<uint32_t> sizes;
  // Launch-only params are not the kernel's, and an aligned build takes
  // equal_to_1 params as constants (Triton drops constexprs from the list).
  for (const Param& p : s.kernel->params)
    if (!p.launch_only && !(s.aligned && p.equal_to_1)) sizes.push_back(ParamSize(s.TypeOf(p)));
  sizes.insert(sizes.end(), hidden_pointers, 8);
  std::vector<std::pair<uint32_t, uint32_t>> out;
  uint32_t offset = 0;
  for (uint32_t size : sizes) {
    // Every kpack parameter type is naturally aligned: alignment == size.
    offset = (offset + size - 1) / size * size;
    out.emplace_back(offset, size);
    offset += size;
  }
  return out;
}

bool CheckUnits(const Plan& plan, const std::vector<CompiledUnit>& compiled, std::vector<UnitFacts>& facts,
                Diagnostics& diag) {
  int errors_before = diag.error_count();
  facts.assign(plan.units.size(), UnitFacts{});
  for (size_t i = 0; i < plan.units.size(); ++i)
    if (!plan.units[i].ptx) CheckUnit(plan.units[i], compiled[i], facts[i], diag);
  return diag.error_count() == errors_before;
}

}  // namespace kpack
