#include "check.h"

#include <map>

#include "cubin.h"
#include "cuda_instance.h"
#include "expand.h"
#include "expr_bounds.h"
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

std::string Where(const Unit& u);

// The most threads a block of this kernel can have: its launch bounds
// (EIATTR_MAX_THREADS), else 1024, and what its registers allow (65536 a
// multiprocessor on sm_80 to sm_120, allocated per warp in units of 256).
uint32_t MaxBlockThreads(const CubinKernel& kernel) {
  uint32_t limit = kernel.max_threads ? std::min<uint32_t>(kernel.max_threads, 1024) : 1024;
  if (kernel.registers > 0) {
    uint32_t per_warp = (kernel.registers * 32 + 255) / 256 * 256;
    limit = std::min(limit, 65536 / per_warp * 32);
  }
  return limit;
}

// A block expression that can exceed what the cubin launches is a build
// error: the launch would fail at run time for some arguments, far from
// the cause.  Bounded by interval analysis over the params' types.
void CheckBlockFits(const Unit& u, const CubinKernel& kernel, Diagnostics& diag) {
  const Specialization& s = *u.spec;
  const Kernel& k = *s.kernel;
  if (u.triton || k.launch.block.empty()) return;
  ExprBindings bindings = BindingsFor(s);
  NameRange ranges = [&](const std::string& name) -> std::optional<Interval> {
    const Param* p = k.FindParam(name);
    if (!p || p->type.is_pointer) return std::nullopt;
    return ScalarRange(s.TypeOf(*p).scalar);
  };
  __int128 threads = 1;
  std::string dims, witness;
  for (const Expr& e : k.launch.block) {
    std::optional<Interval> b = BoundExpr(e, bindings, ranges);
    int64_t hi = b ? b->hi : INT64_MAX;
    threads *= std::max<int64_t>(hi, 1);
    if (threads > INT64_MAX) threads = INT64_MAX;
    dims += (dims.empty() ? "" : " x ") + std::to_string(hi);
    if (std::string w = BoundWitness(e, bindings, ranges); !w.empty())
      witness += (witness.empty() ? "" : ", ") + w;
  }
  uint32_t limit = MaxBlockThreads(kernel);
  if (threads <= limit) return;
  std::string why = kernel.max_threads ? "its launch bounds allow " + std::to_string(kernel.max_threads)
                                       : "a block has at most 1024";
  if (limit < std::min<uint32_t>(kernel.max_threads ? kernel.max_threads : 1024, 1024))
    why += ", and its " + std::to_string(kernel.registers) + " registers a thread allow " + std::to_string(limit);
  diag.Error(k.launch.block_loc, Where(u) + ": the block can reach " + dims + " threads" +
                                     (witness.empty() ? "" : " (at " + witness + ")") +
                                     ", more than the kernel launches with (" + why +
                                     "); bound the expression, e.g. with min()");
}

// __cluster_dims__ fixes the cluster in the cubin; a launch must not set another.
void CheckCluster(const Unit& u, const CubinKernel& kernel, Diagnostics& diag) {
  const Kernel& k = *u.spec->kernel;
  if (kernel.cluster_dims[0] == 0 || k.launch.cluster.empty()) return;
  diag.Error(k.launch.cluster_loc, Where(u) + ": the kernel sets its own cluster dimensions (__cluster_dims__(" +
                                       std::to_string(kernel.cluster_dims[0]) + ", " +
                                       std::to_string(kernel.cluster_dims[1]) + ", " +
                                       std::to_string(kernel.cluster_dims[2]) + ")); remove launch.cluster");
}

void CheckUnit(const Unit& u, const CompiledUnit& c, UnitFacts& facts, Diagnostics& diag) {
  const Specialization& s = *u.spec;
  const Kernel& k = *s.kernel;
  std::string where = Where(u);
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
  CheckBlockFits(u, *kernel, diag);
  CheckCluster(u, *kernel, diag);
  facts.registers = kernel->registers;
  for (int i = 0; i < 3; ++i) facts.cluster_dims[i] = kernel->cluster_dims[i];
  facts.static_shared_bytes = kernel->static_shared_bytes;
  facts.local_bytes = kernel->local_bytes;
  facts.max_threads = kernel->max_threads;
  facts.has_debug_info = info->has_debug_info;
  facts.debug_code = CubinIsDebug(*info);
}

// The template arguments kpack wrote in the explicit instantiation, as the
// demangled symbol must show them.
std::vector<ExpectedArg> ExpectedArgs(const Specialization& s) {
  std::vector<ExpectedArg> out;
  const Kernel& k = *s.kernel;
  for (size_t i = 0; i < k.constexprs.size(); ++i) {
    const Constexpr& c = k.constexprs[i];
    const ConstexprValue& v = s.values[i];
    ExpectedArg a;
    switch (c.kind) {
      case ConstexprKind::kInt: a.kind = ExpectedArg::kInteger; a.integer = v.integer; break;
      case ConstexprKind::kBool: a.kind = ExpectedArg::kBool; a.integer = v.integer; break;
      case ConstexprKind::kDtype: a.kind = ExpectedArg::kType; a.text = Info(v.dtype).cuda_type; break;
      default: a.kind = ExpectedArg::kName; a.text = v.text; break;  // type: cpp
    }
    out.push_back(a);
  }
  return out;
}

std::string Where(const Unit& u) {
  const Specialization& s = *u.spec;
  std::string label = s.BuildLabel();
  return "specialization " + s.name + " (" + (label.empty() ? "" : label + ", ") + u.arch.Name() + ")";
}

}  // namespace

bool ResolveEntrySymbols(const Plan& plan, const std::vector<CompiledUnit>& compiled,
                         std::vector<Specialization>& specs, Diagnostics& diag) {
  int errors_before = diag.error_count();
  std::map<const Specialization*, Specialization*> mutable_specs;
  for (Specialization& s : specs) mutable_specs[&s] = &s;
  std::map<const Specialization*, std::pair<std::string, std::string>> found;  // symbol, arch
  for (size_t i = 0; i < plan.units.size(); ++i) {
    const Unit& u = plan.units[i];
    const Kernel& k = *u.spec->kernel;
    if (!k.global_entry || u.ptx) continue;
    std::string error;
    std::optional<CubinInfo> info = ReadCubin(compiled[i].binary, &error);
    if (!info) {
      diag.Error(k.loc, Where(u) + ": cannot read the cubin nvcc produced: " + error);
      continue;
    }
    std::vector<std::string> symbols;
    for (const CubinKernel& kernel : info->kernels) symbols.push_back(kernel.name);
    std::string demangled;
    std::optional<std::string> symbol = FindInstance(symbols, k.entry, ExpectedArgs(*u.spec), &demangled, &error);
    if (!symbol) {
      diag.Error(k.loc, Where(u) + ": " + error);
      continue;
    }
    auto [it, first] = found.emplace(u.spec, std::make_pair(*symbol, u.arch.Name()));
    if (!first && it->second.first != *symbol) {
      diag.Error(k.loc, Where(u) + ": the kernel is " + *symbol + " here but " + it->second.first + " in " +
                            it->second.second + "; one fatbin holds one entry name");
      continue;
    }
    mutable_specs.at(u.spec)->symbol = *symbol;
  }
  return diag.error_count() == errors_before;
}

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
