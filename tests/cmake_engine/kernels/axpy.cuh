// The engine's CUDA kernel: y[i] = a * x[i] + y[i], ITEMS elements per
// thread (a tile size the manifest lists), accumulated in f32.
#pragma once
#include <cuda_fp16.h>
#include <stdint.h>

template <typename T, int ITEMS>
__device__ __forceinline__ void axpy(float a, const T* x, T* y, int64_t n) {
  const int64_t first = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * ITEMS;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int64_t i = first + k;
    if (i < n) y[i] = T(a * float(x[i]) + float(y[i]));
  }
}
