// tensordesc.h - `type: tensordesc` params: TMA descriptors of tensors
// (docs/manifest.md, "Tensor descriptors").  How a manifest spells one, the
// C parameters a launcher takes for it (base, shape, strides), what the
// kernel receives (a 128-byte CUtensorMap; Triton also the shape and
// strides), and the runtime's kpack_tensor_map_spec of its map.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "expand.h"
#include "model.h"

namespace YAML {
class Node;
}

namespace kpack {

class FileReader;

// The keys a tensordesc param may have besides name and type.
inline constexpr const char* kTensorDescKeys[] = {"dtype", "block", "padding", "swizzle"};

// Whether `text` is a tensordesc type ("tensordesc", "const tensordesc").
bool IsTensorDescType(const std::string& text, bool* is_const);

// Reads the tensordesc keys of param `item` into p.type (the base pointer:
// `dtype` behind a pointer) and p.tensordesc.  The block is checked against
// the constexprs later (CheckTensorDescs), when the kernel is whole.
bool ReadTensorDesc(FileReader& r, const YAML::Node& item, const Kernel& k, bool is_const, Param& p);

// The whole-kernel checks of its tensordesc params: block expressions over
// int constexprs only, the keys each language allows, and Hopper archs
// for Triton.
void CheckTensorDescs(Diagnostics& diag, const Kernel& k);

// Whether some param of `k` is a tensordesc.
bool HasTensorDesc(const Kernel& k);

// The block of `p` in specialization `s`, outermost first.
std::vector<int64_t> DescBlock(const Specialization& s, const Param& p);

// Triton's signature type of the param: "tensordesc<bf16[128, 64]>",
// spelled exactly as Python's str() of the block list.
std::string TritonDescType(const Specialization& s, const Param& p);

// The C names a launcher forwards for param `p`: {p} or, for a
// tensordesc, {p, p_shape, p_strides}.
std::vector<std::string> ParamArgNames(const Param& p);

// "const int64_t a_shape[2]", "const int64_t a_strides[2]": what follows
// the base pointer in a launcher's parameter list.
std::vector<std::string> DescShapeParams(const Param& p);

// The kernel parameters (size, alignment) `p` becomes: the 128-byte map,
// then, for Triton, rank i32 shapes and rank i64 strides.
std::vector<std::pair<uint32_t, uint32_t>> DescKernelSlots(const Param& p, bool triton);

// CUtensorMapDataType of a manifest scalar (CUDA kernels: kpack chooses).
uint32_t TensorMapDataType(Scalar s);

// One descriptor's TMA layout as the compile chose it (Triton) or the
// manifest said (CUDA): what kpack_tensor_map_spec holds.
struct DescLayout {
  uint32_t data_type = 0;
  uint32_t elem_bytes = 0;
  std::vector<uint32_t> box;  // outermost first
  uint32_t swizzle = 0;
  bool operator==(const DescLayout&) const = default;
};

// The layout of a CUDA kernel's tensordesc param (box = block).
DescLayout CudaDescLayout(const Specialization& s, const Param& p);

// What the driver would refuse in a descriptor of this layout on every
// launch, as a message ("" when nothing): a box dimension outside 1..256,
// an inner box that is not a multiple of 16 bytes or wider than the
// swizzle span, nan padding of an integer element.
std::string CheckDescLayout(const DescLayout& l, bool padding_nan, Scalar element);

// "none", "32B", "64B", "128B" for a CUtensorMapSwizzle; "?" beyond.
const char* SwizzleName(uint32_t swizzle);

// The TMA layout of each tensordesc param of `s`, in param order: `compiled`
// (what Triton chose, from the unit's metadata) for a Triton kernel, the
// manifest's (CudaDescLayout) for a CUDA kernel.
std::vector<DescLayout> DescLayouts(const Specialization& s, const std::vector<DescLayout>& compiled);

// "box [64, 64], swizzle 128B": for messages, comments and the inventory.
std::string DescLayoutText(const DescLayout& l);

}  // namespace kpack
