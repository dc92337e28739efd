// chevrons.cu - vector_add<float, 128> for the CUDA runtime path (<<<>>>) of
// kpack_launch_bench.
//
// The translation unit mirrors the one kpack generates for
// vector_add_f32_b128 (compiler/plan.cc, InstantiationSource): the same
// includes in the same order, the same extern "C" __global__ wrapper with
// the same __launch_bounds__, built with the same -O3 -std=c++17, so the
// two paths launch the same machine code and differ only in how the launch
// reaches the driver.  The kernel has its own name so that its host stub
// cannot be mistaken for anything kpack defines.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <type_traits>
#include "vector_add.cuh"

#include "chevrons.h"

static_assert(std::is_same<decltype(&vector_add<float, 128>),
                           void (*)(const float*, const float*, float*, int64_t)>::value,
              "vector_add<float, 128> must take (const float*, const float*, float*, int64_t)");

extern "C" __global__ void __launch_bounds__(128)
bench_vector_add_f32_b128(const float* x, const float* y, float* out, int64_t n) {
  vector_add<float, 128>(x, y, out, n);
}

// The grid is computed here, per call, because kpack's typed launcher also
// computes it per call: both variants pay for the same arithmetic.
extern "C" void bench_chevrons_vector_add_f32_b128(cudaStream_t stream, const float* x,
                                                   const float* y, float* out, int64_t n) {
  if (n <= 0) return;  // <<<0, ...>>> is an error; kpack launches nothing too
  const unsigned grid = static_cast<unsigned>((n + kChevronsPerBlock - 1) / kChevronsPerBlock);
  bench_vector_add_f32_b128<<<grid, kChevronsBlock, 0, stream>>>(x, y, out, n);
}

extern "C" cudaError_t bench_chevrons_vector_add_f32_b128_checked(cudaStream_t stream,
                                                                  const float* x, const float* y,
                                                                  float* out, int64_t n) {
  bench_chevrons_vector_add_f32_b128(stream, x, y, out, n);
  return cudaGetLastError();
}
