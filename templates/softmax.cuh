// softmax.cuh - softmax over the last dimension of a [rows, cols] tensor.
//
// Template parameters (manifest constexprs, in order):
//   T      float, __half or __nv_bfloat16 (input and output)
//   BLOCK  threads per block (the manifest's launch.block), 256, 512 or 1024
// Runtime parameters:
//   in   const T*  row r starts at in + r * in_row_stride; columns contiguous
//   out  T*        row r starts at out + r * out_row_stride
//   rows, cols, in_row_stride, out_row_stride  int64_t (strides in elements)
// Launch: block = BLOCK, grid = cdiv(rows, BLOCK / G), where G =
// kpack_tpl::row_group<T, BLOCK, CV * 16, MAXG>(cols) threads share a row:
// 8, 16, 32, 64 or 128 for rows of at most 1, 2, 4, 8 or 16 KiB (half that
// at BLOCK=1024, CV = 4, which also has groups of 256 for rows of at most
// 16 KiB), the whole block for longer rows (the manifest's grid expression
// spells the same thresholds out).
//
// out[r, c] = exp(in[r, c] - max_r) / sum_c' exp(in[r, c'] - max_r), computed
// in fp32 and rounded once to T.  Like torch.softmax: -inf entries give 0, a
// row of only -inf (or with +inf or NaN) gives NaN; cols = 0 writes nothing.
//
// The row is read from global memory once when it fits the register cache
// (CV 16-byte vectors per thread, CV = 8 at BLOCK <= 512 and 4 at 1024: a
// group smaller than the block holds its whole row at CV = 8, and a whole
// block of 256 caches 8192 f32 / 16384 f16 columns, of 512 or 1024 16384 f32
// / 32768 f16; at 64 registers, BLOCK=512 still runs two blocks per SM, so
// one block's reduction overlaps the other's loads), and the rest of a
// longer row is read twice (an online max/sum pass, then the output pass;
// the second read mostly hits L2).  Each row is split into a head of
// < 16/sizeof(T) elements up to the first 16-byte boundary of the input row,
// 16-byte vectors, and a tail, so any stride and any cols work with 16-byte
// loads; stores are 16-byte too when the output row has the same alignment,
// else per element.
// In place (out == in with equal strides) is allowed.
#pragma once

#include "common.cuh"

namespace kpack_softmax {

// One row handled by a group of G threads (8 to 256 threads, or the whole
// block); t is the thread's index in the group.  cols = 0 reads and writes
// nothing but still joins the group's reduction (spare rows of the last
// block, whose groups share warps and barriers with real rows).
template <typename T, int G, int CV, int BLOCK>
__device__ __forceinline__ void softmax_row(const T* x, T* y, int64_t cols, int t,
                                            kpack_tpl::MaxSum* red) {
  using namespace kpack_tpl;
  constexpr int VEC = Vec<T>::kN;
  // A group smaller than the block gets rows of at most G * CV vectors
  // (row_group's thresholds), so they never overflow the cache.
  constexpr bool kFits = G < BLOCK;
  constexpr int UO = 2;  // vectors in flight per step beyond the cache

  const int64_t head = min64(elems_to_align16(x), cols);
  const int64_t nvec = (cols - head) / VEC;
  const int64_t tail0 = head + nvec * VEC;
  const int64_t ntail = cols - tail0;  // < VEC
  const T* xv = x + head;
  T* yv = y + head;

  // Pass 1: load the cached part (all loads in flight at once), then its
  // max, then its sum; then fold in any overflow vectors online.  This
  // thread's cached vectors are src[i * G] for i < mine: 32-bit bounds and
  // immediate address offsets keep the register count down.
  const int mine = nvec > t ? static_cast<int>(min64(CV, (nvec - t - 1) / G + 1)) : 0;
  const uint4* src = reinterpret_cast<const uint4*>(xv) + t;
  uint4 c[CV];
#pragma unroll
  for (int i = 0; i < CV; ++i) {
    if (i < mine) c[i] = load16(src + i * G);
  }
  const bool has_head = t < head;
  const bool has_tail = t < ntail;
  const float xh = has_head ? load_f(x + t) : kNegInf;
  const float xt = has_tail ? load_f(x + tail0 + t) : kNegInf;

  float m = fmaxf(xh, xt);
#pragma unroll
  for (int i = 0; i < CV; ++i) {
    if (i < mine) {
      float f[VEC];
      unpack<T>(c[i], f);
#pragma unroll
      for (int j = 0; j < VEC; ++j) m = fmaxf(m, f[j]);
    }
  }
  const float ms = safe_max(m);
  float s = exp_sum_term(xh - ms) + exp_sum_term(xt - ms);
#pragma unroll
  for (int i = 0; i < CV; ++i) {
    if (i < mine) {
      float f[VEC];
      unpack<T>(c[i], f);
#pragma unroll
      for (int j = 0; j < VEC; ++j) s += exp_sum_term(f[j] - ms);
    }
  }
  MaxSum st = {m, s};
  if constexpr (!kFits) fold_vectors<T, G, UO>(xv, static_cast<int64_t>(CV) * G, nvec, t, st);

  st = group_reduce<G, BLOCK>(st, red);
  const float mx = safe_max(st.m);
  const float inv = 1.f / st.s;

  // Pass 2: normalise and store.
  const bool vstore = aligned16(yv);
  auto put = [&](int64_t v, const uint4& raw) {
    float f[VEC];
    unpack<T>(raw, f);
#pragma unroll
    for (int j = 0; j < VEC; ++j) f[j] = exp_shifted(f[j] - mx) * inv;
    if (vstore) {
      store16(yv + v * VEC, pack<T>(f));
    } else {
#pragma unroll
      for (int j = 0; j < VEC; ++j) store_f(yv + v * VEC + j, f[j]);
    }
  };
#pragma unroll
  for (int i = 0; i < CV; ++i) {
    if (i < mine) put(static_cast<int64_t>(i) * G + t, c[i]);
  }
  if (has_head) store_f(y + t, exp_shifted(xh - mx) * inv);
  if (has_tail) store_f(y + tail0 + t, exp_shifted(xt - mx) * inv);
  if constexpr (kFits) return;
  for (int64_t v0 = static_cast<int64_t>(CV) * G + t; v0 < nvec; v0 += static_cast<int64_t>(UO) * G) {
    uint4 r[UO];
#pragma unroll
    for (int u = 0; u < UO; ++u) {
      const int64_t v = v0 + static_cast<int64_t>(u) * G;
      if (v < nvec) r[u] = load16(xv + v * VEC);
    }
#pragma unroll
    for (int u = 0; u < UO; ++u) {
      const int64_t v = v0 + static_cast<int64_t>(u) * G;
      if (v < nvec) put(v, r[u]);
    }
  }
}

}  // namespace kpack_softmax

template <typename T, int BLOCK>
__device__ __forceinline__ void softmax(const T* in, T* out, int64_t rows, int64_t cols,
                                        int64_t in_row_stride, int64_t out_row_stride) {
  using namespace kpack_tpl;
  // 16-byte vectors cached per thread: 32 registers at BLOCK <= 512, 16 at
  // 1024 threads (where __launch_bounds__ leaves 64 registers per thread).
  // BLOCK=1024 is for rows beyond the cache and for few rows.
  constexpr int CV = BLOCK >= 1024 ? 4 : 8;
  __shared__ MaxSum red[BLOCK / 32 + 1];
  const int tid = static_cast<int>(threadIdx.x);

  // Groups hold their rows whole in the cache: CV * 16 bytes per thread.
  // At BLOCK=1024 a group may be 256 threads (4 rows a block): a row of
  // 8-16 KiB, 4096 f32 columns say, then gets 16 cached floats per thread,
  // Triton's layout for it, instead of the whole block and its barriers
  // (0.41 of the copy ceiling that way at 32768 x 4096 f32 on an H100,
  // bench/RESULTS.md).
  constexpr int MAXG = BLOCK >= 1024 ? 256 : 128;
  with_row_group<T, BLOCK, CV * 16, MAXG>(cols, [&](auto g) {
    constexpr int G = decltype(g)::value;
    if constexpr (G == BLOCK) {
      const int64_t row = blockIdx.x;
      if (row >= rows) return;  // whole block: __syncthreads stays uniform
      kpack_softmax::softmax_row<T, G, CV, BLOCK>(in + row * in_row_stride, out + row * out_row_stride, cols,
                                                  tid, red);
    } else {
      // A spare group of the last block joins its warp's shuffles and the
      // block's barrier with an empty row.
      const int64_t row = static_cast<int64_t>(blockIdx.x) * (BLOCK / G) + tid / G;
      const bool active = row < rows;
      const int64_t r = active ? row : 0;
      kpack_softmax::softmax_row<T, G, CV, BLOCK>(in + r * in_row_stride, out + r * out_row_stride,
                                                  active ? cols : 0, tid % G, red);
    }
  });
}
