#include "check.h"

#include <map>

#include "cubin.h"
#include "cuda_instance.h"
#include "expand.h"
#include "expr_bounds.h"
#include "debug_guard.h"
#include "codegen_text.h"
#include "tensordesc.h"
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

// What Triton decided must be what the launcher can pass: a TMA layout per
// tensordesc param, of its rank and element size; with num_ctas, the cubin's
// own cluster, (num_ctas, 1, 1).
void CheckTritonMeta(const Unit& u, const TritonMeta& meta, const CubinKernel& kernel, Diagnostics& diag) {
  const Kernel& k = *u.spec->kernel;
  std::vector<const Param*> descs;
  for (const Param& p : k.params)
    if (p.tensordesc) descs.push_back(&p);
  if (meta.descs.size() != descs.size()) {
    diag.Error(k.params_loc, Where(u) + ": Triton laid out " + std::to_string(meta.descs.size()) +
                                 " tensor descriptors, but the manifest has " + std::to_string(descs.size()) +
                                 " tensordesc params");
    return;
  }
  for (size_t i = 0; i < descs.size(); ++i) {
    const DescLayout& l = meta.descs[i];
    const uint32_t bytes = Info(codegen::ElementScalar(*u.spec, descs[i]->type)).size;
    if (l.box.size() != descs[i]->tensordesc->Rank() || l.elem_bytes != bytes)
      diag.Error(descs[i]->loc, Where(u) + ": Triton's TMA layout of '" + descs[i]->name + "' has rank " +
                                    std::to_string(l.box.size()) + " and " + std::to_string(l.elem_bytes) +
                                    "-byte elements, but the manifest gives rank " +
                                    std::to_string(descs[i]->tensordesc->Rank()) + " and " + std::to_string(bytes));
  }
  // The launcher passes exactly two scratch pointers, global then profile.
  if ((meta.global_scratch.size > 0 || meta.profile_scratch.size > 0) && meta.hidden_pointer_params != 2)
    diag.Error(k.loc, Where(u) + ": Triton's kernel needs scratch but takes " +
                          std::to_string(meta.hidden_pointer_params) + " hidden pointers, not the 2 kpack passes");
  const uint32_t* c = kernel.cluster_dims;
  const bool clustered = c[0] * std::max(c[1], 1u) * std::max(c[2], 1u) > 1;
  if ((meta.num_ctas > 1 || clustered) && !(c[0] == meta.num_ctas && c[1] <= 1 && c[2] <= 1))
    diag.Error(k.loc, Where(u) + ": Triton compiled num_ctas=" + std::to_string(meta.num_ctas) +
                          ", but the cubin's cluster is " + std::to_string(c[0]) + "x" + std::to_string(c[1]) + "x" +
                          std::to_string(c[2]));
}

// A descriptor the driver would refuse on every launch is a build error, at
// its param: the CUDA kernel's layout (the manifest's box and swizzle), or
// Triton's (which Triton chose for this build).
void CheckDescLayouts(const Unit& u, const std::vector<DescLayout>& compiled, Diagnostics& diag) {
  const Specialization& s = *u.spec;
  const std::vector<DescLayout> layouts = DescLayouts(s, compiled);
  size_t i = 0;
  for (const Param& p : s.kernel->params) {
    if (!p.tensordesc) continue;
    if (i >= layouts.size()) return;  // CheckTritonMeta reported the count
    const DescLayout& l = layouts[i++];
    if (std::string why = CheckDescLayout(l, p.tensordesc->padding_nan, codegen::ElementScalar(s, p.type));
        !why.empty())
      diag.Error(p.tensordesc->block_loc, Where(u) + ": tensordesc '" + p.name + "': " + why);
  }
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
    CheckTritonMeta(u, *meta, *kernel, diag);
    CheckDescLayouts(u, meta->descs, diag);
  } else {
    CheckDescLayouts(u, {}, diag);
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
  // The params the kernel takes, in order, a tensordesc once per slot
  // (its map, then Triton's shapes and strides), and what each slot is.
  std::vector<const Param*> passed;
  std::vector<std::string> parts;
  for (const Param& p : k.params) {
    if (p.launch_only || (s.aligned && p.equal_to_1)) continue;
    if (!p.tensordesc) {
      passed.push_back(&p);
      parts.push_back("");
      continue;
    }
    const size_t rank = p.tensordesc->Rank(), slots = DescKernelSlots(p, u.triton).size();
    for (size_t j = 0; j < slots; ++j) {
      passed.push_back(&p);
      parts.push_back(j == 0 ? "its CUtensorMap" : j <= rank ? "its shape " + std::to_string(j - 1)
                                                             : "its stride " + std::to_string(j - 1 - rank));
    }
  }
  uint32_t shift = 0;  // how far ptxas moved the params, to align a CUtensorMap
  for (size_t i = 0; i < expected.size(); ++i) {
    const KernelParamInfo& got = kernel->params[i];
    // A CUtensorMap sits on a 64-byte boundary of the constant bank, whose
    // base is ptxas's: accept its padding (less than the map), then expect
    // the params after it where it put them.
    const uint32_t at = expected[i].first + shift;
    if (expected[i].second == 128 && got.ordinal == i && got.size == 128 && got.offset >= at &&
        got.offset - at < 128 && got.offset % 16 == 0)
      shift = got.offset - expected[i].first;
    if (got.ordinal == i && got.offset == expected[i].first + shift && got.size == expected[i].second) continue;
    const bool is_hidden = i >= passed.size();
    const SourceLoc& loc = is_hidden ? k.params_loc : passed[i]->loc;
    std::string what = is_hidden ? "hidden parameter " + std::to_string(i - passed.size()) + " (Triton's scratch pointer)"
                                 : "parameter '" + passed[i]->name + "' (" + passed[i]->type_text +
                                       (parts[i].empty() ? "" : ", " + parts[i]) + ")";
    diag.Error(loc, where + ": " + what + " is at " + Layout(got.offset, got.size) +
                        " in the cubin, but the launcher passes " + Layout(expected[i].first + shift, expected[i].second));
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
// One typed launcher serves every build and arch of a specialization, and
// passes one cluster and one TMA layout per descriptor: Triton must have
// chosen the same for all of them.
void CheckTritonBuildsAgree(const Plan& plan, const std::vector<CompiledUnit>& compiled, Diagnostics& diag) {
  std::map<size_t, std::pair<size_t, TritonMeta>> first;  // group -> unit, its meta
  for (size_t i = 0; i < plan.units.size(); ++i) {
    const Unit& u = plan.units[i];
    if (!u.triton) continue;
    std::string error;
    std::optional<TritonMeta> meta = ParseTritonMeta(compiled[i].meta, &error);
    if (!meta) continue;
    auto [it, inserted] = first.emplace(u.spec->group, std::make_pair(i, *meta));
    if (inserted) continue;
    const TritonMeta& other = it->second.second;
    if (other.num_ctas == meta->num_ctas && other.descs == meta->descs) continue;
    diag.Error(u.spec->kernel->loc, Where(u) + ": Triton chose another cluster or TMA layout than for " +
                                        Where(plan.units[it->second.first]) +
                                        "; the launcher passes one for every build and arch");
  }
}

std::string Where(const Unit& u) {
  const Specialization& s = *u.spec;
  std::string label = s.BuildLabel();
  return "specialization " + s.name + " (" + (label.empty() ? "" : label + ", ") + u.arch.Name() + ")";
}

}  // namespace

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
  std::vector<std::pair<uint32_t, uint32_t>> slots;  // size, alignment
  // Launch-only params are not the kernel's, and an aligned build takes
  // equal_to_1 params as constants (Triton drops constexprs from the list).
  // Scalars and pointers are naturally aligned; a CUtensorMap is 64-byte.
  const bool triton = s.kernel->language == Language::kTriton;
  for (const Param& p : s.kernel->params) {
    if (p.launch_only || (s.aligned && p.equal_to_1)) continue;
    if (p.tensordesc) {
      for (auto slot : DescKernelSlots(p, triton)) slots.push_back(slot);
      continue;
    }
    uint32_t size = ParamSize(s.TypeOf(p));
    slots.emplace_back(size, size);
  }
  slots.insert(slots.end(), hidden_pointers, {8, 8});
  std::vector<std::pair<uint32_t, uint32_t>> out;
  uint32_t offset = 0;
  for (auto [size, align] : slots) {
    offset = (offset + align - 1) / align * align;
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
  if (diag.error_count() == errors_before) CheckTritonBuildsAgree(plan, compiled, diag);
  return diag.error_count() == errors_before;
}

}  // namespace kpack
