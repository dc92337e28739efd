// smem_reverse.cuh - a test kernel that needs all of its dynamic shared
// memory: each block stages its `tile` elements in shared memory and writes
// them back reversed within the tile.  The output is right only if the
// launch had tile * sizeof(T) bytes of dynamic shared memory, so a launch
// above 48 KiB proves that the runtime raised the kernel's limit on the
// device (cuKernelSetAttribute) before launching.  Built only for
// tests/gpu/smem_check.cc; not a bundled kernel.
#pragma once

#include <stdint.h>

template <typename T>
__device__ __forceinline__ void smem_reverse(const T* in, T* out, int64_t n, int32_t tile) {
  extern __shared__ __align__(16) unsigned char smem_reverse_buffer[];
  T* const staged = reinterpret_cast<T*>(smem_reverse_buffer);
  const int64_t base = static_cast<int64_t>(blockIdx.x) * tile;
  const int64_t rest = n - base;
  const int32_t len = rest < tile ? static_cast<int32_t>(rest) : tile;
  for (int32_t i = static_cast<int32_t>(threadIdx.x); i < len; i += static_cast<int32_t>(blockDim.x)) {
    staged[i] = in[base + i];
  }
  __syncthreads();
  for (int32_t i = static_cast<int32_t>(threadIdx.x); i < len; i += static_cast<int32_t>(blockDim.x)) {
    out[base + i] = staged[len - 1 - i];
  }
}
