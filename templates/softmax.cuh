// softmax.cuh - softmax over the last dimension of a [rows, cols] tensor.
//
// Template parameters (manifest constexprs, in order):
//   T      float, __half or __nv_bfloat16 (input and output)
//   BLOCK  threads per block (the manifest's launch.block), 256, 512 or 1024
// Runtime parameters:
//   in   const T*  row r starts at in + r * in_row_stride; columns contiguous
//   out  T*        row r starts at out + r * out_row_stride
//   rows, cols, in_row_stride, out_row_stride  int64_t (strides in elements)
// Launch: block = BLOCK,
//   grid = cdiv(rows, R), R = 1 + (BLOCK/32 - 1) * (1 - min(1, cols * sizeof(T) / 4097)):
// rows of at most 4 KiB get one warp each (R = BLOCK/32 rows per block),
// longer rows get the whole block (R = 1).  See kpack_tpl::warp_per_row.
//
// out[r, c] = exp(in[r, c] - max_r) / sum_c' exp(in[r, c'] - max_r), computed
// in fp32 and rounded once to T.  Like torch.softmax: -inf entries give 0, a
// row of only -inf (or with +inf or NaN) gives NaN; cols = 0 writes nothing.
//
// The row is read from global memory once when it fits the register cache
// (CV 16-byte vectors per thread: BLOCK=256 caches 8192 f32 / 16384 f16
// columns, BLOCK=512 and 1024 16384 f32 / 32768 f16; at 64 registers,
// BLOCK=512 still runs two blocks per SM, so one block's reduction overlaps
// the other's loads), and the rest of a longer row is read twice (an online max/sum pass, then the output pass; the second read
// mostly hits L2).  Each row is split into a head of < 16/sizeof(T) elements
// up to the first 16-byte boundary of the input row, 16-byte vectors, and a
// tail, so any stride and any cols work with 16-byte loads; stores are
// 16-byte too when the output row has the same alignment, else per element.
// In place (out == in with equal strides) is allowed.
#pragma once

#include "common.cuh"

namespace kpack_softmax {

// One row handled by a group of G threads (a warp, or the whole block);
// t is the thread's index in the group.
template <typename T, int G, int CV, int BLOCK>
__device__ __forceinline__ void softmax_row(const T* x, T* y, int64_t cols, int t,
                                            kpack_tpl::MaxSum* red) {
  using namespace kpack_tpl;
  constexpr int VEC = Vec<T>::kN;
  // Vectors in flight per step beyond the cache.  A warp's row overflows
  // only at BLOCK=1024 (half of a 4 KiB row, just read, so L1-hot); one
  // vector there keeps the 256-thread kernels within 64 registers.
  constexpr int UO = G == 32 ? 1 : 2;

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
  float s = exp_shifted(xh - ms) + exp_shifted(xt - ms);
#pragma unroll
  for (int i = 0; i < CV; ++i) {
    if (i < mine) {
      float f[VEC];
      unpack<T>(c[i], f);
#pragma unroll
      for (int j = 0; j < VEC; ++j) s += exp_shifted(f[j] - ms);
    }
  }
  MaxSum st = {m, s};
  fold_vectors<T, G, UO>(xv, static_cast<int64_t>(CV) * G, nvec, t, st);

  if constexpr (G == 32) {
    st = warp_reduce(st);
  } else {
    st = block_reduce<BLOCK>(st, red);
  }
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

  if (warp_per_row<T>(cols)) {
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (BLOCK / 32) + tid / 32;
    if (row >= rows) return;  // whole warp: the shuffles stay converged
    kpack_softmax::softmax_row<T, 32, CV, BLOCK>(in + row * in_row_stride, out + row * out_row_stride,
                                                 cols, tid % 32, nullptr);
  } else {
    const int64_t row = blockIdx.x;
    if (row >= rows) return;  // whole block: __syncthreads stays uniform
    kpack_softmax::softmax_row<T, BLOCK, CV, BLOCK>(in + row * in_row_stride,
                                                    out + row * out_row_stride, cols, tid, red);
  }
}
