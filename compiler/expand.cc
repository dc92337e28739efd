#include "expand.h"

#include <map>

namespace kpack {
namespace {

std::string NamePart(const Constexpr& c, const ConstexprValue& v) {
  switch (c.kind) {
    case ConstexprKind::kDtype:
      return c.tag + std::string(Info(v.dtype).manifest);
    case ConstexprKind::kBool:
      return v.integer ? c.tag : "no" + c.tag;
    case ConstexprKind::kInt:
      break;
  }
  // A '-' cannot appear in a C identifier: spell -4 as m4.
  return c.tag + (v.integer < 0 ? "m" + std::to_string(-v.integer) : std::to_string(v.integer));
}

bool SameValue(const ConstexprValue& a, const ConstexprValue& b) {
  return a.integer == b.integer && a.dtype == b.dtype;
}

bool Excluded(const Kernel& k, const std::vector<ConstexprValue>& values) {
  for (const Exclusion& ex : k.exclusions) {
    bool all = true;
    for (const auto& [index, value] : ex.matches) all = all && SameValue(values[index], value);
    if (all) return true;
  }
  return false;
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
  while (true) {
    std::vector<ConstexprValue> values;
    for (size_t i = 0; i < k.constexprs.size(); ++i) values.push_back(k.constexprs[i].values[odometer[i]]);
    if (!Excluded(k, values)) {
      Specialization s;
      s.kernel = &k;
      s.name = k.name;
      for (size_t i = 0; i < values.size(); ++i) s.name += "_" + NamePart(k.constexprs[i], values[i]);
      s.values = std::move(values);
      s.launcher = pkg.prefix + "_" + s.name;
      // Triton names the kernel after the Python function; kpack wraps CUDA
      // templates in an extern "C" kernel of its own name.
      s.symbol = k.language == Language::kTriton ? k.entry : "kpack_" + s.launcher;
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
  }
  for (const Specialization& s : specs)
    if (!s.IsVariant()) claim(s.launcher, "specialization " + s.Describe() + " of '" + s.kernel->name + "'", s.kernel->loc);
}

}  // namespace

ExprBindings BindingsFor(const Specialization& s) {
  ExprBindings b;
  b.constant = [&s](const std::string& name) -> std::optional<int64_t> {
    const Kernel& k = *s.kernel;
    for (size_t i = 0; i < k.constexprs.size(); ++i)
      if (k.constexprs[i].name == name && k.constexprs[i].kind != ConstexprKind::kDtype) return s.values[i].integer;
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

std::string ValueText(const Constexpr& c, const ConstexprValue& v) {
  switch (c.kind) {
    case ConstexprKind::kDtype: return std::string(Info(v.dtype).manifest);
    case ConstexprKind::kBool: return v.integer ? "true" : "false";
    case ConstexprKind::kInt: break;
  }
  return std::to_string(v.integer);
}

std::string Specialization::Describe() const {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += kernel->constexprs[i].name + "=" + ValueText(kernel->constexprs[i], values[i]);
  }
  return IsVariant() ? out + "; " + VariantName() + " variant" : out;
}

std::string Specialization::VariantName() const {
  if (aligned && narrow) return "aligned i32";
  return aligned ? "aligned" : narrow ? "i32" : "";
}

std::string Specialization::NameWithVariant() const {
  return IsVariant() ? name + " (" + VariantName() + " variant)" : name;
}

std::string Specialization::Stem() const {
  return name + (aligned ? ".aligned" : "") + (narrow ? ".i32" : "");
}

int Specialization::Divisibility(const Param& p) const {
  return p.divisibility_auto && !aligned ? 0 : p.divisibility;
}

ParamType Specialization::TypeOf(const Param& p) const {
  ParamType t = p.type;
  if (narrow && p.width_auto) t.scalar = Scalar::kI32;
  return t;
}

std::vector<Specialization> Expand(const Package& pkg, Diagnostics& diag) {
  std::vector<Specialization> out;
  for (const Kernel& k : pkg.kernels) {
    uint64_t size = ProductSize(k, pkg.max_specializations);
    if (size == 0 || size > pkg.max_specializations) {
      diag.Error(k.loc, "kernel '" + k.name + "' expands to more than " +
                            std::to_string(pkg.max_specializations) +
                            " specializations (max_specializations in the package file)");
      continue;
    }
    size_t before = out.size();
    ExpandKernel(pkg, k, out);
    if (out.size() == before) diag.Error(k.loc, "every specialization of kernel '" + k.name + "' is excluded");
  }
  CheckCollisions(pkg, out, diag);
  for (size_t i = 0, n = out.size(); i < n; ++i) {
    const bool aligned = out[i].kernel->HasAlignedVariant();
    const bool narrow = out[i].kernel->HasNarrowVariant();
    for (unsigned index = 1; index < 4; ++index) {
      if ((index & 1 && !aligned) || (index & 2 && !narrow)) continue;
      Specialization variant = out[i];
      variant.aligned = index & 1;
      variant.narrow = index & 2;
      variant.base = i;
      out.push_back(std::move(variant));
    }
  }
  return out;
}

}  // namespace kpack
