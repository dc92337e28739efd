#include "codegen.h"

#include <algorithm>
#include <map>
#include <set>

#include "plan.h"
#include "version.h"

namespace kpack {
namespace {

constexpr const char* kVersion = kKpackVersion;

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// A C string literal.  Manifest text (doc strings) may hold anything, so
// escape everything outside printable ASCII.
std::string CString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f && c != '?') {  // '?' avoids trigraphs
      out += static_cast<char>(c);
    } else {
      static const char kOctal[] = "01234567";
      out += '\\';
      out += kOctal[(c >> 6) & 7];
      out += kOctal[(c >> 3) & 7];
      out += kOctal[c & 7];
    }
  }
  return out + "\"";
}

// Text for a C comment: no "*/" can end it early, no control characters.
std::string CommentText(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '*' && i + 1 < s.size() && s[i + 1] == '/') {
      out += "* /";
      ++i;
    } else if (c == '\n') {
      out += "\n *";
      if (i + 1 < s.size() && s[i + 1] != '\n') out += ' ';
    } else if (c < 0x20 || c == 0x7f) {
      out += ' ';
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// The runtime's arch code as C: "90", "90 | KPACK_ARCH_SPECIFIC".
std::string ArchCode(const Arch& a) {
  std::string out = std::to_string(a.number);
  if (a.variant == Arch::Variant::kSpecific) out += " | KPACK_ARCH_SPECIFIC";
  if (a.variant == Arch::Variant::kFamily) out += " | KPACK_ARCH_FAMILY";
  return out;
}

std::string ArchList(const std::vector<Arch>& archs) {
  std::string out;
  for (const Arch& a : archs) {
    if (!out.empty()) out += ',';
    out += a.Name();
  }
  return out;
}

Scalar ElementScalar(const Specialization& s, const ParamType& t) {
  if (t.dtype_constexpr.empty()) return t.scalar;
  const Kernel& k = *s.kernel;
  for (size_t i = 0; i < k.constexprs.size(); ++i)
    if (k.constexprs[i].name == t.dtype_constexpr) return s.values[i].dtype;
  return t.scalar;
}

// "const kpack_f16 *x" in a typed launcher.
std::string TypedParam(const Specialization& s, const Param& p) {
  std::string type = std::string(p.type.is_const ? "const " : "") + std::string(Info(ElementScalar(s, p.type)).c_type);
  return p.type.is_pointer ? type + " *" + p.name : type + " " + p.name;
}

// "const void *x" in a dispatcher, where the element type varies.
std::string DispatchParam(const Param& p) {
  if (p.type.dtype_constexpr.empty()) {
    std::string type = std::string(p.type.is_const ? "const " : "") + std::string(Info(p.type.scalar).c_type);
    return p.type.is_pointer ? type + " *" + p.name : type + " " + p.name;
  }
  return std::string(p.type.is_const ? "const void *" : "void *") + p.name;
}

std::string ConstexprCType(const Constexpr& c) {
  return c.kind == ConstexprKind::kDtype ? "kpack_dtype" : "int";
}

std::string Join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::vector<const Specialization*> SpecsOf(const Kernel& k, const std::vector<Specialization>& specs) {
  std::vector<const Specialization*> out;
  for (const Specialization& s : specs)
    if (s.kernel == &k) out.push_back(&s);
  return out;
}

// "kpack_stream stream, kpack_dtype T, int BLOCK, const void *x, ...".
std::string DispatcherParams(const Kernel& k) {
  std::vector<std::string> params = {"kpack_stream stream"};
  for (const Constexpr& c : k.constexprs) params.push_back(ConstexprCType(c) + " " + c.name);
  for (const Param& p : k.params) params.push_back(DispatchParam(p));
  return Join(params, ", ");
}

// A string literal for the assembler.
std::string AsmString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string LaunchSummary(const Kernel& k) {
  std::vector<std::string> grid, block;
  for (const Expr& e : k.launch.grid) grid.push_back(FormatExpr(e));
  if (k.language == Language::kTriton)
    return "grid (" + Join(grid, ", ") + "), 32 x num_warps threads, dynamic shared memory as Triton computed it";
  for (const Expr& e : k.launch.block) block.push_back(FormatExpr(e));
  return "grid (" + Join(grid, ", ") + "), block (" + Join(block, ", ") + "), dynamic shared memory " +
         FormatExpr(k.launch.shared_mem) + " bytes";
}

// ---- Header ------------------------------------------------------------------

class HeaderWriter {
 public:
  HeaderWriter(const Package& pkg, const std::vector<Specialization>& specs, const CodegenOptions& o)
      : pkg_(pkg), specs_(specs), o_(o) {}

  std::string Write() {
    std::string guard = Upper(pkg_.prefix) + "_KPACK_H_";
    out_ += "/*\n * " + o_.header_name + " - typed launchers for the kpack package '" + pkg_.name + "'.\n";
    out_ += " *\n * Generated by kpack " + std::string(kVersion) + " from " + CommentText(o_.manifest_label) +
            ". Do not edit:\n * change the manifests and rebuild.\n *\n";
    out_ += " * Every function launches asynchronously on the caller's stream (a CUstream\n";
    out_ += " * or cudaStream_t; NULL is the legacy default stream), never synchronizes,\n";
    out_ += " * never allocates after the first launch, is thread-safe and may be\n";
    out_ += " * called during stream capture once the kernel has been launched (loaded)\n";
    out_ += " * outside capture.  Each returns KPACK_SUCCESS or a kpack_status; see\n";
    out_ += " * kpack_status_message() and kpack_last_error_detail() in kpack.h.\n */\n";
    out_ += "#ifndef " + guard + "\n#define " + guard + "\n\n";
    out_ += "#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n#include \"kpack.h\"\n\n";
    out_ += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
    out_ += "/* The runtime ABI this header was generated for (KPACK_ABI_VERSION). */\n";
    out_ += "#define " + Upper(pkg_.prefix) + "_KPACK_ABI_VERSION " + std::to_string(kAbiVersion) + "\n";
    for (const Kernel& k : pkg_.kernels) WriteKernel(k);
    WritePackage();
    out_ += "\n#ifdef __cplusplus\n}  /* extern \"C\" */\n#endif\n\n#endif  /* " + guard + " */\n";
    return out_;
  }

 private:
  void WriteKernel(const Kernel& k) {
    std::vector<const Specialization*> mine = SpecsOf(k, specs_);
    std::string base = pkg_.prefix + "_" + k.name;
    out_ += "\n/* ==== " + k.name + " " + std::string(std::max<int>(3, 66 - static_cast<int>(k.name.size())), '=') +
            "\n *\n";
    if (!k.doc.empty()) out_ += " * " + CommentText(k.doc) + "\n *\n";
    out_ += " * Source: " + CommentText(k.source_text) + " (" + (k.language == Language::kTriton ? "Triton" : "CUDA") +
            " entry " + k.entry + "), built for " + ArchList(k.BuildArchs()) +
            (k.ptx ? " plus PTX" : "") + ".\n";
    out_ += " * Launch: " + CommentText(LaunchSummary(k)) + ".\n */\n\n";

    out_ += "/* One built combination of " + k.name + "'s constexprs. */\n";
    out_ += "typedef struct " + base + "_config {\n";
    for (const Constexpr& c : k.constexprs) out_ += "  " + ConstexprCType(c) + " " + c.name + ";\n";
    out_ += "} " + base + "_config;\n\n";
    out_ += "/* The number of built specializations of " + k.name + ". */\n";
    out_ += "#define " + Upper(base) + "_NUM_CONFIGS " + std::to_string(mine.size()) + "\n\n";
    out_ += "/* Every built combination, in manifest order; pass one to " + base + "(). */\n";
    out_ += "extern const " + base + "_config " + base + "_configs[" + Upper(base) + "_NUM_CONFIGS];\n\n";

    WriteDispatcherDecl(k, base, mine);
    for (const Specialization* s : mine) WriteTypedDecl(*s);
  }

  void WriteDispatcherDecl(const Kernel& k, const std::string& base, const std::vector<const Specialization*>& mine) {
    out_ += "/*\n * Launches " + k.name + " with the specialization that the constexpr arguments\n";
    out_ += " * select (a switch, no string compares, no allocation).\n *\n";
    for (const Constexpr& c : k.constexprs) {
      std::vector<std::string> values;
      for (const ConstexprValue& v : c.values)
        values.push_back(c.kind == ConstexprKind::kDtype ? std::string(Info(v.dtype).enumerator) : ValueText(c, v));
      out_ += " * " + c.name + ": one of " + Join(values, ", ") + ".\n";
    }
    out_ += " *\n * Returns KPACK_ERROR_NO_SPECIALIZATION, with the built combinations in\n";
    out_ += " * kpack_last_error_detail(), when the combination was not built (" + std::to_string(mine.size()) +
            " were);\n * otherwise what the typed launcher returns.\n */\n";
    out_ += "kpack_status " + base + "(" + DispatcherParams(k) + ");\n\n";
  }

  void WriteTypedDecl(const Specialization& s) {
    const Kernel& k = *s.kernel;
    out_ += "/* " + k.name + " with " + s.Describe() + "; SASS for " + ArchList(k.BuildArchs()) +
            (k.debug ? "; DEBUG BUILD (slow)" : "") + ". */\n";
    std::vector<std::string> params = {"kpack_stream stream"};
    for (const Param& p : k.params) params.push_back(TypedParam(s, p));
    out_ += "kpack_status " + s.launcher + "(" + Join(params, ", ") + ");\n\n";
  }

  void WritePackage() {
    out_ += "\n/* ==== package " + std::string(58, '=') + " */\n\n";
    out_ += "/* Returns the number of specializations in the package (" + std::to_string(specs_.size()) +
            "). Never fails. */\n";
    out_ += "size_t " + pkg_.prefix + "_num_specializations(void);\n\n";
    out_ += "/*\n * Describes specialization `index` (0 <= index < " + pkg_.prefix +
            "_num_specializations()):\n * kernel, name, archs, build mode and fatbin size; all strings static.\n";
    out_ += " * Returns KPACK_ERROR_INVALID_ARGUMENT for an index out of range or a\n * NULL `info`. Thread-safe.\n */\n";
    out_ += "kpack_status " + pkg_.prefix + "_specialization_info(size_t index, kpack_spec_info *info);\n\n";
    out_ += "/*\n * Describes the package: its name, the kpack version and runtime ABI it was\n";
    out_ += " * generated for, and its build mode: \"release\", or \"debug\" when any\n";
    out_ += " * specialization is a debug build (kernels whose manifest allows it).\n";
    out_ += " * Returns KPACK_ERROR_ABI_MISMATCH, with *info filled, when the linked\n";
    out_ += " * runtime implements another ABI; KPACK_ERROR_INVALID_ARGUMENT for NULL.\n */\n";
    out_ += "kpack_status " + pkg_.prefix + "_build_info(kpack_build_info *info);\n";
  }

  const Package& pkg_;
  const std::vector<Specialization>& specs_;
  const CodegenOptions& o_;
  std::string out_;
};

// ---- Launcher source -------------------------------------------------------------

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

class LauncherWriter {
 public:
  LauncherWriter(const Package& pkg, const std::vector<Specialization>& specs, const CodegenOptions& o,
                 const std::map<const Specialization*, TritonLaunch>& triton)
      : pkg_(pkg), specs_(specs), o_(o), triton_(triton) {}

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
    out_ += std::string(kArithmeticHelpers) + "\n";
    out_ += "/* The fatbins, in specialization order (" + pkg_.prefix + "_fatbins.S). */\n";
    out_ += "extern const kpack_blob " + pkg_.prefix + "_kpack_blobs[];\n\n";
    WriteArchTables();
    for (size_t i = 0; i < specs_.size(); ++i) WriteDescriptor(i);
    for (const Kernel& k : pkg_.kernels) {
      WriteConfigs(k);
      for (size_t i = 0; i < specs_.size(); ++i)
        if (specs_[i].kernel == &k) WriteTypedLauncher(i);
      WriteDispatcher(k);
    }
    WritePackageFunctions();
    return out_;
  }

 private:
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
    out_ += "    " + std::to_string(kAbiVersion) + ", " + CString(pkg_.name) + ", " + CString(k.name) + ", " +
            CString(s.name) + ",\n    " + CString(s.symbol) + ", &" + pkg_.prefix + "_kpack_blobs[" +
            std::to_string(i) + "],\n";
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
    for (const Param& p : k.params) {
      params.push_back(TypedParam(s, p));
      args.push_back("(void *)&" + p.name);
    }
    out_ += "kpack_status " + s.launcher + "(" + Join(params, ", ") + ") {\n";
    std::vector<std::string> block = Dims(k.launch.block, b);
    std::string smem = EmitExprC(k.launch.shared_mem, b);
    if (k.language == Language::kTriton) {
      auto it = triton_.find(&s);
      TritonLaunch t = it != triton_.end() ? it->second
                                           : TritonLaunch{0, static_cast<uint32_t>(k.NumWarps(s.values)), 2};
      block = {std::to_string(32 * t.num_warps), "1", "1"};
      smem = std::to_string(t.shared);
      // Triton's global and profile scratch pointers: unused, so NULL.
      for (uint32_t h = 0; h < t.hidden_pointer_params; ++h) {
        out_ += h == 0 ? "  void *kpack_scratch[" + std::to_string(t.hidden_pointer_params) + "] = {NULL};\n" : "";
        args.push_back("(void *)&kpack_scratch[" + std::to_string(h) + "]");
      }
    }
    WriteDivisibilityChecks(s);
    out_ += "  int kpack_bad = 0;\n";
    out_ += "  const int64_t kpack_grid[3] = {" + Join(Dims(k.launch.grid, b), ", ") + "};\n";
    out_ += "  const int64_t kpack_block[3] = {" + Join(block, ", ") + "};\n";
    out_ += "  const int64_t kpack_smem = " + smem + ";\n";
    if (args.empty()) args.push_back("NULL");
    out_ += "  void *kpack_args[] = {" + Join(args, ", ") + "};\n";
    out_ += "  kpack_status kpack_st = kpack_check_geometry_(" + CString(s.name) +
            ", kpack_bad, kpack_grid, kpack_block, kpack_smem);\n";
    out_ += "  if (kpack_st != KPACK_SUCCESS) return kpack_st;\n";
    out_ += "  return kpack_launch(&" + Descriptor(i) +
            ", stream, (uint32_t)kpack_grid[0], (uint32_t)kpack_grid[1], (uint32_t)kpack_grid[2],\n"
            "                      (uint32_t)kpack_block[0], (uint32_t)kpack_block[1], (uint32_t)kpack_block[2],\n"
            "                      (uint32_t)kpack_smem, kpack_args);\n}\n\n";
  }

  // A divisibility hint is a promise the compiled code relies on (16-byte
  // vector accesses): a launch that breaks it is refused, never run.
  void WriteDivisibilityChecks(const Specialization& s) {
    for (const Param& p : s.kernel->params) {
      if (!p.divisibility) continue;
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

  void WritePackageFunctions() {
    std::string n = std::to_string(specs_.size());
    out_ += "static const kpack_kernel *const kpack_all_[" + n + "] = {\n";
    for (size_t i = 0; i < specs_.size(); ++i) out_ += "    &" + Descriptor(i) + ",\n";
    out_ += "};\n\n";
    out_ += "size_t " + pkg_.prefix + "_num_specializations(void) { return " + n + "; }\n\n";
    out_ += "kpack_status " + pkg_.prefix + "_specialization_info(size_t index, kpack_spec_info *info) {\n";
    out_ += "  if (index >= " + n + ")\n";
    out_ += "    return kpack_fail(KPACK_ERROR_INVALID_ARGUMENT, \"" + pkg_.prefix +
            "_specialization_info: index %zu >= " + n + "\", index);\n";
    out_ += "  return kpack_describe(kpack_all_[index], info);\n}\n\n";
    size_t debug = 0;
    for (const Specialization& s : specs_) debug += s.kernel->debug ? 1 : 0;
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
  std::string out_;
};

}  // namespace

std::string GenerateHeader(const Package& pkg, const std::vector<Specialization>& specs,
                           const CodegenOptions& options) {
  return HeaderWriter(pkg, specs, options).Write();
}

std::string GenerateLauncherSource(const Package& pkg, const std::vector<Specialization>& specs,
                                   const CodegenOptions& options,
                                   const std::map<const Specialization*, TritonLaunch>& triton) {
  return LauncherWriter(pkg, specs, options, triton).Write();
}

std::string GenerateEmbedAsm(const Package& pkg, const std::vector<std::string>& paths,
                             const std::vector<std::string>& hashes) {
  std::string section = "kpack_" + pkg.prefix;
  std::string out = "/* Generated by kpack " + std::string(kVersion) + ": the fatbins of package '" + pkg.name +
                    "'. Do not edit.\n"
                    " *\n"
                    " * The blobs are pulled in with .incbin (no hex arrays through the C\n"
                    " * compiler) into a large-data section, and the table holds 64-bit\n"
                    " * absolute addresses, so libraries whose fatbins exceed 2 GiB still link\n"
                    " * in the default small code model. */\n\n";
  out += "#if defined(__x86_64__)\n#define KPACK_BLOB_FLAGS \"al\"\n#else\n#define KPACK_BLOB_FLAGS \"a\"\n#endif\n\n";
  out += "  .section .lrodata." + section + ",KPACK_BLOB_FLAGS,%progbits\n";
  for (size_t i = 0; i < paths.size(); ++i) {
    std::string label = section + "_blob_" + std::to_string(i);
    out += "  .balign 64\n" + label + ":  /* blake3 " + hashes[i] + " */\n";
    out += "  .incbin " + AsmString(paths[i]) + "\n" + label + "_end:\n";
  }
  out += "\n  .section .data.rel.ro." + section + ",\"aw\",%progbits\n  .balign 8\n";
  out += "  .globl " + pkg.prefix + "_kpack_blobs\n  .hidden " + pkg.prefix + "_kpack_blobs\n";
  out += pkg.prefix + "_kpack_blobs:\n";
  for (size_t i = 0; i < paths.size(); ++i) {
    std::string label = section + "_blob_" + std::to_string(i);
    out += "  .quad " + label + ", " + label + "_end - " + label + "\n";
  }
  out += "\n  .section .note.GNU-stack,\"\",%progbits\n";
  return out;
}

}  // namespace kpack
