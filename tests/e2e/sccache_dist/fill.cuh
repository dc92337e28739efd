// out[i] = V.
#pragma once
#include <stdint.h>

template <int V>
__device__ __forceinline__ void fill(float* out, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = float(V);
}
