#include "tensordesc.h"

#include <algorithm>

#include "codegen_text.h"
#include "kernel_reader.h"
#include "triton.h"
#include "yaml_reader.h"

namespace kpack {
namespace {

// Swizzle spellings, indexed by CUtensorMapSwizzle.
constexpr const char* kSwizzles[] = {"none", "32B", "64B", "128B"};

std::string Ints(const std::vector<uint32_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return "[" + out + "]";
}

}  // namespace

bool IsTensorDescType(const std::string& text, bool* is_const) {
  std::string t = text;
  *is_const = t.rfind("const ", 0) == 0;
  if (*is_const) t = t.substr(6);
  while (!t.empty() && t.front() == ' ') t.erase(t.begin());
  return t == "tensordesc";
}

bool ReadTensorDesc(FileReader& r, const YAML::Node& item, const Kernel& k, bool is_const, Param& p) {
  TensorDesc d;
  d.loc = r.Loc(item);
  p.type.is_pointer = true;
  p.type.is_const = is_const;
  YAML::Node dtype = FileReader::Get(item, "dtype");
  YAML::Node block = FileReader::Get(item, "block");
  if (!dtype.IsDefined() || !block.IsDefined()) {
    r.Error(item, "tensordesc param '" + p.name + "' needs dtype and block");
    return false;
  }
  std::optional<std::string> element = r.String(dtype, "dtype");
  if (!element) return false;
  if (const Constexpr* c = k.FindConstexpr(*element); c && c->kind == ConstexprKind::kDtype) {
    p.type.dtype_constexpr = *element;
  } else if (std::optional<Scalar> s = ParseScalar(*element); s && IsDtype(*s)) {
    p.type.scalar = *s;
  } else {
    r.Error(dtype, "dtype '" + *element + "' of tensordesc param '" + p.name +
                       "' is neither a dtype constexpr nor one of: " + std::string(DtypeList()));
    return false;
  }
  d.block_loc = r.Loc(block);
  if (!block.IsSequence() || block.size() == 0 || block.size() > 5) {
    r.Error(block, "block of tensordesc param '" + p.name + "' must be a list of 1 to 5 expressions");
    return false;
  }
  for (const YAML::Node& dim : block)
    if (std::optional<Expr> e = ReadExpr(r, dim, "block")) d.block.push_back(*e);
  if (d.block.size() != block.size()) return false;
  if (YAML::Node padding = FileReader::Get(item, "padding"); padding.IsDefined()) {
    d.padding_loc = r.Loc(padding);
    std::optional<std::string> v = r.String(padding, "padding");
    if (!v || (*v != "zero" && *v != "nan")) {
      r.Error(padding, "padding must be zero or nan (what a load outside the tensor reads)");
      return false;
    }
    d.padding_nan = *v == "nan";
  }
  if (YAML::Node swizzle = FileReader::Get(item, "swizzle"); swizzle.IsDefined()) {
    d.swizzle_loc = r.Loc(swizzle);
    std::string v = swizzle.IsScalar() ? swizzle.Scalar() : "";
    auto it = std::find(std::begin(kSwizzles), std::end(kSwizzles), v);
    if (it == std::end(kSwizzles)) {
      r.Error(swizzle, "swizzle must be none, 32B, 64B or 128B");
      return false;
    }
    d.swizzle = static_cast<int>(it - std::begin(kSwizzles));
  }
  p.tensordesc = std::move(d);
  return true;
}

bool HasTensorDesc(const Kernel& k) {
  return std::any_of(k.params.begin(), k.params.end(), [](const Param& p) { return p.tensordesc.has_value(); });
}

void CheckTensorDescs(Diagnostics& diag, const Kernel& k) {
  auto lookup = [&k](const std::string& name) { return LookUpName(k, name); };
  for (const Param& p : k.params) {
    if (!p.tensordesc) continue;
    const TensorDesc& d = *p.tensordesc;
    for (const Expr& e : d.block) CheckExpr(e, lookup, false, diag);  // compiled in: constexprs only
    for (const SourceLoc& loc : {p.divisibility_loc, p.width_loc, p.equal_to_1_loc})
      if (loc.line > 0)
        diag.Error(loc, "'" + p.name + "' is a tensordesc: divisibility, width and equal_to_1 do not apply");
    if (p.launch_only) diag.Error(p.loc, "tensordesc param '" + p.name + "' cannot be launch-only");
    // The launcher's C parameters p, p_shape and p_strides share the
    // dispatcher's namespace with the constexprs and params.
    for (const std::string& name : ParamArgNames(p))
      if (name != p.name && (k.FindParam(name) || k.FindConstexpr(name)))
        diag.Error(p.loc, "tensordesc param '" + p.name + "' takes the C parameter '" + name +
                              "', which is also the name of a param or constexpr; rename one");
    if (d.padding_nan && p.type.dtype_constexpr.empty() && Info(p.type.scalar).is_integer)
      diag.Error(d.padding_loc, "padding: nan needs a floating-point dtype ('" + p.name + "' is " +
                                    std::string(Info(p.type.scalar).manifest) + ")");
    if (k.language == Language::kCuda && d.swizzle < 0)
      diag.Error(d.loc, "tensordesc param '" + p.name + "' of a CUDA kernel needs swizzle (none, 32B, 64B or 128B): "
                        "the kernel's shared-memory layout");
    if (k.language == Language::kTriton && d.swizzle >= 0)
      diag.Error(d.swizzle_loc, "swizzle applies to CUDA kernels only: Triton chooses the swizzle of '" + p.name +
                                    "' when it compiles the kernel");
    for (const Arch& a : k.archs)
      if (k.language == Language::kTriton && a.number < 90) {
        diag.Error(d.loc, "tensordesc param '" + p.name + "': Triton passes host tensor descriptors as TMA maps on "
                          "sm_90 and later only, and the kernel is built for " + a.Name() + "; list archs: from sm_90");
        break;
      }
  }
}

std::vector<int64_t> DescBlock(const Specialization& s, const Param& p) {
  std::vector<int64_t> out;
  ExprBindings b = BindingsFor(s);
  for (const Expr& e : p.tensordesc->block) out.push_back(EvaluateExpr(e, b).value_or(0));
  return out;
}

std::string TritonDescType(const Specialization& s, const Param& p) {
  std::string type = TritonType(s, s.TypeOf(p));  // "*bf16"
  std::string dims;
  for (int64_t v : DescBlock(s, p)) dims += (dims.empty() ? "" : ", ") + std::to_string(v);
  return "tensordesc<" + type.substr(1) + "[" + dims + "]>";
}

std::vector<std::string> ParamArgNames(const Param& p) {
  if (!p.tensordesc) return {p.name};
  return {p.name, p.name + "_shape", p.name + "_strides"};
}

std::vector<std::string> DescShapeParams(const Param& p) {
  std::string rank = std::to_string(p.tensordesc->Rank());
  return {"const int64_t " + p.name + "_shape[" + rank + "]", "const int64_t " + p.name + "_strides[" + rank + "]"};
}

std::vector<std::pair<uint32_t, uint32_t>> DescKernelSlots(const Param& p, bool triton) {
  std::vector<std::pair<uint32_t, uint32_t>> out = {{128, 64}};
  if (!triton) return out;
  out.insert(out.end(), p.tensordesc->Rank(), {4, 4});
  out.insert(out.end(), p.tensordesc->Rank(), {8, 8});
  return out;
}

uint32_t TensorMapDataType(Scalar s) {
  switch (s) {
    case Scalar::kU8: case Scalar::kI8: return 0;     // UINT8: bytes are bytes
    case Scalar::kU16: case Scalar::kI16: return 1;   // UINT16
    case Scalar::kU32: return 2;
    case Scalar::kI32: return 3;
    case Scalar::kU64: return 4;
    case Scalar::kI64: return 5;
    case Scalar::kF16: return 6;
    case Scalar::kF32: return 7;
    case Scalar::kF64: return 8;
    case Scalar::kBF16: return 9;
    case Scalar::kBool: break;
  }
  return 0;
}

DescLayout CudaDescLayout(const Specialization& s, const Param& p) {
  DescLayout l;
  Scalar scalar = codegen::ElementScalar(s, p.type);
  l.data_type = TensorMapDataType(scalar);
  l.elem_bytes = Info(scalar).size;
  // A value outside 1..256 (one no expression of the block gave: 0) is
  // CheckDescLayout's to report, so it must not wrap.
  for (int64_t v : DescBlock(s, p)) l.box.push_back(v < 0 || v > 65536 ? 0u : static_cast<uint32_t>(v));
  l.swizzle = static_cast<uint32_t>(std::max(p.tensordesc->swizzle, 0));
  return l;
}

std::string CheckDescLayout(const DescLayout& l, bool padding_nan, Scalar element) {
  if (padding_nan && Info(element).is_integer)
    return "padding: nan needs a floating-point dtype, and this build's is " + std::string(Info(element).manifest);
  for (uint32_t v : l.box)
    if (v < 1 || v > 256) return "its box " + Ints(l.box) + " has a dimension outside 1..256 (TMA's limit)";
  const uint32_t inner = l.box.empty() ? 0 : l.box.back() * l.elem_bytes;
  if (inner % 16 != 0)
    return "its box's inner dimension is " + std::to_string(inner) + " bytes, not a multiple of 16 (TMA needs 16)";
  const uint32_t span = l.swizzle == 0 ? 0 : 16u << l.swizzle;  // 32, 64, 128 bytes
  if (span != 0 && inner > span)
    return "its box's inner dimension is " + std::to_string(inner) + " bytes, wider than the " +
           std::to_string(span) + "-byte swizzle span";
  return "";
}

const char* SwizzleName(uint32_t swizzle) { return swizzle < 4 ? kSwizzles[swizzle] : "?"; }

std::vector<DescLayout> DescLayouts(const Specialization& s, const std::vector<DescLayout>& compiled) {
  if (s.kernel->language == Language::kTriton) return compiled;
  std::vector<DescLayout> out;
  for (const Param& p : s.kernel->params)
    if (p.tensordesc) out.push_back(CudaDescLayout(s, p));
  return out;
}

std::string DescLayoutText(const DescLayout& l) { return "box " + Ints(l.box) + ", swizzle " + SwizzleName(l.swizzle); }

}  // namespace kpack
