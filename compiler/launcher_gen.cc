// launcher_gen.cc - the generate pass's launcher source: descriptors, typed
// launchers (with the choice of build: computed constexprs and variants),
// dispatchers (dispatcher_gen.cc), auto dispatchers (auto_dispatcher_gen.cc)
// and enumeration.
#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "auto_dispatcher_gen.h"
#include "codegen.h"
#include "codegen_text.h"
#include "dispatcher_gen.h"
#include "plan.h"
#include "tensordesc.h"

namespace kpack {
namespace codegen {
namespace {

// What the launcher source starts with: the checked arithmetic of the
// launch expressions (codegen_text.h), then the geometry check.
const std::string kArithmeticHelpers = std::string("/* Checked 64-bit arithmetic for launch geometry: overflow and division by\n"
                                                   "   zero set *bad instead of being undefined behaviour. */\n") +
                                       kCheckedArithmeticC + "\n" + R"(/* Checks the launch geometry against the CUDA limits. */
static kpack_status kpack_check_geometry_(const char *name, int bad, const int64_t g[3], const int64_t b[3],
                                          int64_t smem) {
  if (bad)
    return kpack_fail(KPACK_ERROR_INVALID_ARGUMENT,
                      "%s: the launch geometry overflows 64 bits or divides by zero", name);
  if (g[0] < 0 || g[0] > 2147483647 || g[1] < 0 || g[1] > 65535 || g[2] < 0 || g[2] > 65535 ||
      b[0] < 1 || b[0] > 1024 || b[1] < 1 || b[1] > 1024 || b[2] < 1 || b[2] > 64 ||
      b[0] * b[1] * b[2] > 1024 || smem < 0 || smem > (int64_t)UINT32_MAX)
    return kpack_fail(KPACK_ERROR_INVALID_ARGUMENT,
                      "%s: grid (%lld, %lld, %lld), block (%lld, %lld, %lld) or shared memory %lld "
                      "is outside the CUDA launch limits", name,
                      (long long)g[0], (long long)g[1], (long long)g[2],
                      (long long)b[0], (long long)b[1], (long long)b[2], (long long)smem);
  return KPACK_SUCCESS;
}
)";


// The launch expressions a typed launcher of `k` computes: the rules of its
// computed constexprs and its grid; a Triton kernel's block and shared
// memory come from its compilation instead.
std::vector<const Expr*> EmittedExprs(const Kernel& k) {
  std::vector<const Expr*> out;
  for (const Constexpr& c : k.constexprs)
    if (c.Computed()) out.push_back(&*c.rule);
  for (const Expr& e : k.launch.grid) out.push_back(&e);
  if (k.language == Language::kTriton) return out;
  for (const Expr& e : k.launch.block) out.push_back(&e);
  out.push_back(&k.launch.shared_mem);
  return out;
}

constexpr const char* kBuildType = R"(/* One build of a specialization: what its typed launcher passes when a call
   runs it (Triton decides the block and shared memory of each build). */
typedef struct kpack_build_ {
  const kpack_kernel *kernel;
  uint32_t block_x;
  uint32_t smem;
  int narrow; /* width: auto params go as 32-bit copies */
  int ones;   /* equal_to_1 params are constants of the build: not passed */
} kpack_build_;
)";

// Triton's scratch for one launch (launcher source of packages that have
// kernels needing it).
constexpr const char* kScratchHelper = R"(/* Triton's global and profile scratch for one launch: `gsize` and `psize`
   bytes for every CTA of grid `g` (programs x num_ctas), global first, from
   the runtime's workspace of (device, stream).  Triton indexes a launch's
   scratch in 32 bits. */
static kpack_status kpack_scratch_for_(const char *name, kpack_stream stream, const int64_t g[3], int64_t gsize,
                                       int64_t galign, int64_t psize, int64_t palign, void *out[2]) {
  int bad = 0;
  const int64_t ctas = kpack_mul_(kpack_mul_(g[0], g[1], &bad), g[2], &bad);
  const int64_t at = kpack_mul_(kpack_cdiv_(kpack_mul_(ctas, gsize, &bad), palign, &bad), palign, &bad);
  const int64_t total = kpack_add_(at, kpack_mul_(ctas, psize, &bad), &bad);
  void *base = NULL;
  kpack_status st;
  out[0] = out[1] = NULL;
  if (bad || total > INT32_MAX)
    return kpack_fail(KPACK_ERROR_INVALID_ARGUMENT,
                      "%s: %lld CTAs need more Triton scratch (%lld + %lld bytes each) than the 2147483647 bytes "
                      "Triton addresses", name, (long long)ctas, (long long)gsize, (long long)psize);
  if (total == 0) return KPACK_SUCCESS;
  if ((st = kpack_scratch(name, stream, (uint64_t)total, (uint32_t)(galign > palign ? galign : palign), &base)) !=
      KPACK_SUCCESS)
    return st;
  out[0] = gsize ? base : NULL;
  out[1] = psize ? (char *)base + at : NULL;
  return KPACK_SUCCESS;
}
)";

constexpr const char* kFloatBits = R"(/* A double's bits, as kpack_fail_no_specialization takes a float value. */
static inline int64_t kpack_float_bits_(double d) {
  int64_t bits;
  memcpy(&bits, &d, sizeof bits);
  return bits;
}
)";

// A specialization the API names and every build behind it.
struct Group {
  std::vector<size_t> bases;                // non-variant builds, the API's first
  std::vector<unsigned> slots;              // VariantIndex per column, 0 first
  std::vector<std::vector<size_t>> builds;  // [base][column] -> build index
};

class LauncherWriter {
 public:
  LauncherWriter(const Package& pkg, const std::vector<Specialization>& specs, const CodegenOptions& o,
                 const std::map<const Specialization*, TritonLaunch>& triton, const std::vector<size_t>& blob_of_spec)
      : pkg_(pkg), specs_(specs), o_(o), triton_(triton), blob_of_spec_(blob_of_spec) {
    for (size_t i = 0; i < specs_.size(); ++i)
      if (!specs_[i].IsVariant()) groups_[specs_[i].group].bases.push_back(i);
    std::map<size_t, size_t> group_of_base;
    for (auto& [api, g] : groups_) {
      g.slots = {0};
      for (size_t b : g.bases) group_of_base[b] = api;
    }
    for (const Specialization& s : specs_)
      if (s.IsVariant()) {
        std::vector<unsigned>& slots = groups_[group_of_base[s.base]].slots;
        if (std::find(slots.begin(), slots.end(), s.VariantIndex()) == slots.end()) slots.push_back(s.VariantIndex());
      }
    for (auto& [api, g] : groups_) {
      std::sort(g.slots.begin(), g.slots.end());
      g.builds.assign(g.bases.size(), std::vector<size_t>(g.slots.size(), kNone));
      for (size_t b = 0; b < g.bases.size(); ++b) g.builds[b][0] = g.bases[b];
    }
    for (size_t i = 0; i < specs_.size(); ++i) {
      const Specialization& s = specs_[i];
      if (!s.IsVariant()) continue;
      Group& g = groups_[group_of_base[s.base]];
      size_t b = std::find(g.bases.begin(), g.bases.end(), s.base) - g.bases.begin();
      size_t column = std::find(g.slots.begin(), g.slots.end(), s.VariantIndex()) - g.slots.begin();
      g.builds[b][column] = i;
    }
  }

  std::string Write() {
    out_ += "/* Generated by kpack " + std::string(kVersion) + " from " + CommentText(o_.manifest_label) +
            ". Do not edit. */\n";
    out_ += "#include \"" + o_.header_name + "\"\n#include \"kpack_internal.h\"\n\n";
    out_ += std::string("#include <stdint.h>\n") + (NeedsStrings() ? "#include <string.h>\n" : "") + "\n";
    // Compiled against a kpack_internal.h of another ABI, the descriptors
    // below would be laid out wrongly: refuse to compile.
    std::string abi = std::to_string(kAbiVersion);
    out_ += "_Static_assert(KPACK_ABI_VERSION == " + abi + ", \"generated for kpack ABI " + abi +
            ": regenerate it with the kpack whose runtime headers are in use\");\n\n";
    out_ += std::string(kArithmeticHelpers);
    WriteFunctionHelpers();
    if (NeedsFloatBits()) out_ += "\n" + std::string(kFloatBits);
    if (NeedsScratch()) out_ += "\n" + std::string(kScratchHelper);
    if (NeedsBuildTable()) out_ += "\n" + std::string(kBuildType);
    out_ += "\n";
    out_ += "/* The fatbins (" + pkg_.prefix + "_fatbins.S): one per specialization, or per batch of them compiled together. */\n";
    out_ += "extern const kpack_blob " + pkg_.prefix + "_kpack_blobs[];\n\n";
    WriteArchTables();
    for (size_t i = 0; i < specs_.size(); ++i) WriteDescriptor(i);
    for (const Kernel& k : pkg_.kernels) {
      WriteConfigs(k);
      for (const Specialization* s : SpecsOf(k, specs_)) WriteTypedLauncher(static_cast<size_t>(s - specs_.data()));
      out_ += DispatcherSource(pkg_, k, SpecsOf(k, specs_));
      out_ += AutoDispatcherSource(pkg_, k, SpecsOf(k, specs_));
    }
    WritePackageFunctions();
    return out_;
  }

 private:
  bool AnyApiKind(ConstexprKind kind) const {
    for (const Kernel& k : pkg_.kernels)
      for (const Constexpr& c : k.constexprs)
        if (c.InApi() && c.kind == kind) return true;
    return false;
  }
  bool NeedsFloatBits() const { return AnyApiKind(ConstexprKind::kFloat); }
  bool NeedsStrings() const { return NeedsFloatBits() || AnyApiKind(ConstexprKind::kStr); }
  bool NeedsScratch() const {
    return std::any_of(triton_.begin(), triton_.end(), [](const auto& entry) {
      return entry.second.global_scratch.size > 0 || entry.second.profile_scratch.size > 0;
    });
  }
  bool NeedsBuildTable() const {
    return std::any_of(groups_.begin(), groups_.end(), [&](const auto& entry) { return Chooses(entry.second); });
  }
  // Whether the typed launcher of `g` chooses its build per call: among
  // several builds, or to check what its rules compute even where one value
  // was built (a value that was not must fail, never run that build).
  bool Chooses(const Group& g) const {
    return g.bases.size() > 1 || g.slots.size() > 1 || specs_[g.bases[0]].kernel->HasComputed();
  }

  void WriteFunctionHelpers() {
    std::set<std::string> used;
    for (const Specialization& s : specs_) {
      if (!s.api) continue;  // its launcher serves every build of its group
      ExprBindings b = LauncherBindings(s);
      for (const Expr* e : EmittedExprs(*s.kernel)) used.merge(FunctionsUsed(*e, b));
    }
    for (const Kernel& k : pkg_.kernels) used.merge(AutoFunctionsUsed(k, SpecsOf(k, specs_)));
    for (const std::string& function : FunctionHelperNames())
      if (used.count(function)) out_ += "\n" + FunctionHelperC(function);
  }

  // Declares kpack_device_<name> for each device attribute the launch
  // expressions use and reads it, returning the status of a failure: once
  // per launch, before the geometry that uses it.
  void WriteDeviceAttributes(const Specialization& s, const ExprBindings& b) {
    std::set<std::string> used;
    for (const Expr* e : EmittedExprs(*s.kernel)) used.merge(DeviceAttributesUsed(*e, b));
    if (used.empty()) return;
    out_ += "  /* The attributes of the launching device that the launch geometry reads. */\n";
    out_ += "  kpack_status kpack_device_st;\n";
    for (const std::string& name : DeviceAttributeNames()) {
      if (!used.count(name)) continue;
      out_ += "  int64_t kpack_device_" + name + " = 0;\n";
      out_ += "  if ((kpack_device_st = kpack_device_attribute(" + CString(s.name) + ", KPACK_DEVICE_ATTR_" +
              Upper(name) + ", &kpack_device_" + name + ")) != KPACK_SUCCESS)\n";
      out_ += "    return kpack_device_st;\n";
    }
  }

  std::string ArchTable(const std::vector<Arch>& archs) {
    std::string key = ArchList(archs);
    auto it = arch_tables_.find(key);
    return it == arch_tables_.end() ? "" : it->second;
  }

  void WriteArchTables() {
    for (const Kernel& k : pkg_.kernels) {
      std::vector<std::vector<Arch>> lists = {k.BuildArchs()};
      if (k.ptx) lists.push_back({PtxArch(k)});
      for (const std::vector<Arch>& archs : lists) {
        std::string key = ArchList(archs);
        if (arch_tables_.count(key)) continue;
        std::string name = "kpack_archs_" + std::to_string(arch_tables_.size());
        arch_tables_[key] = name;
        std::vector<std::string> codes;
        for (const Arch& a : archs) codes.push_back(ArchCode(a));
        out_ += "static const uint32_t " + name + "[] = {" + Join(codes, ", ") + "};  /* " + key + " */\n";
      }
    }
    out_ += "\n";
  }

  static std::string Descriptor(size_t i) { return "kpack_spec_" + std::to_string(i); }

  void WriteDescriptor(size_t i) {
    const Specialization& s = specs_[i];
    const Kernel& k = *s.kernel;
    std::string ptx_table = k.ptx ? ArchTable({PtxArch(k)}) : "NULL";
    std::string ptx_text = k.ptx ? "compute_" + std::to_string(PtxArch(k).number) : "";
    out_ += "static kpack_kernel_state kpack_state_" + std::to_string(i) + ";\n";
    out_ += "static const kpack_kernel " + Descriptor(i) + " = {\n";
    // The name is what runtime messages say; kpack_describe() never sees a
    // variant's descriptor.
    out_ += "    " + std::to_string(kAbiVersion) + ", " + CString(pkg_.name) + ", " + CString(k.name) + ", " +
            CString(s.NameWithVariant()) + ",\n    " + CString(s.symbol) + ", &" + pkg_.prefix + "_kpack_blobs[" +
            std::to_string(blob_of_spec_.empty() ? i : blob_of_spec_[i]) + "],\n";
    const std::vector<Arch> archs = k.BuildArchs();
    out_ += "    " + ArchTable(archs) + ", " + std::to_string(archs.size()) + ", " + ptx_table + ", " +
            (k.ptx ? "1" : "0") + ",\n";
    out_ += "    " + CString(ArchList(archs)) + ", " + CString(ptx_text) + ", " + CString(k.BuildMode()) +
            ", &kpack_state_" + std::to_string(i) + "};\n\n";
  }

  void WriteConfigs(const Kernel& k) {
    std::string base = pkg_.prefix + "_" + k.name;
    out_ += "const " + base + "_config " + base + "_configs[" + Upper(base) + "_NUM_CONFIGS] = {\n";
    for (const Specialization* s : SpecsOf(k, specs_)) {
      std::vector<std::string> fields;
      for (size_t c = 0; c < k.constexprs.size(); ++c)
        if (k.constexprs[c].InApi()) fields.push_back(ConstexprCLiteral(k.constexprs[c], s->values[c]));
      out_ += "    {" + Join(fields, ", ") + "},\n";
    }
    out_ += "};\n\n";
  }

  static std::vector<std::string> Dims(const std::vector<Expr>& exprs, const ExprBindings& b) {
    std::vector<std::string> out;
    for (const Expr& e : exprs) out.push_back(EmitExprC(e, b));
    while (out.size() < 3) out.push_back("1");
    return out;
  }

  // Without a compilation (golden tests), a Triton descriptor's box is its
  // block, unswizzled.
  TritonLaunch LaunchOf(const Specialization& s) const {
    auto it = triton_.find(&s);
    if (it != triton_.end()) return it->second;
    TritonLaunch t;
    t.num_warps = static_cast<uint32_t>(s.kernel->NumWarps(s.values));
    t.num_ctas = static_cast<uint32_t>(s.kernel->NumCtas(s.values));
    for (const Param& p : s.kernel->params)
      if (p.tensordesc) {
        DescLayout l = CudaDescLayout(s, p);
        l.swizzle = 0;
        t.descs.push_back(l);
      }
    return t;
  }

  static void Append(std::vector<std::string>& to, const std::vector<std::string>& items) {
    to.insert(to.end(), items.begin(), items.end());
  }

  // The kernel arguments of param `p`: `value`, or a tensordesc's encoded
  // map and, for Triton, its shape as i32 and its strides as i64.
  static std::vector<std::string> KernelArgs(const Specialization& s, const Param& p, const std::string& value) {
    if (!p.tensordesc) return {value};
    std::vector<std::string> out = {"(void *)kpack_map_" + p.name};
    if (s.kernel->language != Language::kTriton) return out;
    for (size_t d = 0; d < p.tensordesc->Rank(); ++d)
      out.push_back("(void *)&kpack_shape32_" + p.name + "[" + std::to_string(d) + "]");
    for (size_t d = 0; d < p.tensordesc->Rank(); ++d)
      out.push_back("(void *)&" + p.name + "_strides[" + std::to_string(d) + "]");
    return out;
  }

  // Each tensordesc param's CUtensorMap, encoded (and checked) by the
  // runtime from the call's base, shape and strides with the layout the
  // compile chose (Triton) or the manifest gave (CUDA).
  void WriteTensorMaps(const Specialization& s) {
    const Kernel& k = *s.kernel;
    if (!HasTensorDesc(k)) return;
    const std::vector<DescLayout> layouts = DescLayouts(s, LaunchOf(s).descs);
    out_ += "  kpack_status kpack_map_st;\n";
    size_t i = 0;
    for (const Param& p : k.params) {
      if (!p.tensordesc) continue;
      const DescLayout& l = layouts.at(i++);
      std::vector<std::string> box;
      for (uint32_t v : l.box) box.push_back(std::to_string(v) + "u");
      const std::string rank = std::to_string(l.box.size());
      out_ += "  /* " + p.name + ": a TMA descriptor, " + DescLayoutText(l) + ". */\n";
      out_ += "  static const kpack_tensor_map_spec kpack_tmspec_" + p.name + " = {" + std::to_string(l.data_type) +
              "u, " + std::to_string(l.elem_bytes) + "u, " + rank + "u, {" + Join(box, ", ") + "}, " +
              std::to_string(l.swizzle) + "u, " + (p.tensordesc->padding_nan ? "1u" : "0u") + "};\n";
      out_ += "  _Alignas(64) unsigned char kpack_map_" + p.name + "[128];\n";
      out_ += "  int32_t kpack_shape32_" + p.name + "[" + rank + "];\n";
      out_ += "  if ((kpack_map_st = kpack_tensor_map_encode(" + CString(s.name) + ", " + CString(p.name) +
              ", &kpack_tmspec_" + p.name + ", " + p.name + ", " + p.name + "_shape, " + p.name + "_strides, kpack_map_" +
              p.name + ", kpack_shape32_" + p.name + ")) != KPACK_SUCCESS)\n";
      out_ += "    return kpack_map_st;\n";
    }
  }

  // A Triton kernel with num_ctas > 1 launches num_ctas CTAs (one
  // cluster) per program along x.
  std::vector<std::string> ClusterGrid(const Specialization& s, std::vector<std::string> grid) const {
    if (const uint32_t ctas = ClusterCtas(s); ctas > 1)
      grid[0] = "kpack_mul_(" + grid[0] + ", " + std::to_string(ctas) + ", &kpack_bad)";
    return grid;
  }

  void WriteTypedLauncher(size_t i) {
    const Group& g = groups_.at(i);
    if (Chooses(g)) WriteChoosingLauncher(i, g);
    else WriteSingleLauncher(i);
  }

  // The launcher of a specialization built once: a constant descriptor,
  // block and shared memory.
  void WriteSingleLauncher(size_t i) {
    const Specialization& s = specs_[i];
    const Kernel& k = *s.kernel;
    ExprBindings b = BindingsFor(s);
    std::vector<std::string> params = LeadingParams(k), args;
    for (const Param& p : k.params) {
      params.push_back(TypedParam(s, p));
      if (!p.launch_only) Append(args, KernelArgs(s, p, "(void *)&" + p.name));
    }
    out_ += "kpack_status " + s.launcher + "(" + Join(params, ", ") + ") {\n";
    std::vector<std::string> block = Dims(k.launch.block, b);
    std::string smem = EmitExprC(k.launch.shared_mem, b);
    if (k.language == Language::kTriton) {
      TritonLaunch t = LaunchOf(s);
      block = {std::to_string(32 * t.num_warps), "1", "1"};
      smem = std::to_string(t.shared);
      WriteScratch(t.hidden_pointer_params, args);
    }
    WriteDivisibilityChecks(s);
    WriteTensorMaps(s);
    WriteDeviceAttributes(s, b);
    out_ += "  int kpack_bad = 0;\n";
    out_ += "  const int64_t kpack_grid[3] = {" + Join(ClusterGrid(s, Dims(k.launch.grid, b)), ", ") + "};\n";
    out_ += "  const int64_t kpack_block[3] = {" + Join(block, ", ") + "};\n";
    out_ += "  const int64_t kpack_smem = " + smem + ";\n";
    WriteLaunch(s, args, "&" + Descriptor(i));
  }

  // Triton's global and profile scratch pointers: unused, so NULL.
  void WriteScratch(uint32_t hidden, std::vector<std::string>& args) {
    for (uint32_t h = 0; h < hidden; ++h) {
      out_ += h == 0 ? "  void *kpack_scratch[" + std::to_string(hidden) + "] = {NULL};\n" : "";
      args.push_back("(void *)&kpack_scratch[" + std::to_string(h) + "]");
    }
  }

  // Checks the geometry and launches; `args` empty: kpack_args is declared.
  void WriteLaunch(const Specialization& s, std::vector<std::string> args, const std::string& descriptor,
                   bool declared = false) {
    if (!declared) {
      if (args.empty()) args.push_back("NULL");
      out_ += "  void *kpack_args[] = {" + Join(args, ", ") + "};\n";
    }
    out_ += "  kpack_status kpack_st = kpack_check_geometry_(" + CString(s.name) +
            ", kpack_bad, kpack_grid, kpack_block, kpack_smem);\n";
    out_ += "  if (kpack_st != KPACK_SUCCESS) return kpack_st;\n";
    WriteScratchFill(s);
    const Launch& l = s.kernel->launch;
    const bool ex = l.HasAttributes() || ClusterCtas(s) > 1;
    out_ += std::string("  return ") + (ex ? "kpack_launch_ex(" : "kpack_launch(") + descriptor +
            ", stream, (uint32_t)kpack_grid[0], (uint32_t)kpack_grid[1], (uint32_t)kpack_grid[2],\n"
            "                      (uint32_t)kpack_block[0], (uint32_t)kpack_block[1], (uint32_t)kpack_block[2],\n"
            "                      (uint32_t)kpack_smem, kpack_args";
    if (ex) out_ += ",\n                      " + LaunchAttributes(s);
    out_ += ");\n}\n\n";
  }

  uint32_t ClusterCtas(const Specialization& s) const {
    return s.kernel->language == Language::kTriton ? LaunchOf(s).num_ctas : 1;
  }

  // Right before the launch (the runtime's scratch call leaves the device
  // for it): the scratch pointers, where the kernel needs scratch.
  void WriteScratchFill(const Specialization& s) {
    if (s.kernel->language != Language::kTriton) return;
    const TritonLaunch t = LaunchOf(s);
    if (t.global_scratch.size == 0 && t.profile_scratch.size == 0) return;
    out_ += "  /* Triton's scratch per CTA: " + std::to_string(t.global_scratch.size) + " bytes global (align " +
            std::to_string(t.global_scratch.align) + "), " + std::to_string(t.profile_scratch.size) +
            " bytes profile. */\n";
    out_ += "  if ((kpack_st = kpack_scratch_for_(" + CString(s.name) + ", stream, kpack_grid, " +
            std::to_string(t.global_scratch.size) + ", " + std::to_string(t.global_scratch.align) + ", " +
            std::to_string(t.profile_scratch.size) + ", " + std::to_string(t.profile_scratch.align) +
            ", kpack_scratch)) != KPACK_SUCCESS)\n";
    out_ += "    return kpack_st;\n";
  }

  // kpack_launch_ex's flags and cluster: PDL on every launch or as the
  // call's `pdl` says (with flags 0 the runtime takes cuLaunchKernel's
  // path, so a call without PDL costs what a plain launch does).  A Triton
  // kernel's cluster is num_ctas along x, spread over the GPCs as Triton's
  // own launcher asks.
  std::string LaunchAttributes(const Specialization& s) const {
    const Launch& l = s.kernel->launch;
    std::vector<std::string> flags;
    if (l.pdl == Pdl::kOn) flags.push_back("KPACK_LAUNCH_PDL");
    if (l.pdl == Pdl::kPerCall) flags.push_back("(pdl ? KPACK_LAUNCH_PDL : 0u)");
    if (l.cooperative) flags.push_back("KPACK_LAUNCH_COOPERATIVE");
    if (ClusterCtas(s) > 1) {
      flags.push_back("KPACK_LAUNCH_CLUSTER_SPREAD");
      return Join(flags, " | ") + ", " + std::to_string(ClusterCtas(s)) + "u, 1u, 1u";
    }
    std::string out = flags.empty() ? "0u" : Join(flags, " | ");
    ExprBindings b = BindingsFor(s);
    for (size_t d = 0; d < 3; ++d) {
      std::optional<int64_t> v = d < l.cluster.size() ? EvaluateExpr(l.cluster[d], b)
                                 : l.cluster.empty() ? std::optional<int64_t>(0) : std::optional<int64_t>(1);
      out += ", " + std::to_string(v.value_or(0)) + "u";
    }
    return out;
  }

  void WriteChoosingLauncher(size_t i, const Group& g);
  void WriteComputed(const Specialization& s, const ExprBindings& b);
  void WriteBaseChoice(const Specialization& s, const Group& g);
  std::string SlotChoice(const Group& g);
  void WriteBuildTable(const Group& g);
  void WriteVariantConditions(const Kernel& k);
  void WriteDivisibilityChecks(const Specialization& s);
  void WritePackageFunctions();
  void WriteBuildInfo(const std::string& n);

  const Package& pkg_;
  const std::vector<Specialization>& specs_;
  const CodegenOptions& o_;
  const std::map<const Specialization*, TritonLaunch>& triton_;
  const std::vector<size_t>& blob_of_spec_;  // empty: blob i for specs_[i]
  std::map<std::string, std::string> arch_tables_;
  static constexpr size_t kNone = static_cast<size_t>(-1);
  std::map<size_t, Group> groups_;  // by the API build's index
  std::string out_;
};

// The launcher of a specialization with several builds: it computes the
// computed constexprs, tests what Triton's JIT tests, picks the build, and
// launches it with the block and shared memory Triton gave that build.
void LauncherWriter::WriteChoosingLauncher(size_t i, const Group& g) {
  const Specialization& s = specs_[i];
  const Kernel& k = *s.kernel;
  ExprBindings b = LauncherBindings(s);
  std::vector<std::string> params = LeadingParams(k), args;
  const bool narrow = std::find(g.slots.begin(), g.slots.end(), 2u) != g.slots.end() ||
                      std::find(g.slots.begin(), g.slots.end(), 3u) != g.slots.end();
  std::vector<size_t> arg_count;  // kernel arguments per passed param
  for (const Param& p : k.params) {
    params.push_back(TypedParam(s, p));
    if (p.launch_only) continue;
    // A narrow build takes a 32-bit copy of each `width: auto` value.
    std::vector<std::string> passed = KernelArgs(s, p, narrow && p.width_auto ? "(kpack_b->narrow ? (void *)&kpack_i32_" +
                                                                                    p.name + " : (void *)&" + p.name + ")"
                                                                              : "(void *)&" + p.name);
    arg_count.push_back(passed.size());
    Append(args, passed);
  }
  out_ += "kpack_status " + s.launcher + "(" + Join(params, ", ") + ") {\n";
  uint32_t hidden = 0;
  for (const auto& row : g.builds)
    for (size_t build : row)
      if (build != kNone) hidden = std::max(hidden, LaunchOf(specs_[build]).hidden_pointer_params);
  WriteScratch(hidden, args);
  WriteDivisibilityChecks(s);
  WriteTensorMaps(s);
  WriteDeviceAttributes(s, b);
  out_ += "  int kpack_bad = 0;\n";
  WriteComputed(s, b);
  if (g.slots.size() > 1) WriteVariantConditions(k);
  WriteBaseChoice(s, g);
  WriteBuildTable(g);
  out_ += "  const kpack_build_ *kpack_b = &kpack_builds[kpack_base][" + SlotChoice(g) + "];\n";
  out_ += "  const int64_t kpack_grid[3] = {" + Join(ClusterGrid(s, Dims(k.launch.grid, b)), ", ") + "};\n";
  out_ += "  const int64_t kpack_block[3] = {kpack_b->block_x, 1, 1};\n";
  out_ += "  const int64_t kpack_smem = kpack_b->smem;\n";
  if (!OneParams(k).empty()) {
    // The aligned builds take the equal_to_1 params as constants: their
    // argument list leaves them out.
    std::vector<std::string> all = args, ones;
    size_t i = 0, passed = 0;
    for (const Param& p : k.params) {
      if (p.launch_only) continue;
      if (!p.equal_to_1) ones.insert(ones.end(), args.begin() + static_cast<long>(i),
                                     args.begin() + static_cast<long>(i + arg_count[passed]));
      i += arg_count[passed++];
    }
    ones.insert(ones.end(), args.begin() + static_cast<long>(i), args.end());  // Triton's hidden pointers
    out_ += "  void *kpack_args_all[] = {" + Join(all, ", ") + "};\n";
    out_ += "  void *kpack_args_ones[] = {" + Join(ones, ", ") + "};\n";
    out_ += "  void **kpack_args = kpack_b->ones ? kpack_args_ones : kpack_args_all;\n";
  }
  WriteLaunch(s, args, "kpack_b->kernel", !OneParams(k).empty());
}

// Computed constexprs become variables of their own names, in the order
// Triton applies them: a later rule may read an earlier one.
void LauncherWriter::WriteComputed(const Specialization& s, const ExprBindings& b) {
  const Kernel& k = *s.kernel;
  if (!k.HasComputed()) return;
  out_ += "  /* Computed constexprs: what Triton's JIT would compute from this call. */\n";
  // Each after the ones its rule reads (the load pass refused cycles).
  for (size_t i : k.ComputedOrder().value_or(std::vector<size_t>{})) {
    const Constexpr& c = k.constexprs[i];
    out_ += "  const int64_t " + c.name + " = " + EmitExprC(*c.rule, b) + ";  /* " + CommentText(c.rule_source) +
            " */\n";
  }
  out_ += "  if (kpack_bad)\n";
  out_ += "    return kpack_fail(KPACK_ERROR_INVALID_ARGUMENT, \"%s: a computed constexpr overflows 64 bits or "
          "divides by zero\", " + CString(s.name) + ");\n";
}

// kpack_base: the row of the build table whose computed values the call's
// are; a value that was not built is an error naming it, never a fallback.
void LauncherWriter::WriteBaseChoice(const Specialization& s, const Group& g) {
  const Kernel& k = *s.kernel;
  if (g.bases.size() == 1 && !k.HasComputed()) {
    out_ += "  const int kpack_base = 0;\n";
    return;
  }
  std::vector<size_t> computed;
  for (size_t c = 0; c < k.constexprs.size(); ++c)
    if (k.constexprs[c].Computed()) computed.push_back(c);
  out_ += "  int kpack_base = -1;\n";
  std::vector<std::string> built;
  for (size_t row = 0; row < g.bases.size(); ++row) {
    const Specialization& base = specs_[g.bases[row]];
    std::vector<std::string> tests, parts;
    for (size_t c : computed) {
      tests.push_back(k.constexprs[c].name + " == " + std::to_string(base.values[c].integer));
      parts.push_back(k.constexprs[c].name + "=" + ValueText(k.constexprs[c], base.values[c]));
    }
    built.push_back(Join(parts, " "));
    out_ += std::string(row == 0 ? "  if (" : "  else if (") + Join(tests, " && ") + ") kpack_base = " +
            std::to_string(row) + ";\n";
  }
  std::vector<std::string> names, kinds, values;
  for (size_t c : computed) {
    names.push_back(CString(k.constexprs[c].name));
    kinds.push_back(k.constexprs[c].kind == ConstexprKind::kBool ? "KPACK_CONSTEXPR_BOOL" : "KPACK_CONSTEXPR_INT");
    values.push_back(k.constexprs[c].name);
  }
  std::string n = std::to_string(computed.size());
  out_ += "  if (kpack_base < 0) {\n";
  out_ += "    static const char *const kpack_names[" + n + "] = {" + Join(names, ", ") + "};\n";
  out_ += "    static const int kpack_kinds[" + n + "] = {" + Join(kinds, ", ") + "};\n";
  out_ += "    const int64_t kpack_values[" + n + "] = {" + Join(values, ", ") + "};\n";
  out_ += "    return kpack_fail_no_specialization(" + CString(s.name + " (computed constexprs)") + ", " +
          CString(Join(built, ", ")) + ", " + n + ", kpack_names, kpack_kinds, kpack_values);\n  }\n";
}

// The column of the build table a call runs: the most specialized variant
// whose conditions hold (Triton's JIT builds exactly that one).
std::string LauncherWriter::SlotChoice(const Group& g) {
  if (g.slots.size() == 1) return "0";
  auto condition = [](unsigned slot) {
    return slot == 3 ? std::string("kpack_aligned && kpack_narrow") : slot == 1 ? "kpack_aligned" : "kpack_narrow";
  };
  std::string out = "0";
  for (size_t column = 1; column < g.slots.size(); ++column)
    out = "(" + condition(g.slots[column]) + " ? " + std::to_string(column) + " : " + out + ")";
  return out;
}

void LauncherWriter::WriteBuildTable(const Group& g) {
  std::vector<std::string> rows;
  for (const auto& row : g.builds) {
    std::vector<std::string> cells;
    for (size_t build : row) {
      // Every column exists for every row (variants are per kernel).
      TritonLaunch t = LaunchOf(specs_[build]);
      const Specialization& b = specs_[build];
      const bool ones = b.aligned && std::any_of(b.kernel->params.begin(), b.kernel->params.end(),
                                                 [](const Param& p) { return p.equal_to_1; });
      cells.push_back("{&" + Descriptor(build) + ", " + std::to_string(32 * t.num_warps) + ", " +
                      std::to_string(t.shared) + ", " + (b.narrow ? "1" : "0") + ", " + (ones ? "1" : "0") + "}");
    }
    rows.push_back("{" + Join(cells, ", ") + "}");
  }
  out_ += "  static const kpack_build_ kpack_builds[" + std::to_string(g.builds.size()) + "][" +
          std::to_string(g.slots.size()) + "] = {\n      " + Join(rows, ",\n      ") + "};\n";
}

// The tests Triton's JIT makes to specialize a call.  The aligned
// variant's hints hold where AlignedVariantTest does.  The i32
// variant runs when every `width: auto` value fits in 32 bits, and is
// passed 32-bit copies.
void LauncherWriter::WriteVariantConditions(const Kernel& k) {
  if (k.HasAlignedVariant()) {
    std::string what;
    const std::string test = AlignedVariantTest(k, &what);
    out_ += "  /* The aligned variant when " + what + ". */\n";
    out_ += "  const int kpack_aligned = " + test + ";\n";
  }
  if (k.HasNarrowVariant()) {
    std::vector<std::string> fits;
    for (const Param& p : k.params)
      if (p.width_auto) fits.push_back(p.name + " >= INT32_MIN && " + p.name + " <= INT32_MAX");
    out_ += "  /* The i32 variant when every width: auto param (" + NarrowParams(k) + ") fits in 32 bits. */\n";
    out_ += "  const int kpack_narrow = " + Join(fits, " && ") + ";\n";
    for (const Param& p : k.params)
      if (p.width_auto) out_ += "  const int32_t kpack_i32_" + p.name + " = (int32_t)" + p.name + ";\n";
  }
}

// A divisibility hint is a promise the compiled code relies on (16-byte
// vector accesses): a launch that breaks it is refused, never run.  An auto
// hint is no promise: the launcher picks the variant instead.
void LauncherWriter::WriteDivisibilityChecks(const Specialization& s) {
  for (const Param& p : s.kernel->params) {
    if (!p.divisibility || p.divisibility_auto) continue;
    std::string d = std::to_string(p.divisibility);
    std::string value = p.type.is_pointer ? "(uintptr_t)" + p.name : p.name;
    std::string what = p.type.is_pointer ? "must be " + d + "-byte aligned" : "must be a multiple of " + d;
    out_ += "  if (" + value + " % " + d + " != 0)\n";
    out_ += "    return kpack_fail(KPACK_ERROR_INVALID_ARGUMENT, \"%s: " + p.name + " " + what +
            " (divisibility: " + d + " in the manifest)\", " + CString(s.name) + ");\n";
  }
}

// Enumeration lists what the API names; the other builds of a
// specialization are part of it, and their fatbins count in its size.
void LauncherWriter::WritePackageFunctions() {
  std::string n = std::to_string(CountApiSpecs(specs_));
  std::string all, others, at = "0";
  size_t count = 0;
  for (const auto& [api, g] : groups_) {
    all += "    &" + Descriptor(api) + ",\n";
    for (const auto& row : g.builds)
      for (size_t build : row)
        if (build != api) {
          others += "    &" + Descriptor(build) + ",\n";
          ++count;
        }
    at += ", " + std::to_string(count);
  }
  out_ += "static const kpack_kernel *const kpack_all_[" + n + "] = {\n" + all + "};\n\n";
  if (count)
    out_ += "/* The other builds of each specialization (computed values, variants):\n"
            "   kpack_others_[kpack_others_at_[i]] up to kpack_others_at_[i + 1]. */\n"
            "static const kpack_kernel *const kpack_others_[" + std::to_string(count) + "] = {\n" + others +
            "};\nstatic const uint32_t kpack_others_at_[" + n + " + 1] = {" + at + "};\n\n";
  out_ += "size_t " + pkg_.prefix + "_num_specializations(void) { return " + n + "; }\n\n";
  out_ += "kpack_status " + pkg_.prefix + "_specialization_info(size_t index, kpack_spec_info *info) {\n";
  out_ += "  if (index >= " + n + ")\n";
  out_ += "    return kpack_fail(KPACK_ERROR_INVALID_ARGUMENT, \"" + pkg_.prefix +
          "_specialization_info: index %zu >= " + n + "\", index);\n";
  if (!count) {
    out_ += "  return kpack_describe(kpack_all_[index], info);\n}\n\n";
  } else {
    out_ += "  kpack_status kpack_st = kpack_describe(kpack_all_[index], info);\n";
    out_ += "  for (uint32_t b = kpack_others_at_[index]; kpack_st == KPACK_SUCCESS && b < kpack_others_at_[index + 1]; ++b)\n";
    out_ += "    info->fatbin_size += kpack_others_[b]->fatbin->size;\n";
    out_ += "  return kpack_st;\n}\n\n";
  }
  WriteBuildInfo(n);
}

void LauncherWriter::WriteBuildInfo(const std::string& n) {
  size_t debug = 0;
  for (const Specialization& s : specs_) debug += s.api && s.kernel->debug ? 1 : 0;
  std::string fn = pkg_.prefix + "_build_info";
  std::string abi = std::to_string(kAbiVersion);
  out_ += "kpack_status " + fn + "(kpack_build_info *info) {\n";
  out_ += "  if (info == NULL)\n    return kpack_fail(KPACK_ERROR_INVALID_ARGUMENT, \"" + fn + ": info is NULL\");\n";
  out_ += "  info->package = " + CString(pkg_.name) + ";\n";
  out_ += "  info->kpack_version = " + CString(kVersion) + ";\n";
  out_ += "  info->abi_version = " + abi + ";\n";
  out_ += "  info->build_mode = " + CString(debug ? "debug" : "release") + ";\n";
  out_ += "  info->num_specializations = " + n + ";\n";
  out_ += "  info->num_debug_specializations = " + std::to_string(debug) + ";\n";
  out_ += "  if (kpack_abi_version() != " + abi + ")\n";
  out_ += "    return kpack_fail(KPACK_ERROR_ABI_MISMATCH, \"" + fn + ": generated for kpack ABI " + abi +
          ", but the linked runtime implements ABI %d\", kpack_abi_version());\n";
  out_ += "  return KPACK_SUCCESS;\n}\n";
}

}  // namespace
}  // namespace codegen

std::string GenerateLauncherSource(const Package& pkg, const std::vector<Specialization>& specs,
                                   const CodegenOptions& options,
                                   const std::map<const Specialization*, TritonLaunch>& triton,
                                   const std::vector<size_t>& blob_of_spec) {
  return codegen::LauncherWriter(pkg, specs, options, triton, blob_of_spec).Write();
}

}  // namespace kpack
