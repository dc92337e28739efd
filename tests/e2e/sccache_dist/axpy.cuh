// y[i] = a * x[i] + y[i].
#pragma once
#include <cuda_fp16.h>
#include <stdint.h>

template <typename T>
__device__ __forceinline__ void axpy(const T* x, T* y, float a, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = T(a * float(x[i]) + float(y[i]));
}
