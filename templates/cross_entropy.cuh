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
// Launch: block = BLOCK, grid = cdiv(rows, BLOCK / G), where G =
// kpack_tpl::row_group<T, BLOCK, 128>(vocab) threads share a row: 8, 16, 32,
// 64 or 128 for rows of at most 1, 2, 4, 8 or 16 KiB, the whole block for
// longer rows (the manifest's grid expression spells the same thresholds
// out), so each thread has about eight 16-byte vectors of its row to read.
//
// loss[r] = logsumexp(logits[r, :]) - logits[r, targets[r]], in fp32;
//         = 0    where targets[r] == ignore_index (engines pass -100);
//         = NaN  where the target is otherwise outside [0, vocab) (PyTorch
//                would assert; the kernel never reads out of bounds).
// Ignored rows are not read at all (a group's spare or ignored row still
// joins the group's reduction, with nothing to read); other rows are read exactly once, with
// an online max/sum (one rescale per 4 vectors, so ~1 exp per element) and
// 4 x 16-byte loads in flight per thread.  Rows of any length and alignment: a head of < 16/sizeof(T)
// elements up to the first 16-byte boundary, 16-byte vectors, a tail.
#pragma once

#include "common.cuh"

namespace kpack_ce {

// logsumexp of x[0, n) over a group of G threads (t = index in the group);
// every thread of the group gets the result (-inf for n = 0).
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
  // 4 vectors a step also for groups: 8 (a group's whole row at once) took
  // the kernel from 40 to 60 registers and measured slower on the H200.
  fold_vectors<T, G, 4>(x + head, 0, nvec, t, st);
  st = group_reduce<G, BLOCK>(st, red);
  return st.m + logf(st.s);
}

}  // namespace kpack_ce

namespace kpack_ce {

// Rows of G threads each: BLOCK / G rows per block.
template <typename T, int BLOCK, int G>
__device__ __forceinline__ void ce_rows(const T* logits, const int64_t* targets, float* loss, int64_t rows,
                                        int64_t vocab, int64_t row_stride, int64_t ignore_index,
                                        kpack_tpl::MaxSum* red) {
  using namespace kpack_tpl;
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (BLOCK / G) + tid / G;
  const bool active = row < rows;
  if constexpr (G == BLOCK) {
    if (!active) return;  // whole block: __syncthreads stays uniform
  }
  const int64_t r = active ? row : 0;
  const T* x = logits + r * row_stride;

  // Every thread reads the target (one broadcast load per group), so the
  // ignore test is uniform over the group and ignored rows (padding) skip
  // the whole row read, as Triton implementations do.
  const int64_t target = active ? targets[r] : ignore_index;
  const bool skip = target == ignore_index;
  const bool writer = active && tid % G == 0;
  if constexpr (G == BLOCK) {
    if (skip) {
      if (writer) loss[r] = 0.f;
      return;
    }
  }
  // The writer fetches the target logit before the row, so its latency hides
  // behind the row's loads instead of following the reduction.
  float target_logit = __builtin_nanf("");
  if (writer && !skip && target >= 0 && target < vocab) target_logit = load_f(x + target);

  const float lse = row_logsumexp<T, G, BLOCK>(x, skip ? 0 : vocab, tid % G, red);
  if (writer) loss[r] = skip ? 0.f : lse - target_logit;
}

}  // namespace kpack_ce

template <typename T, int BLOCK>
__device__ __forceinline__ void cross_entropy_fwd(const T* logits, const int64_t* targets, float* loss,
                                                  int64_t rows, int64_t vocab, int64_t row_stride,
                                                  int64_t ignore_index) {
  using namespace kpack_tpl;
  __shared__ MaxSum red[BLOCK / 32 + 1];
  with_row_group<T, BLOCK, 128>(vocab, [&](auto g) {
    kpack_ce::ce_rows<T, BLOCK, decltype(g)::value>(logits, targets, loss, rows, vocab, row_stride, ignore_index,
                                                    red);
  });
}
