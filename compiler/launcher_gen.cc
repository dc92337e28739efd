// launcher_gen.cc - the generate pass's launcher source: descriptors, typed
// launchers (with the choice of variant), dispatchers and enumeration.
#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "codegen.h"
#include "codegen_text.h"
#include "plan.h"

namespace kpack {
namespace codegen {
namespace {

constexpr const char* kArithmeticHelpers = R"(/* Checked 64-bit arithmetic for launch geometry: overflow and division by
   zero set *bad instead of being undefined behaviour. */
static inline int64_t kpack_add_(int64_t a, int64_t b, int *bad) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) *bad = 1;
  return r;
}
static inline int64_t kpack_sub_(int64_t a, int64_t b, int *bad) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) *bad = 1;
  return r;
}
static inline int64_t kpack_mul_(int64_t a, int64_t b, int *bad) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) *bad = 1;
  return r;
}
static inline int64_t kpack_div_(int64_t a, int64_t b, int *bad) {
  if (b == 0 || (a == INT64_MIN && b == -1)) { *bad = 1; return 0; }
  return a / b;
}
static inline int64_t kpack_mod_(int64_t a, int64_t b, int *bad) {
  if (b == 0 || (a == INT64_MIN && b == -1)) { *bad = 1; return 0; }
  return a % b;
}
static inline int64_t kpack_cdiv_(int64_t a, int64_t b, int *bad) {
  int64_t q = kpack_div_(a, b, bad);
  return (b != 0 && a % b != 0 && ((a > 0) == (b > 0))) ? q + 1 : q;
}
static inline int64_t kpack_min_(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t kpack_max_(int64_t a, int64_t b) { return a > b ? a : b; }

/* Checks the launch geometry against the CUDA limits. */
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

// The helpers of the launch expressions' functions that translate Python
// (expr.h; expr.cc folds with the same semantics), by function name.  Each
// is emitted only where some launch expression calls it, so that the
// launchers of packages that use none stay as they were.
struct FunctionHelper {
  const char* function;
  const char* text;
};
constexpr FunctionHelper kFunctionHelpers[] = {
    {"floordiv", R"(/* Python's a // b: rounded toward negative infinity. */
static inline int64_t kpack_floordiv_(int64_t a, int64_t b, int *bad) {
  if (b == 0 || (a == INT64_MIN && b == -1)) { *bad = 1; return 0; }
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
)"},
    {"floormod", R"(/* Python's a % b: the sign of b.  INT64_MIN % -1 traps in C, and is 0. */
static inline int64_t kpack_floormod_(int64_t a, int64_t b, int *bad) {
  if (b == 0) { *bad = 1; return 0; }
  if (b == -1) return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
)"},
    {"gcd", R"(/* Python's math.gcd: non-negative; gcd(INT64_MIN, 0) = 2^63 does not fit. */
static inline int64_t kpack_gcd_(int64_t a, int64_t b, int *bad) {
  uint64_t x = a < 0 ? 0 - (uint64_t)a : (uint64_t)a;
  uint64_t y = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
  while (y != 0) { uint64_t t = x % y; x = y; y = t; }
  if (x > (uint64_t)INT64_MAX) { *bad = 1; return 0; }
  return (int64_t)x;
}
)"},
    {"log2", R"(/* floor(log2(x)); x <= 0 has none. */
static inline int64_t kpack_log2_(int64_t x, int *bad) {
  if (x <= 0) { *bad = 1; return 0; }
  return 63 - __builtin_clzll((uint64_t)x);
}
)"},
    {"next_pow2", R"(/* triton.next_power_of_2: 0 for x <= 0; above 2^62, 2^63 does not fit. */
static inline int64_t kpack_next_pow2_(int64_t x, int *bad) {
  if (x <= 0) return 0;
  if (x > ((int64_t)1 << 62)) { *bad = 1; return 0; }
  uint64_t n = (uint64_t)x - 1;
  n |= n >> 1; n |= n >> 2; n |= n >> 4; n |= n >> 8; n |= n >> 16; n |= n >> 32;
  return (int64_t)(n + 1);
}
)"},
};

// The launch expressions a typed launcher of `k` computes: a Triton
// kernel's block and shared memory come from its compilation instead.
std::vector<const Expr*> EmittedExprs(const Kernel& k) {
  std::vector<const Expr*> out;
  for (const Expr& e : k.launch.grid) out.push_back(&e);
  if (k.language == Language::kTriton) return out;
  for (const Expr& e : k.launch.block) out.push_back(&e);
  out.push_back(&k.launch.shared_mem);
  return out;
}

class LauncherWriter {
 public:
  LauncherWriter(const Package& pkg, const std::vector<Specialization>& specs, const CodegenOptions& o,
                 const std::map<const Specialization*, TritonLaunch>& triton)
      : pkg_(pkg), specs_(specs), o_(o), triton_(triton) {
    for (size_t i = 0; i < specs_.size(); ++i) {
      const Specialization& s = specs_[i];
      if (!s.IsVariant()) continue;
      auto [it, inserted] = variants_.try_emplace(s.base);
      if (inserted) it->second = {s.base, kNone, kNone, kNone};
      it->second[s.VariantIndex()] = i;
    }
  }

  std::string Write() {
    out_ += "/* Generated by kpack " + std::string(kVersion) + " from " + CommentText(o_.manifest_label) +
            ". Do not edit. */\n";
    out_ += "#include \"" + o_.header_name + "\"\n#include \"kpack_internal.h\"\n\n";
    out_ += "#include <stdint.h>\n\n";
    // Compiled against a kpack_internal.h of another ABI, the descriptors
    // below would be laid out wrongly: refuse to compile.
    std::string abi = std::to_string(kAbiVersion);
    out_ += "_Static_assert(KPACK_ABI_VERSION == " + abi + ", \"generated for kpack ABI " + abi +
            ": regenerate it with the kpack whose runtime headers are in use\");\n\n";
    out_ += std::string(kArithmeticHelpers);
    WriteFunctionHelpers();
    out_ += "\n";
    out_ += "/* The fatbins, in specialization order (" + pkg_.prefix + "_fatbins.S). */\n";
    out_ += "extern const kpack_blob " + pkg_.prefix + "_kpack_blobs[];\n\n";
    WriteArchTables();
    for (size_t i = 0; i < specs_.size(); ++i) WriteDescriptor(i);
    for (const Kernel& k : pkg_.kernels) {
      WriteConfigs(k);
      for (size_t i = 0; i < specs_.size(); ++i)
        if (specs_[i].kernel == &k && !specs_[i].IsVariant()) WriteTypedLauncher(i);
      WriteDispatcher(k);
    }
    WritePackageFunctions();
    return out_;
  }

 private:
  void WriteFunctionHelpers() {
    std::set<std::string> used;
    for (const Specialization& s : specs_) {
      if (s.IsVariant()) continue;  // launched by its base's typed launcher
      ExprBindings b = BindingsFor(s);
      for (const Expr* e : EmittedExprs(*s.kernel)) used.merge(FunctionsUsed(*e, b));
    }
    for (const FunctionHelper& h : kFunctionHelpers)
      if (used.count(h.function)) out_ += "\n" + std::string(h.text);
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
    std::set<std::string> written;
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

  std::string Descriptor(size_t i) { return "kpack_spec_" + std::to_string(i); }

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
            CString(s.NameWithVariant()) + ",\n    " +
            CString(s.symbol) + ", &" +
            pkg_.prefix + "_kpack_blobs[" + std::to_string(i) + "],\n";
    const std::vector<Arch> archs = k.BuildArchs();
    out_ += "    " + ArchTable(archs) + ", " + std::to_string(archs.size()) + ", " + ptx_table + ", " +
            (k.ptx ? "1" : "0") + ",\n";
    out_ += "    " + CString(ArchList(archs)) + ", " + CString(ptx_text) + ", " +
            CString(k.BuildMode()) + ", &kpack_state_" + std::to_string(i) + "};\n\n";
  }

  void WriteConfigs(const Kernel& k) {
    std::string base = pkg_.prefix + "_" + k.name;
    out_ += "const " + base + "_config " + base + "_configs[" + Upper(base) + "_NUM_CONFIGS] = {\n";
    for (const Specialization* s : SpecsOf(k, specs_)) {
      std::vector<std::string> fields;
      for (size_t c = 0; c < k.constexprs.size(); ++c)
        fields.push_back(k.constexprs[c].kind == ConstexprKind::kDtype
                             ? std::string(Info(s->values[c].dtype).enumerator)
                             : std::to_string(s->values[c].integer));
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

  void WriteTypedLauncher(size_t i) {
    const Specialization& s = specs_[i];
    const Kernel& k = *s.kernel;
    ExprBindings b = BindingsFor(s);
    std::vector<std::string> params = {"kpack_stream stream"}, args;
    const bool narrow = k.HasNarrowVariant();
    for (const Param& p : k.params) {
      params.push_back(TypedParam(s, p));
      // An i32 variant takes a 32-bit copy of each `width: auto` value.
      args.push_back(narrow && p.width_auto ? "(kpack_narrow ? (void *)&kpack_i32_" + p.name + " : (void *)&" + p.name + ")"
                                            : "(void *)&" + p.name);
    }
    out_ += "kpack_status " + s.launcher + "(" + Join(params, ", ") + ") {\n";
    std::vector<std::string> block = Dims(k.launch.block, b);
    std::string smem = EmitExprC(k.launch.shared_mem, b);
    auto found = variants_.find(i);
    const bool variant = found != variants_.end();
    std::string descriptor = "&" + Descriptor(i);
    if (k.language == Language::kTriton) {
      TritonLaunch t = LaunchOf(s);
      uint32_t hidden = t.hidden_pointer_params;
      block = {std::to_string(32 * t.num_warps), "1", "1"};
      smem = std::to_string(t.shared);
      if (variant) {
        // Triton may decide differently for each variant's build; a launch
        // passes what the variant it runs needs.
        std::array<std::string, 4> blocks, smems, descriptors;
        for (unsigned v = 0; v < 4; ++v) {
          const size_t index = found->second[v];
          if (index == kNone) continue;
          TritonLaunch a = LaunchOf(specs_[index]);
          hidden = std::max(hidden, a.hidden_pointer_params);
          blocks[v] = std::to_string(32 * a.num_warps);
          smems[v] = std::to_string(a.shared);
          descriptors[v] = "&" + Descriptor(index);
        }
        block[0] = Choose(blocks);
        smem = Choose(smems);
        descriptor = Choose(descriptors);
      }
      // Triton's global and profile scratch pointers: unused, so NULL.
      for (uint32_t h = 0; h < hidden; ++h) {
        out_ += h == 0 ? "  void *kpack_scratch[" + std::to_string(hidden) + "] = {NULL};\n" : "";
        args.push_back("(void *)&kpack_scratch[" + std::to_string(h) + "]");
      }
    }
    WriteDivisibilityChecks(s);
    if (variant) WriteVariantChoice(k);
    WriteDeviceAttributes(s, b);
    out_ += "  int kpack_bad = 0;\n";
    out_ += "  const int64_t kpack_grid[3] = {" + Join(Dims(k.launch.grid, b), ", ") + "};\n";
    out_ += "  const int64_t kpack_block[3] = {" + Join(block, ", ") + "};\n";
    out_ += "  const int64_t kpack_smem = " + smem + ";\n";
    if (args.empty()) args.push_back("NULL");
    out_ += "  void *kpack_args[] = {" + Join(args, ", ") + "};\n";
    out_ += "  kpack_status kpack_st = kpack_check_geometry_(" + CString(s.name) +
            ", kpack_bad, kpack_grid, kpack_block, kpack_smem);\n";
    out_ += "  if (kpack_st != KPACK_SUCCESS) return kpack_st;\n";
    out_ += "  return kpack_launch(" + descriptor +
            ", stream, (uint32_t)kpack_grid[0], (uint32_t)kpack_grid[1], (uint32_t)kpack_grid[2],\n"
            "                      (uint32_t)kpack_block[0], (uint32_t)kpack_block[1], (uint32_t)kpack_block[2],\n"
            "                      (uint32_t)kpack_smem, kpack_args);\n}\n\n";
  }

  TritonLaunch LaunchOf(const Specialization& s) const {
    auto it = triton_.find(&s);
    return it != triton_.end() ? it->second
                               : TritonLaunch{0, static_cast<uint32_t>(s.kernel->NumWarps(s.values)), 2};
  }

  // C for "the value of the variant this launch runs", given each built
  // variant's by VariantIndex ("" where not built).  Where the variants
  // agree the value is a constant.
  static std::string Choose(const std::array<std::string, 4>& v) {
    auto pick = [](const std::string& cond, const std::string& yes, const std::string& no) {
      return yes.empty() || yes == no ? no : "(" + cond + " ? " + yes + " : " + no + ")";
    };
    std::string wide = pick("kpack_aligned", v[1], v[0]);
    std::string narrow = pick("kpack_aligned", v[3], v[2]);
    return narrow.empty() ? wide : pick("kpack_narrow", narrow, wide);
  }

  // The tests Triton's JIT makes to specialize a call.  The aligned
  // variant's hints hold when every `divisibility: auto` value is a
  // multiple of 16 (an address: 16-byte aligned): one OR of the values and
  // one test; the low four bits survive the casts, negative values
  // included.  The i32 variant runs when every `width: auto` value fits in
  // 32 bits, and is passed 32-bit copies.
  void WriteVariantChoice(const Kernel& k) {
    if (k.HasAlignedVariant()) {
      std::vector<std::string> values;
      for (const Param& p : k.params)
        if (p.divisibility_auto)
          values.push_back(p.type.is_pointer ? "(uint64_t)(uintptr_t)" + p.name : "(uint64_t)" + p.name);
      out_ += "  /* The aligned variant when every divisibility: auto param (" + AutoParams(k) +
              ") is a multiple of 16. */\n";
      out_ += "  const int kpack_aligned = ((" + Join(values, " | ") + ") & 15) == 0;\n";
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
  // vector accesses): a launch that breaks it is refused, never run.  An
  // auto hint is no promise: the launcher picks the variant instead.
  void WriteDivisibilityChecks(const Specialization& s) {
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

  // Nested switches, one level per constexpr, over the specializations
  // [begin, end) which agree on constexprs 0..depth-1.
  void WriteSwitch(const Kernel& k, const std::vector<const Specialization*>& specs, size_t begin, size_t end,
                   size_t depth, const std::string& indent) {
    if (depth == k.constexprs.size()) {
      const Specialization& s = *specs[begin];
      std::vector<std::string> args = {"stream"};
      for (const Param& p : k.params) {
        if (p.type.dtype_constexpr.empty()) {
          args.push_back(p.name);
        } else {
          std::string type = std::string(p.type.is_const ? "const " : "") +
                             std::string(Info(ElementScalar(s, p.type)).c_type) + " *";
          args.push_back("(" + type + ")" + p.name);
        }
      }
      out_ += indent + "return " + s.launcher + "(" + Join(args, ", ") + ");\n";
      return;
    }
    const Constexpr& c = k.constexprs[depth];
    // A bool switches on (int)(x != 0): a switch on a boolean value warns.
    std::string subject = c.kind == ConstexprKind::kBool ? "(int)(" + c.name + " != 0)" : c.name;
    out_ += indent + "switch (" + subject + ") {\n";
    for (size_t i = begin; i < end;) {
      size_t j = i;
      while (j < end && specs[j]->values[depth].integer == specs[i]->values[depth].integer &&
             specs[j]->values[depth].dtype == specs[i]->values[depth].dtype)
        ++j;
      const ConstexprValue& v = specs[i]->values[depth];
      std::string label = c.kind == ConstexprKind::kDtype ? std::string(Info(v.dtype).enumerator)
                                                          : std::to_string(v.integer);
      out_ += indent + "  case " + label + ":\n";
      WriteSwitch(k, specs, i, j, depth + 1, indent + "    ");
      i = j;
    }
    out_ += indent + "  default:\n" + indent + "    break;\n" + indent + "}\n";
    if (depth > 0) out_ += indent + "break;\n";
  }

  std::string BuiltList(const Kernel& k, const std::vector<const Specialization*>& specs) {
    constexpr size_t kMaxListed = 64;
    std::vector<std::string> items;
    for (size_t i = 0; i < specs.size() && i < kMaxListed; ++i) {
      std::vector<std::string> parts;
      for (size_t c = 0; c < k.constexprs.size(); ++c)
        parts.push_back(k.constexprs[c].name + "=" + ValueText(k.constexprs[c], specs[i]->values[c]));
      items.push_back(Join(parts, " "));
    }
    std::string list = Join(items, ", ");
    if (specs.size() > kMaxListed) list += ", ... (" + std::to_string(specs.size()) + " in all)";
    return list;
  }

  void WriteDispatcher(const Kernel& k) {
    std::vector<const Specialization*> mine = SpecsOf(k, specs_);
    std::string base = pkg_.prefix + "_" + k.name;
    out_ += "kpack_status " + base + "(" + DispatcherParams(k) + ") {\n";
    WriteSwitch(k, mine, 0, mine.size(), 0, "  ");
    std::vector<std::string> names, kinds, values;
    for (const Constexpr& c : k.constexprs) {
      names.push_back(CString(c.name));
      kinds.push_back(c.kind == ConstexprKind::kDtype  ? "KPACK_CONSTEXPR_DTYPE"
                      : c.kind == ConstexprKind::kBool ? "KPACK_CONSTEXPR_BOOL"
                                                       : "KPACK_CONSTEXPR_INT");
      values.push_back("(int64_t)" + c.name);
    }
    std::string n = std::to_string(k.constexprs.size());
    out_ += "  {\n    static const char *const kpack_names[" + n + "] = {" + Join(names, ", ") + "};\n";
    out_ += "    static const int kpack_kinds[" + n + "] = {" + Join(kinds, ", ") + "};\n";
    out_ += "    const int64_t kpack_values[" + n + "] = {" + Join(values, ", ") + "};\n";
    out_ += "    return kpack_fail_no_specialization(" + CString(k.name) + ", " + CString(BuiltList(k, mine)) +
            ", " + n + ", kpack_names, kpack_kinds, kpack_values);\n  }\n}\n\n";
  }

  // Enumeration lists what the API names; a variant is part of its
  // specialization, and its fatbin counts in the specialization's size.
  void WritePackageFunctions() {
    std::string n = std::to_string(CountApiSpecs(specs_));
    std::string all, variants;
    for (size_t i = 0; i < specs_.size(); ++i) {
      if (specs_[i].IsVariant()) continue;
      all += "    &" + Descriptor(i) + ",\n";
      auto found = variants_.find(i);
      std::vector<std::string> row;
      for (unsigned v = 1; v < 4; ++v) {
        const bool built = found != variants_.end() && found->second[v] != kNone;
        row.push_back(built ? "&" + Descriptor(found->second[v]) : std::string("NULL"));
      }
      variants += "    {" + Join(row, ", ") + "},\n";
    }
    const bool any_variant = CountApiSpecs(specs_) != specs_.size();
    out_ += "static const kpack_kernel *const kpack_all_[" + n + "] = {\n" + all + "};\n\n";
    if (any_variant)
      out_ += "/* The variants of each (aligned, i32, aligned i32), NULL where not built. */\n"
              "static const kpack_kernel *const kpack_variants_[" + n + "][3] = {\n" + variants + "};\n\n";
    out_ += "size_t " + pkg_.prefix + "_num_specializations(void) { return " + n + "; }\n\n";
    out_ += "kpack_status " + pkg_.prefix + "_specialization_info(size_t index, kpack_spec_info *info) {\n";
    out_ += "  if (index >= " + n + ")\n";
    out_ += "    return kpack_fail(KPACK_ERROR_INVALID_ARGUMENT, \"" + pkg_.prefix +
            "_specialization_info: index %zu >= " + n + "\", index);\n";
    if (!any_variant) {
      out_ += "  return kpack_describe(kpack_all_[index], info);\n}\n\n";
    } else {
      out_ += "  kpack_status kpack_st = kpack_describe(kpack_all_[index], info);\n";
      out_ += "  for (int v = 0; kpack_st == KPACK_SUCCESS && v < 3; ++v)\n";
      out_ += "    if (kpack_variants_[index][v] != NULL) info->fatbin_size += kpack_variants_[index][v]->fatbin->size;\n";
      out_ += "  return kpack_st;\n}\n\n";
    }
    WriteBuildInfo(n);
  }

  void WriteBuildInfo(const std::string& n) {
    size_t debug = 0;
    for (const Specialization& s : specs_) debug += !s.IsVariant() && s.kernel->debug ? 1 : 0;
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

  const Package& pkg_;
  const std::vector<Specialization>& specs_;
  const CodegenOptions& o_;
  const std::map<const Specialization*, TritonLaunch>& triton_;
  std::map<std::string, std::string> arch_tables_;
  // Specialization -> its builds by VariantIndex ([0] is itself; kNone
  // where not built), for specializations that have variants.
  static constexpr size_t kNone = static_cast<size_t>(-1);
  std::map<size_t, std::array<size_t, 4>> variants_;
  std::string out_;
};

}  // namespace
}  // namespace codegen

std::string GenerateLauncherSource(const Package& pkg, const std::vector<Specialization>& specs,
                                   const CodegenOptions& options,
                                   const std::map<const Specialization*, TritonLaunch>& triton) {
  return codegen::LauncherWriter(pkg, specs, options, triton).Write();
}

}  // namespace kpack
