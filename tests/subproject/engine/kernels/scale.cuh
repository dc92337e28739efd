// The engine's kernel: out[i] = alpha * x[i].
#pragma once
#include <cuda_fp16.h>
#include <stdint.h>

template <typename T>
__device__ __forceinline__ void scale(const T* x, T* out, float alpha, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = T(alpha * float(x[i]));
}
