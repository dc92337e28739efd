#include "types.h"

#include <array>

namespace kpack {
namespace {

constexpr std::array<ScalarInfo, 13> kScalars = {{
    {Scalar::kF32, "f32", "float", "float", "KPACK_DTYPE_F32", 4, false},
    {Scalar::kF16, "f16", "kpack_f16", "__half", "KPACK_DTYPE_F16", 2, false},
    {Scalar::kBF16, "bf16", "kpack_bf16", "__nv_bfloat16", "KPACK_DTYPE_BF16", 2, false},
    {Scalar::kF64, "f64", "double", "double", "KPACK_DTYPE_F64", 8, false},
    {Scalar::kI8, "i8", "int8_t", "int8_t", "KPACK_DTYPE_I8", 1, true},
    {Scalar::kI16, "i16", "int16_t", "int16_t", "KPACK_DTYPE_I16", 2, true},
    {Scalar::kI32, "i32", "int32_t", "int32_t", "KPACK_DTYPE_I32", 4, true},
    {Scalar::kI64, "i64", "int64_t", "int64_t", "KPACK_DTYPE_I64", 8, true},
    {Scalar::kU8, "u8", "uint8_t", "uint8_t", "KPACK_DTYPE_U8", 1, true},
    {Scalar::kU16, "u16", "uint16_t", "uint16_t", "KPACK_DTYPE_U16", 2, true},
    {Scalar::kU32, "u32", "uint32_t", "uint32_t", "KPACK_DTYPE_U32", 4, true},
    {Scalar::kU64, "u64", "uint64_t", "uint64_t", "KPACK_DTYPE_U64", 8, true},
    {Scalar::kBool, "bool", "bool", "bool", "", 1, true},
}};

}  // namespace

std::optional<Scalar> ParseScalar(std::string_view name) {
  for (const ScalarInfo& info : kScalars)
    if (info.manifest == name) return info.scalar;
  return std::nullopt;
}

const ScalarInfo& Info(Scalar s) {
  // The array is ordered by enumerator value, starting at 1.
  return kScalars[static_cast<size_t>(s) - 1];
}

std::string_view ScalarList() {
  return "f32, f16, bf16, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool";
}

std::string_view DtypeList() {
  return "f32, f16, bf16, f64, i8, i16, i32, i64, u8, u16, u32, u64";
}

}  // namespace kpack
