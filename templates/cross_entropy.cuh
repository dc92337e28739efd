// cross_entropy.cuh - per-row cross-entropy loss (forward), one pass.
//
// Template parameters (manifest constexprs, in order):
//   T      float, __half or __nv_bfloat16: the logits
//   BLOCK  threads per block (the manifest's launch.block), 256, 512 or 1024;
//          1024 runs one block per SM (~44 registers), for few long rows
// Runtime parameters:
//   logits        const T*        row r starts at logits + r * row_stride;
//                                 the vocab dimension is contiguous
//   targets       const int64_t*  [rows]
//   loss          float*          [rows]
//   rows, vocab, row_stride (in elements), ignore_index   int64_t
// Launch: block = BLOCK,
//   grid = cdiv(rows, R), R = 1 + (BLOCK/32 - 1) * (1 - min(1, vocab * sizeof(T) / 4097)):
// a warp per row for rows of at most 4 KiB, else a block per row
// (see kpack_tpl::warp_per_row).
//
// loss[r] = logsumexp(logits[r, :]) - logits[r, targets[r]], in fp32;
//         = 0    where targets[r] == ignore_index (engines pass -100);
//         = NaN  where the target is otherwise outside [0, vocab) (PyTorch
//                would assert; the kernel never reads out of bounds).
// Ignored rows are not read at all; other rows are read exactly once, with
// an online max/sum (one rescale per 4 vectors, so ~1 exp per element) and
// 4 x 16-byte loads in flight per thread.  Rows of any length and alignment: a head of < 16/sizeof(T)
// elements up to the first 16-byte boundary, 16-byte vectors, a tail.
#pragma once

#include "common.cuh"

namespace kpack_ce {

// logsumexp of x[0, n) over a group of G threads (t = index in the group);
// every thread of the group gets the result.
template <typename T, int G, int BLOCK>
__device__ __forceinline__ float row_logsumexp(const T* x, int64_t n, int t, kpack_tpl::MaxSum* red) {
  using namespace kpack_tpl;
  constexpr int VEC = Vec<T>::kN;
  const int64_t head = min64(elems_to_align16(x), n);
  const int64_t nvec = (n - head) / VEC;
  const int64_t tail0 = head + nvec * VEC;

  const float e[2] = {t < head ? load_f(x + t) : kNegInf,
                      t < n - tail0 ? load_f(x + tail0 + t) : kNegInf};
  MaxSum st = {kNegInf, 0.f};
  fold(st, e);
  fold_vectors<T, G, 4>(x + head, 0, nvec, t, st);
  if constexpr (G == 32) {
    st = warp_reduce(st);
  } else {
    st = block_reduce<BLOCK>(st, red);
  }
  return st.m + logf(st.s);
}

}  // namespace kpack_ce

template <typename T, int BLOCK>
__device__ __forceinline__ void cross_entropy_fwd(const T* logits, const int64_t* targets, float* loss,
                                                  int64_t rows, int64_t vocab, int64_t row_stride,
                                                  int64_t ignore_index) {
  using namespace kpack_tpl;
  __shared__ MaxSum red[BLOCK / 32 + 1];
  const int tid = static_cast<int>(threadIdx.x);

  const bool warp_mode = warp_per_row<T>(vocab);
  const int64_t row = warp_mode ? static_cast<int64_t>(blockIdx.x) * (BLOCK / 32) + tid / 32
                                : static_cast<int64_t>(blockIdx.x);
  if (row >= rows) return;  // whole warp (warp mode) or whole block
  const T* x = logits + row * row_stride;

  // Every thread reads the target (one broadcast load per warp), so the
  // ignore test is uniform over the group and ignored rows (padding) skip
  // the whole row read, as Triton implementations do.
  const int64_t target = targets[row];
  const bool writer = warp_mode ? tid % 32 == 0 : tid == 0;
  if (target == ignore_index) {
    if (writer) loss[row] = 0.f;
    return;
  }
  // The writer fetches the target logit before the row, so its latency hides
  // behind the row's loads instead of following the reduction.
  float target_logit = __builtin_nanf("");
  if (writer && target >= 0 && target < vocab) target_logit = load_f(x + target);

  const float lse = warp_mode ? kpack_ce::row_logsumexp<T, 32, BLOCK>(x, vocab, tid % 32, nullptr)
                              : kpack_ce::row_logsumexp<T, BLOCK, BLOCK>(x, vocab, tid, red);
  if (writer) loss[row] = lse - target_logit;
}
