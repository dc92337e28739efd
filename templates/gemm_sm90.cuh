// gemm_sm90.cuh - tensor-core GEMM for Hopper (sm_90a): TMA loads into
// 128-byte-swizzled shared memory, an mbarrier pipeline, wgmma.mma_async from
// shared-memory descriptors, warp specialization, a fused epilogue.
//
//   C[M, N] = act(A[M, K] @ B[N, K]^T + bias[N])
//
// A is row-major [M, K], B is row-major [N, K] (an nn.Linear weight: K is
// contiguous in both), C is row-major [M, N] with row stride N.  T is
// __nv_bfloat16 or __half; products accumulate in fp32 registers and are
// rounded once to T after the bias and the activation.
//
// Template parameters (manifest constexprs, in order):
//   T         __nv_bfloat16 or __half
//   BM, BN    the tile of C one CTA computes: BM in {64, 128, 256}, BN a
//             multiple of 32 up to 256
//   BK        the K step of a pipeline stage: 128 bytes of T (64 for 16-bit
//             types), the width of the 128-byte swizzle
//   STAGES    pipeline depth: STAGES tiles of A and B in flight
//   HAS_BIAS  add bias[n] (bias may be NULL when false)
//   ACT       0 none, 1 SiLU x*sigmoid(x), 2 GELU (tanh approximation)
//   SPLITK    CTAs of a cluster (SPLITK, 1, 1) that share one tile of C,
//             each over 1/SPLITK of K; they add their partial sums through
//             distributed shared memory and rank 0 writes C.  1: no split.
//   MCAST     1, or 2 (with SPLITK = 1): a cluster (2, 1, 1) of two CTAs
//             computes two tiles of C on top of each other (rows 2i and
//             2i+1 of tiles, one column of tiles) and shares their tile of
//             B: each CTA loads half of it, multicast into both CTAs'
//             shared memory, halving the B traffic from L2.
// Runtime parameters:
//   a     const __grid_constant__ CUtensorMap: A, box [BM, BK] (outermost
//         first), 128-byte swizzle, zero fill outside the tensor
//   b     the same for B, box [BN / MCAST, BK]
//   c     T*, row-major [M, N]
//   bias  const T*, [N] (read only when HAS_BIAS)
//   M, N, K  int
//
// Launch:
//   block       128 * (1 + NC) threads, NC = (BM >= 128 ? 2 : 1) consumer
//               warpgroups: warpgroup 0 is the producer (one thread issues
//               the TMA loads; setmaxnreg gives its registers away), the
//               others issue wgmma, each over BM / NC rows of the tile
//   grid        SPLITK > 1: cdiv(M, BM) * cdiv(N, BN) * SPLITK, a cluster per
//               tile; else min(cdiv(cdiv(M, BM), MCAST) * cdiv(N, BN),
//               num_sms / MCAST) * MCAST: persistent CTAs (pairs) that walk
//               the tiles in groups of 16 tile rows (L2 reuse)
//   cluster     (SPLITK * MCAST, 1, 1)
//   shared_mem  1024 + STAGES * (BM + BN) * BK * sizeof(T)
//               + (SPLITK > 1 ? BM * BN * 4 : 0) bytes (the 1024: the
//               swizzled tiles need 1024-byte alignment)
//
// Requirements (the TMA's): A and B 16-byte aligned, K * sizeof(T) a multiple
// of 16.  M, N and K need not be multiples of the tile: loads outside A and
// B read zeros, stores outside C are skipped.  c needs 4-byte alignment for
// paired stores when N is even (element stores otherwise).
//
// Pipeline: stage s holds A[BM, BK] and B[BN, BK]; full[s] completes when
// the TMA has written both (expect-tx bytes), empty[s] when every consumer
// warp's wgmmas that read it are done.  A consumer keeps one wgmma group in
// flight (wait_group 1) and releases the stage before.  Persistent CTAs keep
// the stage counters across tiles, so the producer loads the next tile while
// the consumers run the epilogue.  With MCAST = 2 a stage is free only when
// the consumers of both CTAs have released it (each consumer warp arrives on
// the empty barrier of both), since both producers write into it.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace kpack_gemm {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier -------------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Waits until the phase of parity `parity` has completed (parity 1 passes on
// a fresh barrier: the phase before the first counts as complete).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
// The same, then a cluster-scope fence: the waiting thread then sees what
// other CTAs wrote before their release.cluster arrivals.
__device__ __forceinline__ void mbar_wait_cluster(uint32_t bar, uint32_t parity) {
  mbar_wait(bar, parity);
  asm volatile("fence.acq_rel.cluster;" ::: "memory");
}
// Arrive on the barrier at `bar` (a shared::cta address) of cluster CTA `rank`.
__device__ __forceinline__ void mbar_arrive_remote(uint32_t bar, uint32_t rank) {
  asm volatile(
      "{\n.reg .b32 ra;\n"
      "mapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}

// Arrive on the barrier at `bar` of cluster CTA `rank` with the default
// (.release.cta) semantics: a stage release, which hands over no data.
__device__ __forceinline__ void mbar_arrive_peer(uint32_t bar, uint32_t rank) {
  asm volatile(
      "{\n.reg .b32 ra;\n"
      "mapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}

// ---- cluster --------------------------------------------------------------
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}
// Every thread of the cluster, converged or not (the producer warp is not).
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}
__device__ __forceinline__ uint32_t map_rank(uint32_t addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}

// ---- TMA ------------------------------------------------------------------
// Box of the 2-D map at element coordinates (c0 innermost, c1 rows) into
// shared memory at `dst`, completing `bytes` on the mbarrier `bar`.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
// The same box written to the same offset in every CTA of `mask` in the
// cluster, completing bytes on each one's mbarrier at `bar`.
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap* map,
                                                      uint32_t bar, int c0, int c1, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "h"(mask)
      : "memory");
}
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// ---- wgmma ----------------------------------------------------------------
// Shared-memory matrix descriptor of a K-major tile in the 128-byte swizzle
// the TMA wrote: rows of 128 bytes, 8-row atoms of 1024 bytes (stride byte
// offset 1024; the leading byte offset is unused for swizzled K-major
// layouts), tile base 1024-byte aligned (base offset 0).  The k-th 16-wide
// slice of the 64-wide row starts 32 * k bytes further: the hardware applies
// the swizzle to the address it computes.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr) {
  return static_cast<uint64_t>((addr & 0x3FFFFu) >> 4) | (static_cast<uint64_t>(1) << 16) |
         (static_cast<uint64_t>(1024 >> 4) << 32) | (static_cast<uint64_t>(1) << 62);
}
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accesses of the accumulators across the
// wgmma waits.
template <int R>
__device__ __forceinline__ void reg_fence(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

template <uint32_t N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
template <uint32_t N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

// D[64, N] += A[64, 16] * B[N, 16]^T, fp32 accumulators: d[4 j + 2 h + e] is
// row 16 w + l / 4 + 8 h, column 8 j + 2 (l % 4) + e of the 64 x N block for
// lane l of warp w of the warpgroup (PTX ISA, wgmma D fragment layout).
template <int N>
struct Wgmma;

// The bf16 and f16 forms differ only in the instruction's type names.
#define KPACK_WGMMA_32(TYPE) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n32k16.f32." TYPE "." TYPE " {" \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15" \
      "}, %16, %17, p, 1, 1, 0, 0;\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]) \
      : "l"(da), "l"(db), "r"(1) \
      : "memory")
template <>
struct Wgmma<32> {
  template <bool BF16>
  __device__ __forceinline__ static void run(float (&d)[16], uint64_t da, uint64_t db) {
    if constexpr (BF16)
      KPACK_WGMMA_32("bf16");
    else
      KPACK_WGMMA_32("f16");
  }
};
#undef KPACK_WGMMA_32

// The bf16 and f16 forms differ only in the instruction's type names.
#define KPACK_WGMMA_64(TYPE) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " {" \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31" \
      "}, %32, %33, p, 1, 1, 0, 0;\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
      : "l"(da), "l"(db), "r"(1) \
      : "memory")
template <>
struct Wgmma<64> {
  template <bool BF16>
  __device__ __forceinline__ static void run(float (&d)[32], uint64_t da, uint64_t db) {
    if constexpr (BF16)
      KPACK_WGMMA_64("bf16");
    else
      KPACK_WGMMA_64("f16");
  }
};
#undef KPACK_WGMMA_64

// The bf16 and f16 forms differ only in the instruction's type names.
#define KPACK_WGMMA_96(TYPE) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n96k16.f32." TYPE "." TYPE " {" \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47" \
      "}, %48, %49, p, 1, 1, 0, 0;\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]) \
      : "l"(da), "l"(db), "r"(1) \
      : "memory")
template <>
struct Wgmma<96> {
  template <bool BF16>
  __device__ __forceinline__ static void run(float (&d)[48], uint64_t da, uint64_t db) {
    if constexpr (BF16)
      KPACK_WGMMA_96("bf16");
    else
      KPACK_WGMMA_96("f16");
  }
};
#undef KPACK_WGMMA_96

// The bf16 and f16 forms differ only in the instruction's type names.
#define KPACK_WGMMA_128(TYPE) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " {" \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63" \
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
      : "l"(da), "l"(db), "r"(1) \
      : "memory")
template <>
struct Wgmma<128> {
  template <bool BF16>
  __device__ __forceinline__ static void run(float (&d)[64], uint64_t da, uint64_t db) {
    if constexpr (BF16)
      KPACK_WGMMA_128("bf16");
    else
      KPACK_WGMMA_128("f16");
  }
};
#undef KPACK_WGMMA_128

// The bf16 and f16 forms differ only in the instruction's type names.
#define KPACK_WGMMA_192(TYPE) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n192k16.f32." TYPE "." TYPE " {" \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63," \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79," \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95" \
      "}, %96, %97, p, 1, 1, 0, 0;\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
      "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
      "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
      "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
      "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]) \
      : "l"(da), "l"(db), "r"(1) \
      : "memory")
template <>
struct Wgmma<192> {
  template <bool BF16>
  __device__ __forceinline__ static void run(float (&d)[96], uint64_t da, uint64_t db) {
    if constexpr (BF16)
      KPACK_WGMMA_192("bf16");
    else
      KPACK_WGMMA_192("f16");
  }
};
#undef KPACK_WGMMA_192

// The bf16 and f16 forms differ only in the instruction's type names.
#define KPACK_WGMMA_256(TYPE) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " {" \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63," \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79," \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95," \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111," \
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127" \
      "}, %128, %129, p, 1, 1, 0, 0;\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
      "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
      "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
      "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
      "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
      "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
      "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
      "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
      "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
      : "l"(da), "l"(db), "r"(1) \
      : "memory")
template <>
struct Wgmma<256> {
  template <bool BF16>
  __device__ __forceinline__ static void run(float (&d)[128], uint64_t da, uint64_t db) {
    if constexpr (BF16)
      KPACK_WGMMA_256("bf16");
    else
      KPACK_WGMMA_256("f16");
  }
};
#undef KPACK_WGMMA_256


template <int ACT>
__device__ __forceinline__ float activate(float x) {
  if constexpr (ACT == 1) {
    return x / (1.0f + __expf(-x));
  } else if constexpr (ACT == 2) {
    const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    const float t = 1.0f - 2.0f / (1.0f + __expf(2.0f * u));  // tanh(u)
    return 0.5f * x * (1.0f + t);
  } else {
    return x;
  }
}

template <typename T>
struct Pack;
template <>
struct Pack<__nv_bfloat16> {
  using T2 = __nv_bfloat162;
  static constexpr bool kBf16 = true;
  __device__ __forceinline__ static T2 pair(float x, float y) { return __floats2bfloat162_rn(x, y); }
  __device__ __forceinline__ static __nv_bfloat16 one(float x) { return __float2bfloat16_rn(x); }
  __device__ __forceinline__ static float load(const __nv_bfloat16* p) { return __bfloat162float(__ldg(p)); }
};
template <>
struct Pack<__half> {
  using T2 = __half2;
  static constexpr bool kBf16 = false;
  __device__ __forceinline__ static T2 pair(float x, float y) { return __floats2half2_rn(x, y); }
  __device__ __forceinline__ static __half one(float x) { return __float2half_rn(x); }
  __device__ __forceinline__ static float load(const __half* p) { return __half2float(__ldg(p)); }
};

// Tiles walk M fastest inside groups of kGroupM tile rows, so the CTAs
// running at one time share rows of A and columns of B in L2.
constexpr int kGroupM = 16;

__device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int group, int& tm,
                                            int& tn) {
  const int per_group = group * tiles_n;
  const int g = tile / per_group;
  const int first = g * group;
  const int rows = min(tiles_m - first, group);
  const int in = tile - g * per_group;
  tm = first + in % rows;
  tn = in / rows;
}

template <typename T, int BM, int BN, int BK, int STAGES, bool HAS_BIAS, int ACT, int SPLITK,
          int MCAST>
__global__ void __launch_bounds__(128 * (1 + (BM >= 128 ? 2 : 1)), 1)
    gemm_sm90(const __grid_constant__ CUtensorMap a, const __grid_constant__ CUtensorMap b, T* c,
              const T* bias, int M, int N, int K) {
  using namespace kpack_gemm;
  constexpr int NC = BM >= 128 ? 2 : 1;  // consumer warpgroups
  constexpr int WM = BM / NC;            // rows of the tile per consumer
  constexpr int MT = WM / 64;            // m64 blocks per consumer
  constexpr int NCT = NC * 128;          // consumer threads
  constexpr int R = BN / 2;              // accumulators per m64 block and thread
  constexpr uint32_t A_BYTES = BM * BK * sizeof(T);
  constexpr uint32_t B_BYTES = BN * BK * sizeof(T);
  constexpr uint32_t STAGE_BYTES = A_BYTES + B_BYTES;
  constexpr bool kBf16 = kpack_gemm::Pack<T>::kBf16;
  static_assert(sizeof(T) == 2, "T is __nv_bfloat16 or __half");
  static_assert(BK * sizeof(T) == 128, "BK spans the 128-byte swizzle");
  static_assert(BM == 64 || BM == 128 || BM == 256, "BM is 64, 128 or 256");
  static_assert(BN % 32 == 0 && BN >= 32 && BN <= 256, "BN is a multiple of 32 up to 256");
  static_assert(STAGES >= 2 && SPLITK >= 1 && SPLITK <= 8, "STAGES >= 2, SPLITK 1..8");
  static_assert(ACT >= 0 && ACT <= 2, "ACT is 0, 1 or 2");
  static_assert(MCAST == 1 || (MCAST == 2 && SPLITK == 1), "MCAST is 1, or 2 without SPLITK");
  constexpr int CL = SPLITK * MCAST;  // CTAs per cluster
  constexpr uint32_t B_PART = B_BYTES / MCAST;  // the part of B each CTA loads
  static_assert((BN / MCAST) % 8 == 0, "each CTA's part of B is whole 1024-byte swizzle atoms");

  __shared__ alignas(8) uint64_t bars[2 * STAGES + 2];
  extern __shared__ __align__(1024) unsigned char dsmem[];
  const uint32_t base = (smem_addr(dsmem) + 1023u) & ~1023u;
  const uint32_t sA = base;
  const uint32_t sB = base + STAGES * A_BYTES;
  const uint32_t sRed = base + STAGES * STAGE_BYTES;  // SPLITK > 1: partial sums
  const uint32_t bar0 = smem_addr(bars);
  // full[s] = bar0 + 8 s, empty[s] = bar0 + 8 (STAGES + s)
  const uint32_t red_full = bar0 + 8 * (2 * STAGES);
  const uint32_t red_empty = red_full + 8;

  const uint32_t rank = CL > 1 ? cluster_rank() : 0;
  const int krank = SPLITK > 1 ? static_cast<int>(rank) : 0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(bar0 + 8 * s, 1);
      mbar_init(bar0 + 8 * (STAGES + s), NC * 4 * MCAST);
    }
    if constexpr (SPLITK > 1) {
      mbar_init(red_full, (SPLITK - 1) * NCT);
      mbar_init(red_empty, NCT);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    tma_prefetch_map(&a);
    tma_prefetch_map(&b);
  }
  __syncthreads();
  if constexpr (CL > 1) cluster_sync();

  const int tiles_m = (M + BM - 1) / BM;
  const int tiles_n = (N + BN - 1) / BN;
  const int tiles_mc = (tiles_m + MCAST - 1) / MCAST;  // rows of cluster tiles
  const int num_tiles = tiles_mc * tiles_n;
  const int k_iters = (K + BK - 1) / BK;
  const int kb = krank * k_iters / SPLITK;
  const int ke = (krank + 1) * k_iters / SPLITK;
  const int first_tile = blockIdx.x / CL;
  const int tile_step = gridDim.x / CL;
  const int wg = threadIdx.x / 128;

  if (wg == 0) {
    // Producer warpgroup: one thread issues every load.
    if constexpr (NC == 2) setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      uint32_t it = 0;
      for (int tile = first_tile; tile < num_tiles; tile += tile_step) {
        int tm, tn;
        tile_coords(tile, tiles_mc, tiles_n, kGroupM / MCAST, tm, tn);
        tm = tm * MCAST + static_cast<int>(rank % MCAST);
        for (int k = kb; k < ke; ++k, ++it) {
          const uint32_t s = it % STAGES;
          const uint32_t ph = (it / STAGES) & 1u;
          const uint32_t full = bar0 + 8 * s;
          if constexpr (MCAST == 1) {
            mbar_wait(bar0 + 8 * (STAGES + s), ph ^ 1u);
            mbar_expect_tx(full, STAGE_BYTES);
            tma_load_2d(sA + s * A_BYTES, &a, full, k * BK, tm * BM);
            tma_load_2d(sB + s * B_BYTES, &b, full, k * BK, tn * BN);
          } else {
            // Both CTAs' consumers have released stage s (the other CTA's
            // load writes here too); B arrives in MCAST parts, one from each
            // CTA, each multicast to all.
            // A CTA past the last row tile (odd tile rows) still loads its
            // part of B for the other one; its A box stays inside A and its
            // stores are skipped.
            // Only the other CTA's wgmma reads must be over (no data to
            // acquire): a plain wait, and the consumers' arrivals are
            // .release.cta.  With try_wait.acquire.cluster here and
            // .release.cluster arrivals the pipeline ran at half speed
            // (0.52x cuBLAS at 8192^3 on an H200, against 0.96x;
            // bench/results/2026-11-26-cuda-gemm-check).
            mbar_wait(bar0 + 8 * (STAGES + s), ph ^ 1u);
            mbar_expect_tx(full, STAGE_BYTES);
            tma_load_2d(sA + s * A_BYTES, &a, full, k * BK, min(tm, tiles_m - 1) * BM);
            tma_load_2d_multicast(sB + s * B_BYTES + rank * B_PART, &b, full, k * BK,
                                  tn * BN + static_cast<int>(rank) * (BN / MCAST),
                                  static_cast<uint16_t>((1u << MCAST) - 1));
          }
        }
      }
    }
  } else {
    if constexpr (NC == 2) setmaxnreg_inc<232>();
    const int cw = wg - 1;
    const int ct = threadIdx.x - 128;  // 0 .. NCT-1
    const int warp = (threadIdx.x / 32) % 4;
    const int lane = threadIdx.x % 32;
    // A consumer warp frees a stage in every CTA whose producer writes it.
    auto release = [](uint32_t empty) {
      if constexpr (MCAST == 1) {
        mbar_arrive(empty);
      } else {
#pragma unroll
        for (int r = 0; r < MCAST; ++r) mbar_arrive_peer(empty, r);
      }
    };
    uint32_t it = 0;
    uint32_t tcount = 0;
    for (int tile = first_tile; tile < num_tiles; tile += tile_step, ++tcount) {
      int tm, tn;
      tile_coords(tile, tiles_mc, tiles_n, kGroupM / MCAST, tm, tn);
      tm = tm * MCAST + static_cast<int>(rank % MCAST);
      float acc[MT][R];
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int i = 0; i < R; ++i) acc[m][i] = 0.0f;

      for (int k = kb; k < ke; ++k, ++it) {
        const uint32_t s = it % STAGES;
        mbar_wait(bar0 + 8 * s, (it / STAGES) & 1u);
        wgmma_fence();
        const uint64_t da = smem_desc(sA + s * A_BYTES + cw * WM * 128);
        const uint64_t db = smem_desc(sB + s * B_BYTES);
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
#pragma unroll
          for (int m = 0; m < MT; ++m)
            Wgmma<BN>::template run<kBf16>(acc[m], da + (m * 64 * 128 >> 4) + 2 * kk, db + 2 * kk);
        }
        wgmma_commit();
        wgmma_wait<1>();
        if (k > kb && lane == 0) release(bar0 + 8 * (STAGES + (it - 1) % STAGES));
      }
      wgmma_wait<0>();
      if (ke > kb && lane == 0) release(bar0 + 8 * (STAGES + (it - 1) % STAGES));
#pragma unroll
      for (int m = 0; m < MT; ++m) reg_fence(acc[m]);

      if constexpr (SPLITK > 1) {
        // Partial sums: thread ct's accumulators q*4 .. q*4+3 at
        // sRed + (q * NCT + ct) * 16, the same place in every rank.
        if (rank != 0) {
          mbar_wait(red_empty, (tcount & 1u) ^ 1u);
#pragma unroll
          for (int m = 0; m < MT; ++m)
#pragma unroll
            for (int q = 0; q < R / 4; ++q) {
              const uint32_t p = sRed + ((m * (R / 4) + q) * NCT + ct) * 16;
              asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(p), "f"(acc[m][4 * q]),
                           "f"(acc[m][4 * q + 1]), "f"(acc[m][4 * q + 2]), "f"(acc[m][4 * q + 3])
                           : "memory");
            }
          mbar_arrive_remote(red_full, 0);
          continue;
        }
        mbar_wait_cluster(red_full, tcount & 1u);
        for (int r = 1; r < SPLITK; ++r) {
          const uint32_t remote = map_rank(sRed, r);
#pragma unroll
          for (int m = 0; m < MT; ++m)
#pragma unroll
            for (int q = 0; q < R / 4; ++q) {
              const uint32_t p = remote + ((m * (R / 4) + q) * NCT + ct) * 16;
              float x0, x1, x2, x3;
              asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                           : "=f"(x0), "=f"(x1), "=f"(x2), "=f"(x3)
                           : "r"(p)
                           : "memory");
              acc[m][4 * q] += x0;
              acc[m][4 * q + 1] += x1;
              acc[m][4 * q + 2] += x2;
              acc[m][4 * q + 3] += x3;
            }
        }
        for (int r = 1; r < SPLITK; ++r) mbar_arrive_remote(red_empty, r);
      }

      // Epilogue: bias, activation, one rounding to T, stores inside C only.
      const int row0 = tm * BM + cw * WM + warp * 16 + lane / 4;
      const int col0 = tn * BN + 2 * (lane % 4);
      const bool pairs = (N & 1) == 0;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        const int col = col0 + 8 * j;
        if (col >= N) continue;
        const bool two = col + 1 < N;
        float b0 = 0.0f, b1 = 0.0f;
        if constexpr (HAS_BIAS) {
          b0 = Pack<T>::load(bias + col);
          if (two) b1 = Pack<T>::load(bias + col + 1);
        }
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = row0 + m * 64 + 8 * h;
            if (row >= M) continue;
            const float v0 = activate<ACT>(acc[m][4 * j + 2 * h] + b0);
            const float v1 = activate<ACT>(acc[m][4 * j + 2 * h + 1] + b1);
            T* p = c + static_cast<size_t>(row) * N + col;
            if (pairs) {
              *reinterpret_cast<typename Pack<T>::T2*>(p) = Pack<T>::pair(v0, v1);
            } else {
              p[0] = Pack<T>::one(v0);
              if (two) p[1] = Pack<T>::one(v1);
            }
          }
      }
    }
    if constexpr (SPLITK > 1) {
      // Rank 0 reads this CTA's partial sums until it arrives here.
      if (rank != 0) mbar_wait(red_empty, (tcount & 1u) ^ 1u);
    }
  }
  // The other CTA's consumers may still arrive on this CTA's barriers.
  if constexpr (MCAST > 1) cluster_sync_all();
}

}  // namespace kpack_gemm
