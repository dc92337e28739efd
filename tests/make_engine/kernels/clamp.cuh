// The plain-Make engine's kernel: out[i] = min(max(x[i], lo), hi).
#pragma once
#include <cuda_fp16.h>
#include <stdint.h>

template <typename T>
__device__ __forceinline__ void clamp(const T* x, T* out, float lo, float hi, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = T(fminf(fmaxf(float(x[i]), lo), hi));
}
