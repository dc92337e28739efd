// A tile copy in CUDA through a host TMA descriptor: each block loads one
// BM x BN box of `src` into shared memory with cp.async.bulk.tensor (zeros
// outside the tensor), waits on an mbarrier, and writes the part inside
// M x N to `dst` (row-major, row stride N), plus one.
#pragma once
#include <cuda.h>
#include <stdint.h>

template <typename T, int BM, int BN>
__global__ void __launch_bounds__(128) copy_box(const __grid_constant__ CUtensorMap src, T* dst, int M, int N) {
  __shared__ alignas(128) T tile[BM * BN];
  __shared__ alignas(8) uint64_t bar;
  const int row0 = blockIdx.x * BM, col0 = blockIdx.y * BN;
  const uint32_t bar_at = static_cast<uint32_t>(__cvta_generic_to_shared(&bar));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_at));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_at),
                 "r"(static_cast<uint32_t>(sizeof(tile))) : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
        ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(tile))), "l"(&src), "r"(col0), "r"(row0), "r"(bar_at)
        : "memory");
  }
  asm volatile(
      "{\n .reg .pred done;\n wait_%=:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
      " @!done bra wait_%=;\n}" ::"r"(bar_at) : "memory");
  for (int i = threadIdx.x; i < BM * BN; i += blockDim.x) {
    const int r = row0 + i / BN, c = col0 + i % BN;
    if (r < M && c < N) dst[static_cast<int64_t>(r) * N + c] = tile[i] + T(1);
  }
}
