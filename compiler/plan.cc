#include "plan.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "debug_guard.h"
#include "fs_util.h"
#include "triton.h"

namespace kpack {
namespace {

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

std::string CudaType(const Specialization& s, const ParamType& t) {
  Scalar scalar = t.scalar;
  if (!t.dtype_constexpr.empty()) {
    const Kernel& k = *s.kernel;
    for (size_t i = 0; i < k.constexprs.size(); ++i)
      if (k.constexprs[i].name == t.dtype_constexpr) scalar = s.values[i].dtype;
  }
  std::string out = t.is_const ? "const " : "";
  out += Info(scalar).cuda_type;
  if (t.is_pointer) out += "*";
  return out;
}

std::string TemplateArgument(const Constexpr& c, const ConstexprValue& v) {
  switch (c.kind) {
    case ConstexprKind::kDtype: return std::string(Info(v.dtype).cuda_type);
    case ConstexprKind::kBool: return v.integer ? "true" : "false";
    case ConstexprKind::kFloat:
    case ConstexprKind::kStr: return v.text;  // refused for CUDA by the load pass
    case ConstexprKind::kInt: break;
  }
  return v.integer < 0 ? "(" + std::to_string(v.integer) + ")" : std::to_string(v.integer);
}

std::vector<std::string> NvccFlags(const Specialization& s, const Arch& arch, bool ptx) {
  const Kernel& k = *s.kernel;
  std::string include_dir = std::filesystem::path(k.source_path).parent_path().generic_string();
  std::vector<std::string> flags = {ptx ? "-ptx" : "-cubin",
                                    ptx ? "-arch=compute_" + std::to_string(arch.number) : "-arch=" + arch.Name(),
                                    "-O3", "-std=c++17"};
  // The source's directory, unless the source is itself found on the
  // include roots, which follow: the build owner's, in their order.
  if (!k.source_on_include_path) flags.push_back("-I" + (include_dir.empty() ? "." : include_dir));
  for (const std::string& dir : k.include_dirs) flags.push_back("-I" + dir);
  flags.insert(flags.end(), k.nvcc_flags.begin(), k.nvcc_flags.end());
  return flags;
}

// Flags whose whole effect is on preprocessing (include paths, macros):
// the preprocessed source already reflects them, and include paths name
// directories, which must not keep two checkouts from sharing the cache.
bool IsPreprocessorFlag(const std::string& f) {
  for (const char* prefix : {"-I", "-D", "-U", "-isystem", "-include", "--include-path", "--define-macro",
                             "--undefine-macro", "--pre-include", "--system-include"})
    if (f.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

namespace {

// The includes every instantiation of `k` starts with.
std::string InstantiationPrelude(const Kernel& k) {
  std::string out = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <stdint.h>\n#include <type_traits>\n";
  if (HasTensorDesc(k)) out += "#include <cuda.h>  // CUtensorMap: the kernel's tensordesc params\n";
  out += k.source_on_include_path ? "#include " + k.source_name + "\n\n"
                                  : "#include \"" + std::filesystem::path(k.source_path).filename().generic_string() +
                                        "\"\n\n";
  return out;
}

// What instantiates `s`, after the prelude: the signature check, then the
// wrapper or the explicit instantiation.
std::string InstantiationBody(const Specialization& s) {
  const Kernel& k = *s.kernel;
  std::string out;
  // The wrapper below would convert arguments implicitly (an i64 in the
  // manifest passed to an int in the template); insist on the exact type.
  std::vector<std::string> types, declared, names;
  for (const Param& p : k.params) {
    if (p.launch_only) continue;  // sizes the launch only
    // A tensordesc is the encoded map, by value in the parameter space (a
    // function type drops the const and __grid_constant__ of a parameter).
    types.push_back(p.tensordesc ? "CUtensorMap" : CudaType(s, p.type));
    declared.push_back(p.tensordesc ? "const __grid_constant__ CUtensorMap " + p.name : CudaType(s, p.type) + " " + p.name);
    names.push_back(p.name);
  }
  std::string instance = InstanceName(s);
  out += "static_assert(std::is_same<decltype(&" + instance + "), void (*)(" + Join(types) + ")>::value,\n";
  out += "              \"kpack: " + instance + " must be a " + (k.global_entry ? "__global__" : "__device__") +
         " function taking exactly (" + Join(declared) + "), as the manifest's params say\");\n\n";
  if (k.global_entry) {
    // The kernel as its authors wrote it: nvcc emits it under its mangled
    // name, which the check pass reads from the cubin.
    out += "// kpack: the __global__ template found at " + k.global_entry_at + ".\n";
    std::vector<std::string> instantiated = types;  // the declaration's qualifiers, which nvcc compares
    for (size_t i = 0, j = 0; i < k.params.size(); ++i)
      if (!k.params[i].launch_only) {
        if (k.params[i].tensordesc) instantiated[j] = "const __grid_constant__ CUtensorMap";
        ++j;
      }
    out += "template __global__ void " + instance + "(" + Join(instantiated) + ");\n";
    return out;
  }
  out += "extern \"C\" __global__ void";
  if (k.launch.launch_bounds) {
    std::optional<int64_t> bound = EvaluateExpr(*k.launch.launch_bounds, BindingsFor(s));
    if (bound) out += " __launch_bounds__(" + std::to_string(*bound) + ")";
  }
  out += "\n" + s.symbol + "(" + Join(declared) + ") {\n  " + instance + "(" + Join(names);
  out += ");\n}\n";
  return out;
}

}  // namespace

std::string InstantiationSource(const Specialization& s) {
  return "// Generated by kpack: " + s.kernel->name + " with " + s.Describe() + ".\n" +
         InstantiationPrelude(*s.kernel) + InstantiationBody(s);
}

std::string BatchSource(const std::vector<const Specialization*>& members) {
  const Kernel& k = *members.front()->kernel;
  std::string out = "// Generated by kpack: " + std::to_string(members.size()) + " specializations of " + k.name +
                    ", compiled together.\n" + InstantiationPrelude(k);
  for (const Specialization* s : members) out += "// " + s->Describe() + "\n" + InstantiationBody(*s) + "\n";
  return out;
}

std::string InstanceName(const Specialization& s) {
  const Kernel& k = *s.kernel;
  std::vector<std::string> targs;
  for (size_t i = 0; i < k.constexprs.size(); ++i) targs.push_back(TemplateArgument(k.constexprs[i], s.values[i]));
  return k.entry + "<" + Join(targs) + ">";
}

Arch PtxArch(const Kernel& k) {
  Arch best = k.archs.front();
  for (const Arch& a : k.archs)
    if (a.variant == Arch::Variant::kPlain) best = a;
  return Arch{best.number, Arch::Variant::kPlain};
}

std::string BuildMode(const std::vector<std::string>& flags) {
  return FindDebugFlag(flags) ? "debug" : "release";
}

namespace {

// A CUDA unit's (or batch's) keys: the config key hashes the flags that do
// not only affect preprocessing, the arch and the toolkit; the direct key
// adds the source and where its includes are found.
void CudaKeys(const std::vector<std::string>& flags, const Arch& arch, bool ptx, const std::string& source,
              const ToolVersions& versions, std::string& config_key, std::string& key) {
  Hasher config;
  config.Add("kpack-unit-config-v1").Add(versions.nvcc).Add(arch.Name()).Add(ptx ? "ptx" : "cubin");
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string& f = flags[i];
    if (!IsPreprocessorFlag(f)) config.Add(f);
    else if (f == "-I" || f == "-D" || f == "-U" || f == "-isystem" || f == "-include") ++i;  // and its value
  }
  config_key = config.HexDigest();
  // The direct key also pins where the includes are found: the entry's
  // recorded inputs may be absolute paths (nvcc makes "../x" absolute),
  // and a checkout with the same layout elsewhere has other files there.
  Hasher direct;
  direct.Add("kpack-unit-v3").Add(config_key).Add(source);
  auto absolute = [](const std::string& path) {
    std::error_code ec;
    return std::filesystem::absolute(path, ec).lexically_normal().generic_string();
  };
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string& f = flags[i];
    if (!IsPreprocessorFlag(f)) continue;
    bool separate = f == "-I" || f == "-D" || f == "-U" || f == "-isystem" || f == "-include";
    std::string value = separate && i + 1 < flags.size() ? flags[++i] : "";
    if (f.rfind("-I", 0) == 0 && !separate) direct.Add("-I" + absolute(f.substr(2)));
    else if (f == "-I" || f == "-isystem" || f == "-include") direct.Add(f).Add(absolute(value));
    else direct.Add(f).Add(value);
  }
  key = direct.HexDigest();
}

}  // namespace

std::string UnitLabel(const Unit& u) {
  const Specialization& s = *u.spec;
  return "kernel '" + s.kernel->name + "' specialization " + s.name + " (" + s.Describe() + ") for " +
         (u.ptx ? "compute_" + std::to_string(u.arch.number) + " PTX" : u.arch.Name());
}

namespace {

// The batch of plan.units[indices] (one arch, one kernel).
Batch MakeBatch(const Plan& plan, const std::vector<size_t>& indices, const std::string& id,
                const ToolVersions& versions) {
  const Unit& first = plan.units[indices.front()];
  Batch b;
  b.units = indices;
  b.arch = first.arch;
  b.ptx = first.ptx;
  b.triton = first.triton;
  b.flags = first.flags;
  if (indices.size() == 1) {
    b.name = first.name;
    b.label = UnitLabel(first);
    b.source = first.source;
    b.key = first.key;
    b.config_key = first.config_key;
    return b;
  }
  std::vector<const Specialization*> members;
  std::string names;
  for (size_t i : indices) {
    members.push_back(plan.units[i].spec);
    names += (names.empty() ? "" : ", ") + plan.units[i].spec->NameWithVariant();
  }
  const Kernel& k = *first.spec->kernel;
  std::string where = first.ptx ? "compute_" + std::to_string(first.arch.number) : first.arch.Name();
  b.name = k.name + ".batch-" + id + "." + where;
  b.label = "kernel '" + k.name + "' specializations " + names + " (compiled together) for " +
            (first.ptx ? where + " PTX" : where);
  b.source = BatchSource(members);
  CudaKeys(b.flags, b.arch, b.ptx, b.source, versions, b.config_key, b.key);
  return b;
}

// The 64-bit hash that places a specialization among its kernel's batches.
uint64_t BatchHash(const Specialization& s) {
  return std::stoull(Hasher().Add("kpack-batch-v1").Add(s.Stem()).HexDigest().substr(0, 16), nullptr, 16);
}

struct BatchLeaf {
  std::string bits;            // the hash prefix its members share ("0110")
  std::vector<size_t> ranges;  // indices into the kernel's specialization ranges
};

// Splits `sorted` [begin, end) (sorted by hash; all share `bits`) by the
// next hash bit until each part holds at most `cap`: a binary trie over the
// hashes, which depends on the set of names only, never on their order.
void SplitLeaves(const std::vector<std::pair<uint64_t, size_t>>& sorted, size_t begin, size_t end,
                 const std::string& bits, size_t cap, std::vector<BatchLeaf>& out) {
  if (begin == end) return;
  if (end - begin <= cap || bits.size() == 64) {
    BatchLeaf leaf{bits, {}};
    for (size_t i = begin; i < end; ++i) leaf.ranges.push_back(sorted[i].second);
    std::sort(leaf.ranges.begin(), leaf.ranges.end());  // plan order
    out.push_back(std::move(leaf));
    return;
  }
  uint64_t bit = uint64_t{1} << (63 - bits.size());
  size_t middle = begin;
  while (middle < end && !(sorted[middle].first & bit)) ++middle;
  SplitLeaves(sorted, begin, middle, bits + "0", cap, out);
  SplitLeaves(sorted, middle, end, bits + "1", cap, out);
}

// Groups the units of each kernel into fatbin groups and batches.
void MakeBatches(Plan& plan, const ToolVersions& versions) {
  // [first unit, end) of each specialization, by kernel in plan order.
  std::vector<const Kernel*> kernels;
  std::map<const Kernel*, std::vector<std::pair<size_t, size_t>>> ranges_of;
  for (size_t begin = 0; begin < plan.units.size();) {
    size_t end = begin;
    while (end < plan.units.size() && plan.units[end].spec == plan.units[begin].spec) ++end;
    const Kernel* k = plan.units[begin].spec->kernel;
    if (!ranges_of.count(k)) kernels.push_back(k);
    ranges_of[k].emplace_back(begin, end);
    begin = end;
  }
  plan.group_of_unit.assign(plan.units.size(), 0);
  for (const Kernel* kernel : kernels) {
    const std::vector<std::pair<size_t, size_t>>& spec_ranges = ranges_of[kernel];
    std::vector<BatchLeaf> leaves;
    if (kernel->language == Language::kTriton || kernel->batch <= 1) {
      for (size_t r = 0; r < spec_ranges.size(); ++r) leaves.push_back(BatchLeaf{"", {r}});
    } else {
      std::vector<std::pair<uint64_t, size_t>> sorted;
      for (size_t r = 0; r < spec_ranges.size(); ++r)
        sorted.emplace_back(BatchHash(*plan.units[spec_ranges[r].first].spec), r);
      std::sort(sorted.begin(), sorted.end());
      SplitLeaves(sorted, 0, sorted.size(), "", kernel->batch, leaves);
    }
    for (const BatchLeaf& leaf : leaves) {
      FatbinGroup group;
      const Specialization& first = *plan.units[spec_ranges[leaf.ranges[0]].first].spec;
      std::string id = leaf.bits.empty() ? "all" : leaf.bits;
      group.stem = leaf.ranges.size() == 1 ? first.Stem() : kernel->name + ".batch-" + id;
      // Every specialization of a kernel has the same archs, in the same order.
      size_t archs = spec_ranges[leaf.ranges[0]].second - spec_ranges[leaf.ranges[0]].first;
      for (size_t r : leaf.ranges) {
        group.specs.push_back(plan.units[spec_ranges[r].first].spec);
        for (size_t i = spec_ranges[r].first; i < spec_ranges[r].second; ++i) plan.group_of_unit[i] = plan.groups.size();
      }
      for (size_t a = 0; a < archs; ++a) {
        std::vector<size_t> indices;
        for (size_t r : leaf.ranges) indices.push_back(spec_ranges[r].first + a);
        group.batches.push_back(plan.batches.size());
        plan.batches.push_back(MakeBatch(plan, indices, id, versions));
      }
      plan.groups.push_back(std::move(group));
    }
  }
}

}  // namespace

Plan MakePlan(const std::vector<Specialization>& specs, const ToolVersions& versions) {
  Plan plan;
  plan.triton_version = TritonVersionNumber(versions.triton);
  for (const Specialization& s : specs) {
    const Kernel& k = *s.kernel;
    if (k.language == Language::kTriton) {
      for (const Arch& arch : k.BuildArchs()) {
        Unit u;
        u.spec = &s;
        u.arch = arch;
        u.triton = true;
        u.source = TritonRequest(s, arch);
        u.name = s.Stem() + "." + arch.Name();  // "k_f16.aligned.sm_90a" for an aligned variant
        u.config_key = Hasher().Add("kpack-triton-config-v1").Add(versions.triton).HexDigest();
        u.key = Hasher().Add("kpack-triton-unit-v1").Add(u.source).Add(versions.triton).HexDigest();
        plan.units.push_back(std::move(u));
      }
      continue;
    }
    std::string source = InstantiationSource(s);
    auto add = [&](const Arch& arch, bool ptx) {
      Unit u;
      u.spec = &s;
      u.arch = arch;
      u.ptx = ptx;
      u.source = source;
      u.flags = NvccFlags(s, arch, ptx);
      u.name = s.name + (ptx ? ".compute_" + std::to_string(arch.number) : "." + arch.Name());
      CudaKeys(u.flags, arch, ptx, source, versions, u.config_key, u.key);
      plan.units.push_back(std::move(u));
    };
    for (const Arch& arch : k.archs) add(arch, false);
    if (k.ptx) add(PtxArch(k), true);
  }
  MakeBatches(plan, versions);
  return plan;
}

std::string CountUnits(const Plan& plan) {
  size_t variants = 0, computed = 0;
  bool aligned = false, narrow = false;
  for (const Unit& u : plan.units) {
    variants += u.spec->IsVariant() ? 1 : 0;
    computed += !u.spec->api && !u.spec->IsVariant() ? 1 : 0;
    aligned = aligned || u.spec->aligned;
    narrow = narrow || u.spec->narrow;
  }
  std::string out = std::to_string(plan.units.size()) + " units";
  std::vector<std::string> parts;
  if (variants) {
    std::string kinds = aligned && narrow ? "aligned and i32" : aligned ? "aligned" : "i32";
    parts.push_back(std::to_string(variants) + " of " + kinds + " variants");
  }
  if (computed) parts.push_back(std::to_string(computed) + " of other computed constexpr values");
  return parts.empty() ? out : out + " (" + Join(parts) + ")";
}

}  // namespace kpack
