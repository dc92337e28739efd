// types.h - the scalar types a manifest can name, and how each is spelled
// in the manifest, in the generated C header and in CUDA C++.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kpack {

// Values of the dtypes match kpack_dtype in runtime/kpack.h (pinned).
enum class Scalar : uint8_t {
  kF32 = 1, kF16 = 2, kBF16 = 3, kF64 = 4,
  kI8 = 5, kI16 = 6, kI32 = 7, kI64 = 8,
  kU8 = 9, kU16 = 10, kU32 = 11, kU64 = 12,
  kBool = 13,  // a parameter type only, never a dtype value
};

struct ScalarInfo {
  Scalar scalar;
  std::string_view manifest;  // "f16"
  std::string_view c_type;    // "kpack_f16"
  std::string_view cuda_type; // "__half"
  std::string_view enumerator;// "KPACK_DTYPE_F16" ("" for bool)
  uint32_t size;              // bytes
  bool is_integer;            // usable in launch expressions
};

// Looks up a manifest spelling ("i64"); nullopt when unknown.
std::optional<Scalar> ParseScalar(std::string_view manifest_name);
const ScalarInfo& Info(Scalar s);
// The manifest spellings of every scalar, comma-separated, for messages.
std::string_view ScalarList();
// The manifest spellings allowed as dtype constexpr values.
std::string_view DtypeList();
inline bool IsDtype(Scalar s) { return s != Scalar::kBool; }

}  // namespace kpack
