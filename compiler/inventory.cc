#include "inventory.h"

#include "cuda_instance.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "expr.h"
#include "fs_util.h"
#include "json_util.h"
#include "triton.h"
#include "tuning_reader.h"

namespace kpack {
namespace {

namespace json = llvm::json;

json::Array ArchNames(const std::vector<Arch>& archs) {
  json::Array out;
  for (const Arch& a : archs) out.push_back(a.Name());
  return out;
}

// The last non-empty line of `nvcc --version`: "Build cuda_13.0.r13.0/...".
std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of("\r\n");
  if (end == std::string::npos) return "";
  size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin == std::string::npos ? 0 : begin + 1));
}

// A unit's flags without the -I of the kernel's directory (a path relative
// to wherever the build runs).
json::Array PortableFlags(const Unit& u) {
  json::Array out;
  for (const std::string& f : u.flags)
    if (f.rfind("-I", 0) != 0) out.push_back(f);
  return out;
}

json::Object UnitJson(const Unit& u, const CompiledUnit& c, const UnitFacts& f) {
  json::Object o{{"arch", u.ptx ? "compute_" + std::to_string(u.arch.number) : u.arch.Name()},
                 {"kind", u.ptx ? "ptx" : "sass"},
                 {"size", static_cast<int64_t>(c.binary.size())},
                 {"blake3", HashHex(c.binary)}};
  if (u.ptx) return o;
  o["registers"] = static_cast<int64_t>(f.registers);
  o["static_shared_bytes"] = static_cast<int64_t>(f.static_shared_bytes);
  o["local_bytes"] = static_cast<int64_t>(f.local_bytes);
  o["max_threads"] = static_cast<int64_t>(f.max_threads);
  o["debug_code"] = f.debug_code;
  if (u.triton) {
    // The pipelining depth it was compiled with: it sets Triton's shared
    // memory, so a reader comparing dynamic_shared_bytes needs it.
    o["num_stages"] = u.spec->kernel->NumStages(u.spec->values);
    std::string error;
    if (std::optional<TritonMeta> meta = ParseTritonMeta(c.meta, &error)) {
      o["dynamic_shared_bytes"] = static_cast<int64_t>(meta->shared);
      o["num_warps"] = static_cast<int64_t>(meta->num_warps);
      // What a launch needs besides its arguments: clusters, the runtime's
      // scratch (bytes per CTA; docs/runtime.md sizes a workspace from
      // them) and each descriptor's TMA layout.
      o["num_ctas"] = static_cast<int64_t>(meta->num_ctas);
      o["global_scratch"] = json::Object{{"bytes_per_cta", static_cast<int64_t>(meta->global_scratch.size)},
                                         {"align", static_cast<int64_t>(meta->global_scratch.align)}};
      o["profile_scratch"] = json::Object{{"bytes_per_cta", static_cast<int64_t>(meta->profile_scratch.size)},
                                          {"align", static_cast<int64_t>(meta->profile_scratch.align)}};
      json::Array descs;
      for (const DescLayout& d : meta->descs) {
        json::Array box;
        for (uint32_t v : d.box) box.push_back(static_cast<int64_t>(v));
        descs.push_back(json::Object{{"data_type", static_cast<int64_t>(d.data_type)},
                                     {"elem_bytes", static_cast<int64_t>(d.elem_bytes)},
                                     {"box", std::move(box)},
                                     {"swizzle", static_cast<int64_t>(d.swizzle)}});
      }
      o["tensordesc"] = std::move(descs);
    }
  } else {
    o["flags"] = PortableFlags(u);
  }
  return o;
}

// One measured shape of a table: its key values, each candidate's time in
// nanoseconds, the best.
json::Object ResultJson(const std::vector<int64_t>& at, const std::vector<std::pair<size_t, double>>& ranking,
                        const TunedKernel& tk) {
  json::Array shape;
  for (int64_t v : at) shape.push_back(v);
  json::Object ns;
  for (const auto& [candidate, us] : ranking)
    ns[tk.labels[candidate]] = static_cast<int64_t>(std::llround(std::min(us * 1000, 9e18)));
  json::Object result{{"shape", std::move(shape)}, {"ns", std::move(ns)}};
  result["best"] = ranking.empty() ? json::Value(nullptr) : json::Value(tk.labels[ranking[0].first]);
  return result;
}

// The decision tables of `k` (docs/tuning.md): its grid, then per tuning
// file that tuned it and combination, each shape's best and every
// candidate's time in nanoseconds (integers: a double such as 2.91 prints
// as 2.9100000000000001); tunings dropped as stale are listed apart.
json::Object TuningJson(const Package& pkg, const Kernel& k) {
  json::Object shapes;
  json::Array key, tuned, tables, stale;
  for (const TuneAxis& a : k.tune->key) {
    key.push_back(a.param);
    json::Array values;
    for (int64_t v : a.values) values.push_back(v);
    shapes[a.param] = std::move(values);
  }
  for (const Constexpr& c : k.constexprs)
    if (c.Auto()) tuned.push_back(c.name);
  for (const TuningFile& file : pkg.tunings)
    for (const TunedKernel& tk : file.kernels) {
      if (tk.kernel != k.name) continue;
      json::Object from{{"file", file.listed}, {"gpu", file.gpu}, {"sm", file.sm}};
      if (tk.stale) {
        stale.push_back(std::move(from));
        continue;
      }
      for (const TunedTable& t : tk.tables) {
        json::Object table = from;
        json::Object combo;
        const std::vector<size_t> axes = ForAxes(k);
        for (size_t j = 0; j < axes.size() && j < t.combo.size(); ++j)
          combo[k.constexprs[axes[j]].name] = ValueText(k.constexprs[axes[j]], t.combo[j]);
        table["for"] = std::move(combo);
        if (t.unaligned) table["variant"] = "unaligned";
        json::Array results, probes;
        for (size_t cell = 0; cell < t.ranking.size(); ++cell)
          results.push_back(ResultJson(GridPoint(k.tune->key, cell), t.ranking[cell], tk));
        for (const TunedProbe& p : t.probes) probes.push_back(ResultJson(p.at, p.ranking, tk));
        if (!probes.empty()) table["probes"] = std::move(probes);
        table["results"] = std::move(results);
        tables.push_back(std::move(table));
      }
    }
  json::Object out{{"key", std::move(key)}, {"shapes", std::move(shapes)}, {"tuned", std::move(tuned)},
                   {"tables", std::move(tables)}};
  if (!stale.empty()) out["stale"] = std::move(stale);
  return out;
}

}  // namespace

std::string GenerateInventory(const InventoryInput& in) {
  const Package& pkg = *in.package;
  const Plan& plan = *in.plan;
  // Units per specialization, in plan order.
  std::map<const Specialization*, json::Array> units;
  for (size_t i = 0; i < plan.units.size(); ++i) {
    const Unit& u = plan.units[i];
    units[u.spec].push_back(UnitJson(u, (*in.compiled)[i], (*in.facts)[i]));
  }
  std::map<const Kernel*, json::Array> specs_of;
  int64_t total_fatbin = 0, debug_specs = 0;
  for (const PackedBlob& b : *in.blobs) total_fatbin += static_cast<int64_t>(b.fatbin.size());
  for (const PackedSpec& p : *in.packed) {
    const Specialization& s = *p.spec;
    const PackedBlob& blob = (*in.blobs)[p.blob];
    const Kernel& k = *s.kernel;
    json::Object constexprs;
    for (size_t c = 0; c < k.constexprs.size(); ++c) constexprs[k.constexprs[c].name] = ValueText(k.constexprs[c], s.values[c]);
    json::Object spec{
        {"name", s.name},
        {"launcher", s.launcher},
        {"symbol", s.symbol},
        {"entry", Demangle(s.symbol)},
        {"constexprs", std::move(constexprs)},
        {"build_mode", p.build_mode},
        {"sass_archs", ArchNames(p.sass_archs)},
        {"ptx_archs", ArchNames(p.ptx_archs)},
        // Specializations compiled in one batch share its fatbin.
        {"fatbin", json::Object{{"file", blob.stem + ".fatbin"},
                                {"size", static_cast<int64_t>(blob.fatbin.size())},
                                {"blake3", HashHex(blob.fatbin)}}},
        {"units", std::move(units[&s])}};
    // What sets a build apart from the API's build of its specialization
    // (computed values, variants): several builds share one name.
    if (std::string label = s.BuildLabel(); !label.empty()) spec["build"] = label;
    specs_of[&k].push_back(std::move(spec));
    debug_specs += p.build_mode == "debug" ? 1 : 0;
  }
  json::Array kernels;
  for (const Kernel& k : pkg.kernels) {
    json::Object o{{"name", k.name},
                   {"language", k.language == Language::kTriton ? "triton" : "cuda"},
                   {"source", k.source_text},
                   {"entry", k.entry},
                   {"build_mode", k.BuildMode()},
                   {"allow_debug", k.allow_debug},
                   {"archs", ArchNames(k.BuildArchs())},
                   {"ptx", k.ptx},
                   {"specializations", std::move(specs_of[&k])}};
    if (k.language == Language::kCuda) {
      o["nvcc_flags"] = JsonStrings(k.nvcc_flags);
      // The dynamic shared memory each launch asks for, as the manifest
      // wrote it (it may name runtime parameters, so it is not a number).
      o["launch_shared_mem"] = FormatExpr(k.launch.shared_mem);
    }
    if (k.debug) o["debug_reason"] = k.debug_reason;
    // The launchers' parameters, as an FFI binding (tests/gpu's corpus
    // harness) needs them: C type text as the manifest wrote it.
    json::Array params;
    for (const Param& p : k.params) {
      json::Object param{{"name", p.name}, {"type", p.type_text}};
      if (p.launch_only) param["launch_only"] = true;
      // How builds specialize it (docs/manifest.md), after the JIT defaults.
      if (p.divisibility) param["divisibility"] = p.divisibility_auto ? "auto" : "16";
      if (p.width_auto) param["width"] = "auto";
      if (p.equal_to_1) param["equal_to_1"] = "auto";
      params.push_back(std::move(param));
    }
    o["params"] = std::move(params);
    json::Object computed;
    for (const Constexpr& c : k.constexprs)
      if (c.Computed()) computed[c.name] = FormatExpr(*c.rule);
    if (!computed.empty()) o["computed"] = std::move(computed);
    // The C entry points besides the typed launchers (each specialization's
    // "launcher"): the dispatcher, and the auto dispatcher with its rules.
    o["dispatcher"] = pkg.prefix + "_" + k.name;
    json::Object rules;
    for (const Constexpr& c : k.constexprs)
      if (c.Auto()) rules[c.name] = FormatExpr(*c.auto_rule);
    if (!rules.empty())
      o["auto"] = json::Object{{"dispatcher", pkg.prefix + "_" + k.name + "_auto"}, {"rules", std::move(rules)}};
    if (!k.triton.autotune_key.empty()) o["autotune_key"] = JsonStrings(k.triton.autotune_key);
    // `tune:` and what the tuning files measured: the decision tables.
    if (k.tune) o["tuning"] = TuningJson(pkg, k);
    kernels.push_back(std::move(o));
  }
  json::Object root{
      {"format", kInventoryFormat},
      {"package", pkg.name},
      {"prefix", pkg.prefix},
      {"manifest", in.manifest_label},
      {"kpack_version", in.kpack_version},
      {"abi_version", in.abi_version},
      {"build_mode", debug_specs > 0 ? "debug" : "release"},
      {"toolchain", json::Object{{"nvcc", LastLine(in.nvcc_version)}, {"triton", LastLine(in.triton_version)}}},
      {"compress_mode", in.compress_mode.empty() ? "default" : in.compress_mode},
      {"num_specializations", static_cast<int64_t>(in.packed->size())},
      {"num_fatbins", static_cast<int64_t>(in.blobs->size())},
      {"num_debug_specializations", debug_specs},
      {"num_units", static_cast<int64_t>(plan.units.size())},
      {"fatbin_bytes", total_fatbin},
      {"kernels", std::move(kernels)}};
  return JsonText(std::move(root), 2);
}

}  // namespace kpack
