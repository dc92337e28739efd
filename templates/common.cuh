// common.cuh - device helpers shared by the bundled kpack kernel templates.
//
// Everything lives in namespace kpack_tpl and is __device__ __forceinline__,
// so including this header from several templates in one translation unit is
// harmless.  Templates include it by a relative path; the unit hash must
// cover included headers (DESIGN.md, plan pass: the source after
// preprocessing) so that an edit here rebuilds every kernel.
//
// Requirements shared by all kernels: tensors are aligned to their element
// size (natural alignment, which every allocator and every PyTorch view
// gives).  16-byte alignment is NOT required: the kernels check it at run
// time and fall back to narrower accesses.
#ifndef KPACK_TEMPLATES_COMMON_CUH
#define KPACK_TEMPLATES_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <string.h>

namespace kpack_tpl {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kNegInf = -__builtin_huge_valf();

template <typename To, typename From>
__device__ __forceinline__ To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ __forceinline__ int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// A compile-time int passed as a value (std::integral_constant without <type_traits>).
template <int V>
struct IntC {
  static constexpr int value = V;
};

// Elements per 16-byte vector (LDG.128 / STG.128, the widest access).
template <typename T>
struct Vec {
  static constexpr int kN = 16 / static_cast<int>(sizeof(T));
};

// Conversions between an element type and the fp32 we compute in.
template <typename T>
struct Conv;

template <>
struct Conv<float> {
  __device__ __forceinline__ static float to(float x) { return x; }
  __device__ __forceinline__ static float from(float x) { return x; }
};

template <>
struct Conv<__half> {
  __device__ __forceinline__ static float to(__half x) { return __half2float(x); }
  __device__ __forceinline__ static __half from(float x) { return __float2half_rn(x); }
  __device__ __forceinline__ static float2 to2(uint32_t w) {
    return __half22float2(bit_cast<__half2>(w));
  }
  __device__ __forceinline__ static uint32_t from2(float lo, float hi) {
    return bit_cast<uint32_t>(__floats2half2_rn(lo, hi));
  }
};

template <>
struct Conv<__nv_bfloat16> {
  __device__ __forceinline__ static float to(__nv_bfloat16 x) { return __bfloat162float(x); }
  __device__ __forceinline__ static __nv_bfloat16 from(float x) { return __float2bfloat16_rn(x); }
  // bf16 is the top half of an fp32: widening is a shift or a mask, which
  // keeps ptxas from hoisting conversions (sm_90's cvt) and raising
  // register pressure.
  __device__ __forceinline__ static float2 to2(uint32_t w) {
    return make_float2(bit_cast<float>(w << 16), bit_cast<float>(w & 0xffff0000u));
  }
  __device__ __forceinline__ static uint32_t from2(float lo, float hi) {
    return bit_cast<uint32_t>(__floats2bfloat162_rn(lo, hi));
  }
};

// Read-only global loads through the non-coherent path (LDG.E.CONSTANT).
// Callers never read an address after writing it in the same launch, so
// in-place use (out == in) stays correct.
__device__ __forceinline__ uint4 load16(const void* p) {
#ifdef __CUDA_ARCH__
  return __ldg(reinterpret_cast<const uint4*>(p));
#else
  return *reinterpret_cast<const uint4*>(p);
#endif
}

__device__ __forceinline__ void store16(void* p, uint4 v) { *reinterpret_cast<uint4*>(p) = v; }

template <typename T>
__device__ __forceinline__ float load_f(const T* p) {
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(T) == 4) {
    return Conv<T>::to(bit_cast<T>(__ldg(reinterpret_cast<const unsigned int*>(p))));
  } else {
    return Conv<T>::to(bit_cast<T>(__ldg(reinterpret_cast<const unsigned short*>(p))));
  }
#else
  return Conv<T>::to(*p);
#endif
}

template <typename T>
__device__ __forceinline__ void store_f(T* p, float v) {
  *p = Conv<T>::from(v);
}

// A 16-byte vector as Vec<T>::kN fp32 values, element 0 at the lowest address.
template <typename T>
__device__ __forceinline__ void unpack(const uint4& v, float (&f)[Vec<T>::kN]) {
  if constexpr (sizeof(T) == 4) {
    f[0] = bit_cast<float>(v.x);
    f[1] = bit_cast<float>(v.y);
    f[2] = bit_cast<float>(v.z);
    f[3] = bit_cast<float>(v.w);
  } else {
    const float2 a = Conv<T>::to2(v.x), b = Conv<T>::to2(v.y);
    const float2 c = Conv<T>::to2(v.z), d = Conv<T>::to2(v.w);
    f[0] = a.x; f[1] = a.y; f[2] = b.x; f[3] = b.y;
    f[4] = c.x; f[5] = c.y; f[6] = d.x; f[7] = d.y;
  }
}

// fp32 values rounded to nearest-even into a 16-byte vector of T.
template <typename T>
__device__ __forceinline__ uint4 pack(const float (&f)[Vec<T>::kN]) {
  uint4 v;
  if constexpr (sizeof(T) == 4) {
    v.x = bit_cast<uint32_t>(f[0]);
    v.y = bit_cast<uint32_t>(f[1]);
    v.z = bit_cast<uint32_t>(f[2]);
    v.w = bit_cast<uint32_t>(f[3]);
  } else {
    v.x = Conv<T>::from2(f[0], f[1]);
    v.y = Conv<T>::from2(f[2], f[3]);
    v.z = Conv<T>::from2(f[4], f[5]);
    v.w = Conv<T>::from2(f[6], f[7]);
  }
  return v;
}

// exp(d) for d = x - max <= 0.  The subtraction is done first, in fp32, so
// the argument's error is relative to |d| (not to |x|, as with __expf(x - m)
// folded into one FMA).  exp2f compiles to PTX ex2.approx.f32 without .ftz:
// the MUFU.EX2 unit (~2 ulp) plus denormal handling, far inside the 1e-5
// the kernels promise, and no flush-to-zero of tiny probabilities.
__device__ __forceinline__ float exp_shifted(float d) { return exp2f(d * kLog2e); }

// exp(d) for d = x - max <= 0 where the result only feeds a normaliser sum
// (which holds the max's own term, 1): the same argument, with MUFU.EX2's
// flush-to-zero form.  A term below 2^-126 flushed to 0 changes a sum >= 1
// by nothing, and the non-ftz form's denormal fix-up (a compare and two
// predicated multiplies around each MUFU.EX2) was a third of the
// instructions per 16-bit element in the one-pass row kernels.
__device__ __forceinline__ float exp_sum_term(float d) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(d * kLog2e));
  return y;
}

// A running (max, sum of exp(x - max)) pair: the state of an online
// logsumexp / softmax normaliser.  Identity: {-inf, 0}.
struct MaxSum {
  float m;
  float s;
};

// The max to subtract: 0 while everything seen is -inf, so that -inf inputs
// give exp(-inf) = 0 instead of exp(-inf - -inf) = NaN.
__device__ __forceinline__ float safe_max(float m) { return m == kNegInf ? 0.f : m; }

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  const float ms = safe_max(m);
  return {m, a.s * exp_shifted(a.m - ms) + b.s * exp_shifted(b.m - ms)};
}

// Folds N values (use -inf for "absent") into the state with one rescale.
template <int N>
__device__ __forceinline__ void fold(MaxSum& st, const float (&x)[N]) {
  float cm = x[0];
#pragma unroll
  for (int i = 1; i < N; ++i) cm = fmaxf(cm, x[i]);
  const float m = fmaxf(st.m, cm);
  const float ms = safe_max(m);
  float s = st.s * exp_shifted(st.m - ms);
#pragma unroll
  for (int i = 0; i < N; ++i) s += exp_sum_term(x[i] - ms);
  st = {m, s};
}

// Butterfly reduction: every lane of the warp ends with the total.  All 32
// lanes must call it.
__device__ __forceinline__ MaxSum warp_reduce(MaxSum v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const MaxSum w = {__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
    v = merge(v, w);
  }
  return v;
}

// Reduction over the BLOCK threads of the block; every thread gets the
// total.  `red` holds BLOCK/32 + 1 entries of shared memory.  All threads
// must call it, and at most once per launch (the slots are not re-armed).
template <int BLOCK>
__device__ __forceinline__ MaxSum block_reduce(MaxSum v, MaxSum* red) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
  constexpr int kWarps = BLOCK / 32;
  v = warp_reduce(v);
  if constexpr (kWarps == 1) {
    return v;
  } else {
    const int warp = static_cast<int>(threadIdx.x) / 32;
    const int lane = static_cast<int>(threadIdx.x) % 32;
    if (lane == 0) red[warp] = v;
    __syncthreads();
    if (warp == 0) {
      MaxSum w = lane < kWarps ? red[lane] : MaxSum{kNegInf, 0.f};
      w = warp_reduce(w);
      if (lane == 0) red[kWarps] = w;
    }
    __syncthreads();
    return red[kWarps];
  }
}

// Folds the 16-byte vectors v = vbegin + t, vbegin + t + G, ... (v < nvec)
// of xv into st, U vectors per step so that U loads are in flight before
// the first is used.  (The group is G threads and t is this thread's index.)
// The step's max and its sum each unpack the raw vectors again: conversions
// are cheap, registers for U * VEC floats are not.
template <typename T, int G, int U>
__device__ __forceinline__ void fold_vectors(const T* xv, int64_t vbegin, int64_t nvec, int t,
                                             MaxSum& st) {
  constexpr int VEC = Vec<T>::kN;
  for (int64_t v0 = vbegin + t; v0 < nvec; v0 += static_cast<int64_t>(U) * G) {
    const uint4* src = reinterpret_cast<const uint4*>(xv) + v0;
    const int n = static_cast<int>(min64(U, (nvec - v0 - 1) / G + 1));  // vectors this step
    uint4 r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (u < n) r[u] = load16(src + u * G);
    }
    float cm = kNegInf;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (u < n) {
        float f[VEC];
        unpack<T>(r[u], f);
#pragma unroll
        for (int i = 0; i < VEC; ++i) cm = fmaxf(cm, f[i]);
      }
    }
    const float m = fmaxf(st.m, cm);
    const float ms = safe_max(m);
    float s = st.s * exp_shifted(st.m - ms);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (u < n) {
        float f[VEC];
        unpack<T>(r[u], f);
#pragma unroll
        for (int i = 0; i < VEC; ++i) s += exp_sum_term(f[i] - ms);
      }
    }
    st = {m, s};
  }
}

// Elements from p to the next 16-byte boundary (0 when aligned).  Needs p
// aligned to sizeof(T).
template <typename T>
__device__ __forceinline__ int64_t elems_to_align16(const T* p) {
  const unsigned mis = static_cast<unsigned>(reinterpret_cast<uintptr_t>(p) & 15u);
  return mis == 0 ? 0 : static_cast<int64_t>((16u - mis) / sizeof(T));
}

__device__ __forceinline__ bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

// Threads per row in the row kernels (softmax, cross-entropy): the
// smallest group of 8, 16, 32, 64 or 128 threads (up to MAXG, a power of
// two below BLOCK: softmax allows 256 at BLOCK = 1024) that holds the row in
// BPT bytes per thread (BPT / 16 vectors: softmax's register cache), else
// the whole block.  Short rows thus share a warp and mid-sized rows share a
// block, so every thread has the same vectors in flight whatever the row
// length, and a block handles BLOCK / row_group rows.  The manifests' grid
// expressions compute the same rows per block from the same thresholds:
//   1 + (BLOCK/128 - 1) [bytes <= 128 BPT] + (BLOCK/64 - BLOCK/128) [bytes <= 64 BPT]
//     + (BLOCK/32 - BLOCK/64) [bytes <= 32 BPT] + (BLOCK/16 - BLOCK/32) [bytes <= 16 BPT]
//     + (BLOCK/8 - BLOCK/16) [bytes <= 8 BPT]
// with bytes = max(0, cols) * sizeof(T) and [bytes <= X] written as
// (1 - min(1, bytes / (X + 1))); with MAXG = 256 the first term becomes
// (BLOCK/256 - 1) [bytes <= 256 BPT] + (BLOCK/128 - BLOCK/256) [bytes <= 128 BPT].
// A group is at least 8 threads, so it covers the < 16/sizeof(T) head and
// tail elements of a row.
template <typename T, int BLOCK, int BPT, int MAXG = 128>
__device__ __forceinline__ int row_group(int64_t cols) {
  static_assert(BLOCK >= 256 && (BLOCK & (BLOCK - 1)) == 0, "row kernels need BLOCK = 256, 512 or 1024");
  static_assert(MAXG >= 128 && (MAXG & (MAXG - 1)) == 0 && (MAXG == 128 || MAXG < BLOCK),
                "MAXG is 128, or a larger power of two below BLOCK");
  const int64_t bytes = (cols > 0 ? cols : 0) * static_cast<int64_t>(sizeof(T));
  for (int g = 8; g <= MAXG; g *= 2) {
    if (bytes <= static_cast<int64_t>(g) * BPT) return g;
  }
  return BLOCK;
}

// Calls f(IntC<G>{}) with G = row_group<T, BLOCK, BPT, MAXG>(cols), so the
// row code is compiled once per group size with G a constant.
template <typename T, int BLOCK, int BPT, int MAXG = 128, typename F>
__device__ __forceinline__ void with_row_group(int64_t cols, F&& f) {
  const int g = row_group<T, BLOCK, BPT, MAXG>(cols);
  if (g == BLOCK) {
    f(IntC<BLOCK>{});
    return;
  }
  switch (g) {
    case 8: f(IntC<8>{}); break;
    case 16: f(IntC<16>{}); break;
    case 32: f(IntC<32>{}); break;
    case 64: f(IntC<64>{}); break;
    case 128: f(IntC<128>{}); break;
    case 256:
      if constexpr (MAXG >= 256) f(IntC<256>{});
      break;
  }
}

// Reduction over a group of G consecutive threads (G a power of two, G
// dividing BLOCK); every thread of the group gets the group's total.
//   G <= 32:      shuffles within the warp (offsets < G stay in the group);
//                 all 32 lanes of the warp must call it.
//   32 < G < BLOCK: one warp total per warp through `red`, one barrier, then
//                 each thread merges its group's G/32 totals in order.
//   G == BLOCK:   block_reduce.
// For G > 32 every thread of the block must call it, once per launch
// (`red` holds BLOCK/32 + 1 entries).
template <int G, int BLOCK>
__device__ __forceinline__ MaxSum group_reduce(MaxSum v, MaxSum* red) {
  static_assert(G >= 8 && (G & (G - 1)) == 0 && BLOCK % G == 0, "G must be a power of two dividing BLOCK");
  if constexpr (G <= 32) {
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) {
      const MaxSum w = {__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
      v = merge(v, w);
    }
    return v;
  } else if constexpr (G == BLOCK) {
    return block_reduce<BLOCK>(v, red);
  } else {
    v = warp_reduce(v);
    const int warp = static_cast<int>(threadIdx.x) / 32;
    if (threadIdx.x % 32 == 0) red[warp] = v;
    __syncthreads();
    const int first = warp & ~(G / 32 - 1);
    MaxSum r = red[first];
#pragma unroll
    for (int i = 1; i < G / 32; ++i) r = merge(r, red[first + i]);
    return r;
  }
}
}  // namespace kpack_tpl

#endif  // KPACK_TEMPLATES_COMMON_CUH
