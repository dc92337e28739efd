#include "triton.h"

#include <filesystem>

#include "json_util.h"


namespace kpack {
namespace {

std::string TritonScalar(Scalar s) {
  switch (s) {
    case Scalar::kF32: return "fp32";
    case Scalar::kF16: return "fp16";
    case Scalar::kBF16: return "bf16";
    case Scalar::kF64: return "fp64";
    case Scalar::kBool: return "i1";
    default: return std::string(Info(s).manifest);  // i8..i64, u8..u64
  }
}

// num_ctas and the scratch sizes: absent in metadata of kernels that need
// none of them (the defaults).
bool ParseClusterAndScratch(const llvm::json::Object& o, TritonMeta& meta, std::string* error) {
  const int64_t ctas = o.getInteger("num_ctas").value_or(1);
  if (ctas < 1 || ctas > 16) {
    *error = "Triton metadata has num_ctas " + std::to_string(ctas) + " (expected 1 to 16)";
    return false;
  }
  meta.num_ctas = static_cast<uint32_t>(ctas);
  for (auto [key, into] : {std::pair{"global_scratch", &meta.global_scratch},
                           std::pair{"profile_scratch", &meta.profile_scratch}}) {
    const llvm::json::Array* a = o.getArray(key);
    if (!a) continue;
    std::optional<int64_t> size = a->size() == 2 ? (*a)[0].getAsInteger() : std::nullopt;
    std::optional<int64_t> align = a->size() == 2 ? (*a)[1].getAsInteger() : std::nullopt;
    if (!size || !align || *size < 0 || *size > INT32_MAX || *align < 1 || *align > 4096 || (*align & (*align - 1))) {
      *error = std::string("Triton metadata has a malformed ") + key + " (expected [bytes per CTA, power-of-two "
               "alignment])";
      return false;
    }
    *into = TritonScratch{static_cast<uint32_t>(*size), static_cast<uint32_t>(*align)};
  }
  return true;
}

// `tensordesc`: the TMA layout Triton chose for each descriptor param.
bool ParseDescs(const llvm::json::Object& o, TritonMeta& meta, std::string* error) {
  const llvm::json::Array* descs = o.getArray("tensordesc");
  for (size_t i = 0; descs && i < descs->size(); ++i) {
    const llvm::json::Object* d = (*descs)[i].getAsObject();
    std::optional<int64_t> type = d ? d->getInteger("data_type") : std::nullopt;
    std::optional<int64_t> bytes = d ? d->getInteger("elem_bytes") : std::nullopt;
    std::optional<int64_t> swizzle = d ? d->getInteger("swizzle") : std::nullopt;
    const llvm::json::Array* box = d ? d->getArray("box") : nullptr;
    DescLayout l;
    // CUtensorMapDataType: UINT8 (0) .. TFLOAT32_FTZ (12), what the runtime encodes.
    bool ok = type && bytes && swizzle && box && *type >= 0 && *type <= 12 && *bytes >= 1 && *bytes <= 8 &&
              *swizzle >= 0 && *swizzle <= 3 && !box->empty() && box->size() <= 5;
    for (size_t j = 0; ok && j < box->size(); ++j) {
      std::optional<int64_t> v = (*box)[j].getAsInteger();
      ok = v && *v >= 1 && *v <= 256;
      if (ok) l.box.push_back(static_cast<uint32_t>(*v));
    }
    if (!ok) {
      *error = "Triton metadata has a malformed tensordesc entry " + std::to_string(i);
      return false;
    }
    l.data_type = static_cast<uint32_t>(*type);
    l.elem_bytes = static_cast<uint32_t>(*bytes);
    l.swizzle = static_cast<uint32_t>(*swizzle);
    meta.descs.push_back(l);
  }
  return true;
}

}  // namespace

std::string TritonType(const Specialization& s, const ParamType& t) {
  Scalar scalar = t.scalar;
  const Kernel& k = *s.kernel;
  for (size_t i = 0; i < k.constexprs.size() && !t.dtype_constexpr.empty(); ++i)
    if (k.constexprs[i].name == t.dtype_constexpr) scalar = s.values[i].dtype;
  return (t.is_pointer ? "*" : "") + TritonScalar(scalar);
}

std::string TritonRequest(const Specialization& s, const Arch& arch) {
  const Kernel& k = *s.kernel;
  llvm::json::Object constexprs, options;
  for (size_t i = 0; i < k.constexprs.size(); ++i) {
    const Constexpr& c = k.constexprs[i];
    const ConstexprValue& v = s.values[i];
    llvm::json::Object& into = c.option ? options : constexprs;
    switch (c.kind) {
      case ConstexprKind::kDtype: continue;  // dtypes become pointer types
      case ConstexprKind::kBool: into[c.name] = v.integer != 0; break;
      case ConstexprKind::kInt: into[c.name] = v.integer; break;
      // As text: a JSON number 3 would reach Python as the int 3.
      case ConstexprKind::kFloat: into[c.name] = llvm::json::Object{{"float", v.text}}; break;
      case ConstexprKind::kStr: into[c.name] = v.text; break;
    }
  }
  // maxnreg 0: an autotune config that sets none (no limit).
  if (const llvm::json::Value* maxnreg = options.get("maxnreg"); maxnreg && maxnreg->getAsInteger() == 0)
    options.erase("maxnreg");
  if (!options.get("num_warps")) options["num_warps"] = k.NumWarps(s.values);
  if (!options.get("num_stages")) options["num_stages"] = k.NumStages(s.values);
  llvm::json::Array params;
  for (const Param& p : k.params) {
    if (p.launch_only) continue;
    llvm::json::Object param{{"name", p.name},
                             {"triton_type", p.tensordesc ? TritonDescType(s, p) : TritonType(s, s.TypeOf(p))}};
    if (int d = s.Divisibility(p)) param["divisibility"] = d;
    if (s.aligned && p.equal_to_1) param["equal_to_1"] = true;  // the constant 1, as the JIT has it
    params.push_back(std::move(param));
  }
  llvm::json::Object assume;
  for (const auto& [name, literal] : k.assume) {
    llvm::Expected<llvm::json::Value> value = llvm::json::parse(literal);
    if (value) assume[name] = std::move(*value);
    else llvm::consumeError(value.takeError());
  }
  std::vector<std::string> python_path;
  std::error_code ec;
  for (const std::string& dir : k.python_path)
    python_path.push_back(std::filesystem::absolute(dir, ec).lexically_normal().generic_string());
  // source_name is what Triton records in line info: root-relative, so the
  // cubin does not depend on where the build runs (docs/shipping.md).
  llvm::json::Object request{{"source", k.source_path},
                             {"source_name", k.source_name},
                             {"entry", k.entry},
                             {"arch", arch.number},
                             {"options", std::move(options)},
                             {"constexprs", std::move(constexprs)},
                             {"params", std::move(params)}};
  if (!python_path.empty()) request["python_path"] = JsonStrings(python_path);
  if (!assume.empty()) request["assume"] = std::move(assume);
  if (k.execute_module) request["load"] = "execute";
  if (k.debug) request["debug"] = true;  // Triton's debug=True (debug_guard.h)
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::json::Value(std::move(request));
  os.flush();
  return out;
}

std::optional<TritonMeta> ParseTritonMeta(const std::string& json, std::string* error) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(json);
  if (!value) {
    *error = "malformed Triton metadata: " + llvm::toString(value.takeError());
    return std::nullopt;
  }
  const llvm::json::Object* o = value->getAsObject();
  std::optional<llvm::StringRef> name = o ? o->getString("name") : std::nullopt;
  std::optional<int64_t> shared = o ? o->getInteger("shared") : std::nullopt;
  std::optional<int64_t> warps = o ? o->getInteger("num_warps") : std::nullopt;
  std::optional<int64_t> hidden = o ? o->getInteger("hidden_pointer_params") : std::nullopt;
  if (!name || !shared || !warps || !hidden || *shared < 0 || *warps < 1 || *warps > 32 || *hidden < 0 ||
      *hidden > 8) {
    *error = "Triton metadata lacks name, shared, num_warps or hidden_pointer_params";
    return std::nullopt;
  }
  TritonMeta meta;
  meta.name = name->str();
  meta.shared = static_cast<uint32_t>(*shared);
  meta.num_warps = static_cast<uint32_t>(*warps);
  meta.hidden_pointer_params = static_cast<uint32_t>(*hidden);
  meta.inputs = JsonGetStrings(*o, "inputs");
  if (!ParseClusterAndScratch(*o, meta, error) || !ParseDescs(*o, meta, error)) return std::nullopt;
  return meta;
}

std::string ProbeTriton(ToolRunner& runner, TritonTools& tools) {
  ToolResult r = runner.Run({tools.python, tools.helper, "version"});
  if (r.ok()) {
    tools.version = r.output;
    return "";
  }
  return TritonMissingMessage(!r.spawn_error.empty() ? r.spawn_error : r.output);
}

std::string TritonVersionNumber(const std::string& probed) {
  const std::string prefix = "triton ";
  if (probed.rfind(prefix, 0) != 0) return "";
  size_t end = probed.find_first_of(" \t\r\n", prefix.size());
  return probed.substr(prefix.size(), end == std::string::npos ? std::string::npos : end - prefix.size());
}

std::string TritonMissingMessage(std::string why) {
  while (!why.empty() && why.back() == '\n') why.pop_back();
  return std::string("Triton kernels need Python 3 with Triton ") + kTritonVersions + " at build time (" + why +
         ")\n  install it with: python3 -m pip install triton==3.6.0 (or run .ci/setup, which makes .venv), and "
         "name that Python with --python (Meson: -Dpython)";
}

}  // namespace kpack
