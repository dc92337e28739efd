// vector_add.cuh - element-wise sum out[i] = x[i] + y[i], 0 <= i < n.
//
// Template parameters (manifest constexprs, in order):
//   T      float, __half or __nv_bfloat16
//   BLOCK  threads per block (the manifest's launch.block)
// Runtime parameters: x, y (const T*), out (T*), n (int64_t).
// Launch: grid = cdiv(n, BLOCK * 32 / sizeof(T)), block = BLOCK: each
// thread owns two 16-byte vectors of each input (2 x 16 B x 2 inputs of
// loads in flight per thread, 128 KiB per SM at full occupancy).
//
// The sum is computed in fp32 and rounded once to T.  For f16 and bf16 this
// is bit-identical to a native half add: fp32 has at least 2p+2 bits for
// both formats, so double rounding cannot occur.
//
// Pointers need only element alignment.  When x, y and out share the same
// offset modulo 16 bytes (all aligned, or all views at the same offset) the
// kernel peels up to 16/sizeof(T)-1 head elements and uses 16-byte loads and
// stores for the rest; otherwise it falls back to coalesced scalar accesses.
// In place (out == x or out == y) is allowed.
#pragma once

#include "common.cuh"

template <typename T, int BLOCK>
__device__ __forceinline__ void vector_add(const T* x, const T* y, T* out, int64_t n) {
  using namespace kpack_tpl;
  constexpr int VEC = Vec<T>::kN;
  constexpr int U = 2;  // 16-byte vectors per thread per input
  constexpr int64_t PER_BLOCK = static_cast<int64_t>(BLOCK) * U * VEC;
  static_assert(PER_BLOCK * sizeof(T) == BLOCK * 32, "grid expression assumes 32 bytes/thread");
  const int tid = static_cast<int>(threadIdx.x);

  const uintptr_t ax = reinterpret_cast<uintptr_t>(x) & 15u;
  if (ax == (reinterpret_cast<uintptr_t>(y) & 15u) && ax == (reinterpret_cast<uintptr_t>(out) & 15u)) {
    const int64_t head = min64(elems_to_align16(x), n);
    const int64_t nvec = (n - head) / VEC;
    const int64_t rest = n - head - nvec * VEC;  // < VEC elements after the last vector
    const T* xb = x + head;
    const T* yb = y + head;
    T* ob = out + head;

    // Vector v of the body lives in block v / (BLOCK*U); within the block the
    // U vectors of a thread are BLOCK apart so each load instruction of a
    // warp covers 512 contiguous bytes.
    const int64_t v0 = static_cast<int64_t>(blockIdx.x) * (BLOCK * U) + tid;
    uint4 a[U], b[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t v = v0 + static_cast<int64_t>(u) * BLOCK;
      if (v < nvec) {
        a[u] = load16(xb + v * VEC);
        b[u] = load16(yb + v * VEC);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t v = v0 + static_cast<int64_t>(u) * BLOCK;
      if (v < nvec) {
        float fa[VEC], fb[VEC];
        unpack<T>(a[u], fa);
        unpack<T>(b[u], fb);
#pragma unroll
        for (int i = 0; i < VEC; ++i) fa[i] += fb[i];
        store16(ob + v * VEC, pack<T>(fa));
      }
    }

    // The < VEC head and < VEC tail elements: block 0 always exists when
    // n >= 1 (grid = cdiv(n, ...)), and BLOCK >= VEC.
    if (blockIdx.x == 0 && tid < VEC) {
      if (tid < head) store_f(out + tid, load_f(x + tid) + load_f(y + tid));
      if (tid < rest) {
        const int64_t e = head + nvec * VEC + tid;
        store_f(out + e, load_f(x + e) + load_f(y + e));
      }
    }
  } else {
    // Mutually misaligned pointers: the same elements per thread, as scalar
    // accesses BLOCK apart (coalesced), VEC loads of each input in flight.
    const int64_t e0 = static_cast<int64_t>(blockIdx.x) * PER_BLOCK + tid;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float a[VEC], b[VEC];
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const int64_t e = e0 + static_cast<int64_t>(u * VEC + i) * BLOCK;
        if (e < n) {
          a[i] = load_f(x + e);
          b[i] = load_f(y + e);
        }
      }
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const int64_t e = e0 + static_cast<int64_t>(u * VEC + i) * BLOCK;
        if (e < n) store_f(out + e, a[i] + b[i]);
      }
    }
  }
}
