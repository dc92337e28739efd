#include "triton_reader.h"

#include <algorithm>
#include <filesystem>

namespace kpack {
namespace {

namespace fs = std::filesystem;

bool IsDottedName(const std::string& s) {
  if (s.empty() || s.front() == '.' || s.back() == '.' || s.find("..") != std::string::npos) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  });
}

// The options kpack builds as axes, their kinds and the tags of their
// name parts ("w4" for num_warps=4).
struct OptionSpec {
  const char* name;
  ConstexprKind kind;
  const char* tag;
};
constexpr OptionSpec kOptions[] = {{"num_warps", ConstexprKind::kInt, "w"},
                                   {"num_stages", ConstexprKind::kInt, "stages"},
                                   {"maxnreg", ConstexprKind::kInt, "maxnreg"},
                                   {"enable_fp_fusion", ConstexprKind::kBool, "fpfusion"},
                                   {"num_ctas", ConstexprKind::kInt, "ctas"}};

void CheckOptionValues(FileReader& r, const Constexpr& c) {
  if (c.kind != (c.name == "enable_fp_fusion" ? ConstexprKind::kBool : ConstexprKind::kInt)) {
    r.diag().Error(c.loc, c.name + (c.name == "enable_fp_fusion" ? " must be of type bool" : " must be of type int"));
    return;
  }
  for (const ConstexprValue& v : c.values) {
    if (c.name == "num_warps" && (v.integer < 1 || v.integer > 32 || (v.integer & (v.integer - 1))))
      r.diag().Error(v.loc, "num_warps must be a power of two from 1 to 32");
    if (c.name == "num_stages" && v.integer < 1) r.diag().Error(v.loc, "num_stages must be at least 1");
    // A cluster of num_ctas CTAs: sm_90's portable sizes, and 16, which
    // the runtime opts in to (non-portable cluster size).
    if (c.name == "num_ctas" && v.integer != 1 && v.integer != 2 && v.integer != 4 && v.integer != 8 &&
        v.integer != 16)
      r.diag().Error(v.loc, "num_ctas must be 1, 2, 4, 8 or 16 (the CTAs of a thread-block cluster)");
    // ptxas's .maxnreg range; 0 is an autotune config that sets none.
    const bool no_limit = c.origin == ConstexprOrigin::kAutotune && v.integer == 0;
    if (c.name == "maxnreg" && !no_limit && (v.integer < 16 || v.integer > 255))
      r.diag().Error(v.loc, "maxnreg must be from 16 to 255 registers");
  }
}

}  // namespace

void ReadAssume(FileReader& r, const YAML::Node& v, std::vector<std::pair<std::string, std::string>>& assume) {
  if (!v.IsMap()) {
    r.Error(v, "assume must be a mapping of module-level Python names (pkg.module.NAME) to values");
    return;
  }
  for (const auto& entry : v) {
    std::optional<std::string> name = r.String(entry.first, "an assume key");
    if (!name) continue;
    if (!IsDottedName(*name) || name->find('.') == std::string::npos) {
      r.Error(entry.first, "assume key '" + *name + "' is not a qualified Python name (pkg.module.NAME)");
      continue;
    }
    std::optional<std::string> literal = r.JsonLiteral(entry.second, "the value of assume '" + *name + "'");
    if (!literal) continue;
    auto it = std::find_if(assume.begin(), assume.end(), [&](const auto& a) { return a.first == *name; });
    if (it != assume.end()) it->second = *literal;
    else assume.emplace_back(*name, *literal);
  }
}

void ReadTritonKey(FileReader& r, const std::string& key, const YAML::Node& key_node, const YAML::Node& v, Kernel& k) {
  if (k.language != Language::kTriton) {
    r.Error(key_node, key + " applies to Triton kernels only");
    return;
  }
  if (key == "module") {
    std::optional<std::string> s = r.String(v, "module");
    if (!s) return;
    if (!IsDottedName(*s)) {
      r.Error(v, "module '" + *s + "' is not a dotted Python module name");
      return;
    }
    k.module = *s;
    k.source_text = *s;
    k.source_loc = r.Loc(v);
  } else if (key == "variants") {
    std::optional<std::string> s = r.String(v, "variants");
    k.variants_loc = r.Loc(v);
    if (!s) return;
    if (*s == "jit") k.variants = Variants::kJit;
    else if (*s == "each") k.variants = Variants::kEach;
    else if (*s == "none") k.variants = Variants::kNone;
    else r.Error(v, "variants must be jit, each or none (got '" + *s + "')");
  } else if (key == "load") {
    std::optional<std::string> s = r.String(v, "load");
    if (s && *s == "execute") k.execute_module = true;
    else if (s && *s != "slice") r.Error(v, "load must be slice or execute (got '" + *s + "')");
  } else if (key == "assume") {
    ReadAssume(r, v, k.assume);
  }
}

void ResolveTritonModule(FileReader& r, Kernel& k) {
  if (k.source_loc.line > 0 && !k.source_path.empty()) {
    r.diag().Error(k.source_loc, "a kernel manifest gives either source or module, not both");
    return;
  }
  std::string relative = k.module;
  std::replace(relative.begin(), relative.end(), '.', '/');
  for (const std::string& dir : k.python_path) {
    for (const std::string& candidate : {dir + "/" + relative + ".py", dir + "/" + relative + "/__init__.py"}) {
      if (!InputExists(candidate, r.options())) continue;
      k.source_path = fs::path(candidate).lexically_normal().generic_string();
      // Line info names the module's file from its package root: the same
      // wherever the package is installed.
      k.source_name = InsideRoot(k.source_path, r.root(), r.options())
                          ? RootRelative(k.source_path, r.root())
                          : fs::path(candidate).lexically_relative(dir).generic_string();
      return;
    }
  }
  std::string searched;
  for (const std::string& dir : k.python_path) searched += (searched.empty() ? "" : ", ") + dir;
  r.diag().Error(k.source_loc, "module '" + k.module + "' not found on the python path (" +
                                   (searched.empty() ? "which is empty: give the package file a python_path, or "
                                                       "kpack build --python-path"
                                                     : "searched " + searched) +
                                   ")");
}

void ReadTritonOptions(FileReader& r, const PendingTritonKeys& keys, Kernel& k) {
  if (!keys.options.IsDefined()) return;
  const YAML::Node& v = keys.options;
  if (!r.CheckMap(v, "options", {"num_warps", "num_stages", "maxnreg", "enable_fp_fusion", "num_ctas"}, {})) return;
  for (const auto& entry : v) {
    const std::string name = entry.first.Scalar();
    const OptionSpec* spec = std::find_if(std::begin(kOptions), std::end(kOptions),
                                          [&](const OptionSpec& o) { return name == o.name; });
    if (spec == std::end(kOptions)) continue;  // CheckMap reported it
    if (const Constexpr* existing = k.FindConstexpr(name); existing && existing->option) {
      r.Error(entry.first, "option '" + name + "' is given twice (in options and in constexprs)");
      continue;
    }
    Constexpr c;
    c.name = name;
    c.kind = spec->kind;
    c.tag = spec->tag;
    c.option = true;
    c.loc = r.Loc(entry.first);
    // One value or a list of the values to build.
    if (entry.second.IsSequence()) {
      if (!r.NonEmptySequence(entry.second, "values of option '" + name + "'")) continue;
      ReadConstexprValues(r, entry.second, c);
    } else if (std::optional<ConstexprValue> value = ReadConstexprValue(r, entry.second, c.kind, name)) {
      c.values.push_back(*value);
    }
    k.constexprs.push_back(std::move(c));
  }
}

void CheckTritonKernel(FileReader& r, const Kernel& k) {
  if (k.source_path.size() < 3 || k.source_path.compare(k.source_path.size() - 3, 3, ".py") != 0)
    r.diag().Error(k.source_loc, "a Triton kernel's source must be a .py file");
  const std::pair<const SourceLoc*, const char*> decided[] = {
      {&k.launch.block_loc, "block"}, {&k.launch.shared_mem_loc, "shared_mem"},
      {&k.launch.launch_bounds_loc, "launch_bounds"}};
  for (const auto& [loc, key] : decided)
    if (loc->line > 0)
      r.diag().Error(*loc, std::string("a Triton kernel's ") + key +
                               " comes from Triton (32 x num_warps threads, its shared memory); remove it");
  for (const Param& p : k.params)
    if (k.variants == Variants::kNone && (p.divisibility_auto || p.width_auto || p.equal_to_1))
      r.diag().Error(p.divisibility_auto ? p.divisibility_loc : p.width_auto ? p.width_loc : p.equal_to_1_loc,
                     "'" + p.name + "' asks for a variant, but the kernel says variants: none");
  for (const Constexpr& c : k.constexprs) {
    if (c.option) CheckOptionValues(r, c);
    const bool cluster = c.name == "num_ctas" && c.option &&
                         std::any_of(c.values.begin(), c.values.end(), [](const ConstexprValue& v) { return v.integer > 1; });
    for (const Arch& a : k.archs)
      if (cluster && a.number < 90) {
        r.diag().Error(c.loc, "num_ctas above 1 launches thread-block clusters, which need sm_90 or later; the kernel "
                              "is built for " + a.Name());
        break;
      }
    if (c.values.empty())
      r.diag().Error(c.loc, "constexpr '" + c.name + "' has no values to build: give it values: [...]");
  }
  if (k.ptx) r.diag().Error(k.loc, "Triton kernels are packaged as SASS only; ptx: true is not supported");
  for (const Arch& a : k.archs)
    if (a.variant == Arch::Variant::kFamily)
      r.diag().Error(k.loc, "Triton cannot target the family arch " + a.Name() + "; use sm_" + std::to_string(a.number));
  // Rules may read the runtime params and the device, like the grid.
  auto lookup = [&k](const std::string& name) { return LookUpName(k, name); };
  for (const Constexpr& c : k.constexprs)
    if (c.rule && c.origin == ConstexprOrigin::kManifest) CheckExpr(*c.rule, lookup, true, r.diag());
  std::string cycle;
  if (!k.ComputedOrder(&cycle)) {
    const Constexpr* c = k.FindConstexpr(cycle);
    r.diag().Error(c->loc, "the rules of computed constexprs read each other in a cycle (through '" + cycle +
                               "'); the launcher cannot compute them");
  }
}

}  // namespace kpack
