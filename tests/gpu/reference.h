// reference.h - CPU references for the bundled kernels, in double precision,
// and the host-side element conversions the GPU test needs.  Plain C++17, no
// CUDA: tests/gpu/reference_test.cc checks them on hand-computed cases.
#ifndef KPACK_TESTS_GPU_REFERENCE_H
#define KPACK_TESTS_GPU_REFERENCE_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kref {

// ---- Element types ----------------------------------------------------------

enum class DType { F32, F16, BF16 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "f32", "f16", "bf16" (manifest spelling)

// IEEE binary16 and bfloat16 from/to fp32, rounding to nearest even; NaN
// stays NaN, overflow gives infinity.
uint16_t f32_to_f16_bits(float f);
float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_bf16_bits(float f);
float bf16_bits_to_f32(uint16_t b);

// Element i of a buffer of dtype t: store v rounded to t, or load as double.
void encode(DType t, double v, void* buf, size_t i);
double decode(DType t, const void* buf, size_t i);
// v after a round trip through t.
double round_to(DType t, double v);

// |got - want| <= atol + rtol * |want|.  NaN never passes (not even against
// a NaN reference: the references never expect NaN where the test looks);
// infinities must match exactly.
bool close(double got, double want, double rtol, double atol);

// ---- Kernels ----------------------------------------------------------------

// GIoU of one (left, top, right, bottom) box pair, the formula in
// templates/giou_loss.cuh: giou where target bottom > 0, else 0.
struct Giou {
  double giou;
  uint8_t valid;
};
Giou giou(const double pred[4], const double target[4]);

// Expected contents of a packed ragged mask buffer of `size` elements:
// 1 allowed, 0 masked, -1 not covered by any request (must stay untouched).
// Requests with q_len <= 0 or kv_len <= 0 cover nothing.
std::vector<int8_t> mask_fill(const std::vector<int32_t>& q_len, const std::vector<int32_t>& kv_len,
                              const std::vector<int64_t>& offsets, bool causal, size_t size);

// out[i] = exp(x[i] - max) / sum exp(x - max) for i < n.
void softmax(const double* x, int64_t n, double* out);

// logsumexp(x[0..n)) - x[target]; 0 when target == ignore_index; NaN when
// target is otherwise outside [0, n).
double cross_entropy(const double* x, int64_t n, int64_t target, int64_t ignore_index);

}  // namespace kref

#endif  // KPACK_TESTS_GPU_REFERENCE_H
