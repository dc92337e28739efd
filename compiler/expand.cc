#include "expand.h"

#include <algorithm>
#include <map>

#include "manifest.h"

namespace kpack {
namespace {

std::string NamePart(const Constexpr& c, const ConstexprValue& v) {
  switch (c.kind) {
    case ConstexprKind::kDtype:
      return c.tag + std::string(Info(v.dtype).manifest);
    case ConstexprKind::kBool:
      return v.integer ? c.tag : "no" + c.tag;
    case ConstexprKind::kStr:
      return c.tag + (c.cpp_name ? LastNameComponent(v.text) : v.text);
    case ConstexprKind::kFloat: {
      // A C name holds no '.', '-' or '+': 1e-06 is 1em06, -0.5 is m0p5.
      std::string part;
      for (char ch : v.text) part += ch == '.' ? std::string("p") : ch == '-' ? std::string("m")
                                     : ch == '+' ? std::string() : std::string(1, ch);
      return c.tag + part;
    }
    case ConstexprKind::kInt:
      break;
  }
  // A '-' cannot appear in a C identifier: spell -4 as m4.
  return c.tag + (v.integer < 0 ? "m" + std::to_string(-v.integer) : std::to_string(v.integer));
}

bool Excluded(const Kernel& k, const std::vector<ConstexprValue>& values) {
  for (const Exclusion& ex : k.exclusions) {
    bool all = true;
    for (const auto& [index, value] : ex.matches) all = all && SameValue(values[index], value);
    if (all) return true;
  }
  if (!k.configs) return false;
  // Only the combinations the autotune configs list.
  return std::none_of(k.configs->tuples.begin(), k.configs->tuples.end(), [&](const std::vector<ConstexprValue>& t) {
    for (size_t i = 0; i < t.size(); ++i)
      if (!SameValue(values[k.configs->axes[i]], t[i])) return false;
    return true;
  });
}

// Whether every computed constexpr whose rule reads only constexprs has
// the value its rule gives: the launcher could never run another build
// (fla's BK = next_pow2(K) with K a constexpr), so none is made.
bool RulesAgree(const Kernel& k, const std::vector<ConstexprValue>& values) {
  Specialization probe;
  probe.kernel = &k;
  probe.values = values;
  ExprBindings b = BindingsFor(probe);
  for (size_t i = 0; i < k.constexprs.size(); ++i) {
    if (!k.constexprs[i].Computed()) continue;
    std::optional<int64_t> folded = EvaluateExpr(*k.constexprs[i].rule, b);
    if (folded && *folded != values[i].integer) return false;
  }
  return true;
}

// The number of combinations, or 0 when it exceeds `limit`.
uint64_t ProductSize(const Kernel& k, uint64_t limit) {
  uint64_t total = 1;
  for (const Constexpr& c : k.constexprs) {
    if (c.values.empty() || total > limit / c.values.size()) return c.values.empty() ? 1 : 0;
    total *= c.values.size();
  }
  return total;
}

void ExpandKernel(const Package& pkg, const Kernel& k, std::vector<Specialization>& out) {
  std::vector<size_t> odometer(k.constexprs.size(), 0);
  std::map<std::string, size_t> groups;  // API name -> its first build in `out`
  while (true) {
    std::vector<ConstexprValue> values;
    for (size_t i = 0; i < k.constexprs.size(); ++i) values.push_back(k.constexprs[i].values[odometer[i]]);
    if (!Excluded(k, values) && RulesAgree(k, values)) {
      Specialization s;
      s.kernel = &k;
      s.name = k.name;
      for (size_t i = 0; i < values.size(); ++i) {
        const Constexpr& c = k.constexprs[i];
        if (c.InApi()) s.name += "_" + NamePart(c, values[i]);
        else if (c.Computed()) s.computed += (s.computed.empty() ? "" : "_") + NamePart(c, values[i]);
      }
      s.values = std::move(values);
      s.launcher = pkg.prefix + "_" + s.name;
      // Triton names the kernel after the Python function; kpack wraps CUDA
      // templates in an extern "C" kernel of its own name.
      // A __global__ template's symbol is its mangled name, which the check
      // pass takes from the cubin (cuda_instance.h proves the instance).
      s.symbol = k.language == Language::kTriton ? k.entry : k.global_entry ? "" : "kpack_" + s.launcher;
      auto [it, first] = groups.emplace(s.name, out.size());
      s.api = first;
      s.group = it->second;
      out.push_back(std::move(s));
    }
    // Advance the last constexpr fastest, so names sort like the manifest.
    size_t i = odometer.size();
    while (i > 0 && ++odometer[i - 1] == k.constexprs[i - 1].values.size()) odometer[--i] = 0;
    if (i == 0) break;
  }
}

// Every C name the package generates must be unique: a kernel "a_f16" and a
// specialization "a" + "_f16" would otherwise collide in the header.
void CheckCollisions(const Package& pkg, const std::vector<Specialization>& specs, Diagnostics& diag) {
  std::map<std::string, std::string> owners;
  auto claim = [&](const std::string& name, const std::string& owner, const SourceLoc& loc) {
    auto [it, inserted] = owners.emplace(name, owner);
    if (!inserted)
      diag.Error(loc, "generated name '" + name + "' of " + owner + " collides with " + it->second);
  };
  claim(pkg.prefix + "_num_specializations", "the package", pkg.loc);
  claim(pkg.prefix + "_specialization_info", "the package", pkg.loc);
  for (const Kernel& k : pkg.kernels) {
    std::string owner = "kernel '" + k.name + "'";
    claim(pkg.prefix + "_" + k.name, owner, k.loc);
    claim(pkg.prefix + "_" + k.name + "_config", owner, k.loc);
    claim(pkg.prefix + "_" + k.name + "_configs", owner, k.loc);
    if (k.HasAuto()) claim(pkg.prefix + "_" + k.name + "_auto", owner + " (its auto dispatcher)", k.loc);
  }
  for (const Specialization& s : specs)
    if (s.api) claim(s.launcher, "specialization " + s.Describe() + " of '" + s.kernel->name + "'", s.kernel->loc);
}

// The variants each build of `k` gets, by VariantIndex.
std::vector<unsigned> VariantsOf(const Kernel& k) {
  const bool aligned = k.HasAlignedVariant(), narrow = k.HasNarrowVariant();
  if (k.variants == Variants::kNone || (!aligned && !narrow)) return {};
  // jit: the one build the JIT makes of an ordinary call, every auto
  // param specialized together; each: every kind separately and both.
  if (k.variants == Variants::kJit) return {(aligned ? 1u : 0u) | (narrow ? 2u : 0u)};
  std::vector<unsigned> out;
  for (unsigned index = 1; index < 4; ++index)
    if (!((index & 1 && !aligned) || (index & 2 && !narrow))) out.push_back(index);
  return out;
}

}  // namespace

ExprBindings BindingsFor(const Specialization& s) {
  ExprBindings b;
  b.constant = [&s](const std::string& name) -> std::optional<int64_t> {
    const Kernel& k = *s.kernel;
    for (size_t i = 0; i < k.constexprs.size(); ++i)
      if (k.constexprs[i].name == name &&
          (k.constexprs[i].kind == ConstexprKind::kInt || k.constexprs[i].kind == ConstexprKind::kBool))
        return s.values[i].integer;
    return std::nullopt;
  };
  b.size_of = [&s](const std::string& name) -> int64_t {
    const Kernel& k = *s.kernel;
    for (size_t i = 0; i < k.constexprs.size(); ++i)
      if (k.constexprs[i].name == name) return Info(s.values[i].dtype).size;
    return 0;
  };
  return b;
}

ExprBindings LauncherBindings(const Specialization& s) {
  ExprBindings b = BindingsFor(s);
  b.constant = [&s, inner = b.constant](const std::string& name) -> std::optional<int64_t> {
    const Constexpr* c = s.kernel->FindConstexpr(name);
    if (c && c->Computed()) return std::nullopt;
    return inner(name);
  };
  return b;
}

std::string ValueText(const Constexpr& c, const ConstexprValue& v) {
  switch (c.kind) {
    case ConstexprKind::kDtype: return std::string(Info(v.dtype).manifest);
    case ConstexprKind::kBool: return v.integer ? "true" : "false";
    case ConstexprKind::kFloat:
    case ConstexprKind::kStr: return v.text;
    case ConstexprKind::kInt: break;
  }
  return std::to_string(v.integer);
}

std::string Specialization::Describe() const {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!kernel->constexprs[i].InApi() && !kernel->constexprs[i].Computed()) continue;
    out += (out.empty() ? "" : ", ") + kernel->constexprs[i].name + "=" + ValueText(kernel->constexprs[i], values[i]);
  }
  return IsVariant() ? out + "; " + VariantName() + " variant" : out;
}

std::string Specialization::VariantName() const {
  if (aligned && narrow) return "aligned i32";
  return aligned ? "aligned" : narrow ? "i32" : "";
}

std::string Specialization::BuildLabel() const {
  std::string out;
  if (!api || IsVariant())
    for (size_t i = 0; i < values.size(); ++i)
      if (kernel->constexprs[i].Computed())
        out += (out.empty() ? "" : ", ") + kernel->constexprs[i].name + "=" +
               ValueText(kernel->constexprs[i], values[i]);
  if (IsVariant()) out += (out.empty() ? "" : ", ") + VariantName() + " variant";
  return out;
}

std::string Specialization::NameWithVariant() const {
  std::string label = BuildLabel();
  return label.empty() ? name : name + " (" + label + ")";
}

std::string Specialization::Stem() const {
  return name + (computed.empty() ? "" : "." + computed) + (aligned ? ".aligned" : "") + (narrow ? ".i32" : "");
}

int Specialization::Divisibility(const Param& p) const {
  return p.divisibility_auto && !aligned ? 0 : p.divisibility;
}

ParamType Specialization::TypeOf(const Param& p) const {
  ParamType t = p.type;
  if (narrow && p.width_auto) t.scalar = Scalar::kI32;
  return t;
}

// launch.cluster, evaluated for `s`: each dimension at least 1 and the
// cluster at most 8 blocks, the portable size every sm_90+ device launches
// (more needs a non-portable opt-in kpack does not make).  Returns false
// after reporting a cluster that breaks it.
bool CheckClusterSize(const Specialization& s, Diagnostics& diag) {
  const Launch& l = s.kernel->launch;
  if (l.cluster.empty()) return true;
  ExprBindings b = BindingsFor(s);
  std::vector<int64_t> dims;
  std::string text;
  int64_t blocks = 1;
  for (const Expr& e : l.cluster) {
    dims.push_back(EvaluateExpr(e, b).value_or(0));
    text += (text.empty() ? "" : "x") + std::to_string(dims.back());
    blocks *= std::clamp<int64_t>(dims.back(), 0, 1 << 20);
  }
  bool small = std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 1; });
  if (small && blocks <= 8) return true;
  diag.Error(l.cluster_loc, "specialization " + s.name + ": the cluster is " + text + "; every dimension must be at "
                            "least 1 and the cluster at most 8 blocks (the portable size)");
  return false;
}

std::vector<Specialization> Expand(const Package& pkg, Diagnostics& diag) {
  std::vector<Specialization> builds;
  for (const Kernel& k : pkg.kernels) {
    uint64_t size = ProductSize(k, pkg.max_specializations);
    if (size == 0 || size > pkg.max_specializations) {
      diag.Error(k.loc, "kernel '" + k.name + "' expands to more than " + std::to_string(pkg.max_specializations) +
                            " specializations (max_specializations in the package file)");
      continue;
    }
    size_t before = builds.size();
    ExpandKernel(pkg, k, builds);
    if (builds.size() == before) diag.Error(k.loc, "every specialization of kernel '" + k.name + "' is excluded");
    for (size_t i = before; i < builds.size(); ++i)
      if (!CheckClusterSize(builds[i], diag)) break;  // one error per kernel
  }
  // The API's builds first (specialization i is build i), then the other
  // computed values; `group` follows the move.
  std::vector<size_t> order(builds.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](size_t i) { return builds[i].api; });
  std::vector<size_t> new_index(builds.size());
  std::vector<Specialization> out;
  for (size_t i : order) {
    new_index[i] = out.size();
    out.push_back(std::move(builds[i]));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].group = new_index[out[i].group];
    out[i].base = i;
  }
  CheckCollisions(pkg, out, diag);
  for (size_t i = 0, n = out.size(); i < n; ++i) {
    for (unsigned index : VariantsOf(*out[i].kernel)) {
      Specialization variant = out[i];
      variant.aligned = index & 1;
      variant.narrow = index & 2;
      variant.api = false;
      variant.base = i;
      out.push_back(std::move(variant));
    }
  }
  return out;
}

}  // namespace kpack
