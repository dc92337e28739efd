// chevrons.h - the CUDA runtime path of the launch benchmark: vector_add
// <float, 128> instantiated by nvcc in chevrons.cu and launched with <<<>>>.
//
// Plain C++ declarations shared by chevrons.cu (nvcc) and launch_bench.cc
// (the project's C++ compiler); extern "C" so that the two compilers need
// not agree on anything but the C calling convention.
#ifndef KPACK_BENCH_LAUNCH_CHEVRONS_H
#define KPACK_BENCH_LAUNCH_CHEVRONS_H

#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {

// Threads per block and elements per block of the instantiation; the grid is
// cdiv(n, kChevronsPerBlock), exactly what kpack's launcher computes from the
// manifest's "cdiv(n, BLOCK * 32 / sizeof(T))".
enum { kChevronsBlock = 128, kChevronsPerBlock = 128 * 32 / 4 };

// kernel<<<cdiv(n, 1024), 128, 0, stream>>>(x, y, out, n); nothing when
// n <= 0.  Reports no error itself, as <<<>>> does not: the caller reads
// cudaGetLastError() after a batch.
void bench_chevrons_vector_add_f32_b128(cudaStream_t stream, const float* x, const float* y,
                                        float* out, int64_t n);

// The same launch followed by cudaGetLastError(), the check an engine that
// wants a per-launch status (as kpack returns) writes after <<<>>>.
cudaError_t bench_chevrons_vector_add_f32_b128_checked(cudaStream_t stream, const float* x,
                                                       const float* y, float* out, int64_t n);

}  // extern "C"

#endif  // KPACK_BENCH_LAUNCH_CHEVRONS_H
