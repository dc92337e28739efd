// attention_mask_fill.cuh - ragged additive attention mask.
//
// Template parameters (manifest constexprs, in order):
//   T       float, __half or __nv_bfloat16: the mask's element type
//   CAUSAL  bool: causal (bottom-right aligned) or full attention
//   TILE    mask elements per work item (a multiple of 256 * 16/sizeof(T))
// Runtime parameters:
//   q_len, kv_len  const int32_t* [num_requests]   (device)
//   mask_offsets   const int64_t* [num_requests]   (device) start of each
//                  request's block: the exclusive prefix sum of q_len*kv_len
//   mask           T*  the packed mask
//   num_requests, max_q_len, max_kv_len  int32_t
// Launch: block = 256, grid = (min(max(4096, TILE), cdiv(max_q_len *
// max_kv_len, TILE) * min(num_requests, 512)), min(cdiv(num_requests, 512),
// 65535)).
//
// Request r owns the row-major q_len[r] x kv_len[r] block at
// mask + mask_offsets[r]: element (q, k) is 0 where attention is allowed and
// -inf where it is masked, with allowed = !CAUSAL || k <= kv_len - q_len + q
// (the query tokens are the last q_len of the kv_len tokens; rows with
// kv_len - q_len + q < 0 are fully masked).  Requests with q_len <= 0 or
// kv_len <= 0 write nothing, and nothing outside the requests' blocks is
// written, so gaps between blocks are left as they were.
//
// Work is balanced over the elements actually written, not over the largest
// request: the requests are taken in batches of 512 (batch y, y +
// gridDim.y, ...), each request's block is cut into TILE-element work items
// (the last one shorter), and the batch's work items are numbered through
// an exclusive prefix sum of the per-request counts that every block
// computes in shared memory.  Block x takes items x, x + gridDim.x, ... and
// finds each item's request by binary search over that prefix sum.  So a
// ragged batch (long prefills beside q=1 decodes) keeps every block busy,
// and max_q_len / max_kv_len / num_requests only size the grid: any grid is
// correct, an undersized one just slower.
//
// Each request's block is contiguous, so an item is a flat range of the
// mask.  Stores are 16-byte vectors on 16-byte-aligned addresses whatever
// kv_len and the offsets are (even for 3-wide rows), each warp's 32 of them
// on whole 128-byte lines; the partial vectors at the ends of a range are
// written element by element, so neighbouring requests sharing a 16-byte
// word never overlap.  A causal vector inside one
// mask row is a step (allowed up to a column, masked after it): one
// comparison per element against that column, the row found with a
// multiply-shift division precomputed per request.
#pragma once

#include "common.cuh"

namespace kpack_mask {

// Bit patterns of +0 and -inf in T.
template <typename T>
struct Bits;
template <>
struct Bits<float> {
  static constexpr uint32_t kMasked = 0xff800000u;
};
template <>
struct Bits<__half> {
  static constexpr uint32_t kMasked = 0xfc00u;
};
template <>
struct Bits<__nv_bfloat16> {
  static constexpr uint32_t kMasked = 0xff80u;
};

template <typename T>
__device__ __forceinline__ void store_bits(T* p, uint32_t bits) {
  if constexpr (sizeof(T) == 4) {
    *reinterpret_cast<uint32_t*>(p) = bits;
  } else {
    *reinterpret_cast<uint16_t*>(p) = static_cast<uint16_t>(bits);
  }
}

// Unsigned division by a run-time divisor 1 <= d <= 2^30 as a multiply and
// a shift (Granlund and Montgomery; the form CUTLASS's FastDivmod uses):
// valid for dividends n < 2^31.  mul == 0 stands for d == 1.
struct FastDiv {
  uint32_t mul;
  uint32_t shift;
};

__device__ __forceinline__ FastDiv make_fast_div(uint32_t d) {
  if (d <= 1) return {0u, 0u};
  const uint32_t l = 32u - static_cast<uint32_t>(__clz(d - 1));  // ceil(log2 d)
  const uint32_t p = 31u + l;
  return {static_cast<uint32_t>(((1ull << p) + d - 1) / d), p - 32u};
}

__device__ __forceinline__ uint32_t fast_div(uint32_t n, FastDiv f) {
  return f.mul == 0 ? n : __umulhi(n, f.mul) >> f.shift;
}

}  // namespace kpack_mask

namespace kpack_mask {

constexpr int kThreads = 256;  // threads per block: the manifest's launch.block
// Requests per batch (the manifest's grid uses it too).  512 keeps the
// block's shared memory at 14 KiB, so 8 blocks (2048 threads) fit an SM.
constexpr int kBatch = 512;
constexpr int kPerThread = kBatch / kThreads;

// A batch's requests as every block of its row of the grid sees them.
struct Batch {
  int64_t item_end[kBatch];  // inclusive prefix sum of the work items per request
  int64_t offset[kBatch];    // mask_offsets
  int32_t q[kBatch], kv[kBatch];
  uint32_t div_mul[kBatch];  // FastDiv of kv (mul; the shift is recomputed)
  int64_t warp_total[kThreads / 32];
};

// Fills elements [cs, ce) of request (ql, kl) whose block starts at slot
// coordinate base (see below); cs < ce.  All 256 threads call it.
template <typename T, bool CAUSAL, int TILE>
__device__ __forceinline__ void fill_range(T* mask, int64_t pre, int64_t base, int32_t ql, int32_t kl,
                                           FastDiv kdiv, int64_t cs, int64_t ce, int tid) {
  using namespace kpack_tpl;
  constexpr int VEC = Vec<T>::kN;
  constexpr uint32_t MASKED = Bits<T>::kMasked;
  // (q0, k0): row and column of the range's first element.  Within the
  // range, offsets stay below TILE, so k0 + offset fits in 31 bits (kl <=
  // 2^30 for the fast division, else a hardware division) and each element
  // needs one 32-bit division instead of a 64-bit one.
  int64_t q0 = 0;
  uint32_t k0 = 0;
  const bool fast = kdiv.mul != 0 || kl == 1;  // kl <= 2^30
  if constexpr (CAUSAL) {
    if (fast && cs < (int64_t{1} << 31)) {
      q0 = fast_div(static_cast<uint32_t>(cs), kdiv);
    } else {
      q0 = cs / kl;
    }
    k0 = static_cast<uint32_t>(cs - q0 * kl);
  }
  // Row and column of the element at range offset o: d = o + k0.
  auto rowcol = [&](uint32_t d, uint32_t* q, int32_t* k) {
    *q = fast ? fast_div(d, kdiv) : d / static_cast<uint32_t>(kl);
    *k = static_cast<int32_t>(d - *q * static_cast<uint32_t>(kl));
  };
  // allowed iff k <= thr(q) = kv_len - q_len + q0 + q (fits in 32 bits:
  // q0 + q < q_len).
  const int32_t thr0 = kl - ql + static_cast<int32_t>(q0);

  // Slot coordinates: element i of the mask is at g = i + pre, and slot
  // g / VEC is a 16-byte-aligned address range.
  const int64_t g0 = base + cs;
  const int64_t g1 = base + ce;
  const int64_t sa = (g0 + VEC - 1) / VEC;  // first whole slot
  const int64_t sb = g1 / VEC;              // end of the whole slots
  T* const slot_a = mask + (sa * VEC - pre);
  const int32_t o_a = static_cast<int32_t>(sa * VEC - g0);  // range offset of slot sa (< VEC)
  const int32_t nslots = sb > sa ? static_cast<int32_t>(sb - sa) : 0;

  // Thread tid writes the slots at position tid of a 256-slot stretch that
  // starts on a 128-byte line (lead slots before slot sa), so each warp's 32
  // vectors fill 4 whole lines instead of straddling 5.  A request that
  // starts mid-line made every warp of it straddle: the f32 ragged batch of
  // bench/ ran at 0.88 of the copy ceiling that way, 1.01 line-aligned
  // (bench/RESULTS.md, 2026-11-23 night).
  const int32_t lead = static_cast<int32_t>((reinterpret_cast<uintptr_t>(slot_a) >> 4) & 7u);
  for (int32_t i = tid >= lead ? tid - lead : tid - lead + kThreads; i < nslots; i += kThreads) {
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if constexpr (CAUSAL) {
      const uint32_t d = static_cast<uint32_t>(o_a + i * VEC) + k0;
      uint32_t q;
      int32_t k;
      rowcol(d, &q, &k);
      const int32_t thr = thr0 + static_cast<int32_t>(q);
      uint32_t bits[VEC];
      if (k + VEC <= kl) {
        // One mask row (k + j < kl, so no overflow): a step at column thr.
#pragma unroll
        for (int j = 0; j < VEC; ++j) bits[j] = k + j <= thr ? 0u : MASKED;
      } else {
        int32_t kk = k, t = thr;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          bits[j] = kk <= t ? 0u : MASKED;
          if (++kk == kl) {  // next row
            kk = 0;
            ++t;
          }
        }
      }
      if constexpr (VEC == 4) {
        v = make_uint4(bits[0], bits[1], bits[2], bits[3]);
      } else {
        v = make_uint4(bits[0] | bits[1] << 16, bits[2] | bits[3] << 16, bits[4] | bits[5] << 16,
                       bits[6] | bits[7] << 16);
      }
    }
    // __stwb: st.global.wb.v4, one 16-byte store (a plain uint4 store
    // through this T-derived pointer was split into 4- or 8-byte stores).
    __stwb(reinterpret_cast<uint4*>(slot_a + i * VEC), v);
  }

  // The < VEC elements before slot sa and the < VEC after slot sb (or the
  // whole range when it lies inside one slot), one element per thread.
  const int64_t h_end = min64(g1, sa * VEC);
  const int64_t t_beg = max64(h_end, sb * VEC);
  const int nh = static_cast<int>(h_end - g0), nt = static_cast<int>(g1 - t_beg);
  if (tid < nh + nt) {
    const int64_t g = tid < nh ? g0 + tid : t_beg + (tid - nh);
    uint32_t bits = 0u;
    if constexpr (CAUSAL) {
      uint32_t q;
      int32_t k;
      rowcol(static_cast<uint32_t>(g - g0) + k0, &q, &k);
      bits = k <= thr0 + static_cast<int32_t>(q) ? 0u : MASKED;
    }
    store_bits(mask + (g - pre), bits);
  }
}

}  // namespace kpack_mask

template <typename T, bool CAUSAL, int TILE>
__device__ __forceinline__ void attention_mask_fill(const int32_t* q_len, const int32_t* kv_len,
                                                    const int64_t* mask_offsets, T* mask,
                                                    int32_t num_requests, int32_t max_q_len,
                                                    int32_t max_kv_len) {
  using namespace kpack_tpl;
  using kpack_mask::kBatch;
  using kpack_mask::kPerThread;
  using kpack_mask::kThreads;
  constexpr int VEC = Vec<T>::kN;
  static_assert(TILE > 0 && TILE % (kThreads * VEC) == 0, "TILE must be a multiple of 256 vectors");
  (void)max_q_len;  // grid sizing only
  (void)max_kv_len;
  __shared__ kpack_mask::Batch sb;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % 32, warp = tid / 32;

  // mask is element-aligned, so pre (its elements past a 16-byte boundary)
  // is an integer.
  const int64_t pre = static_cast<int64_t>((reinterpret_cast<uintptr_t>(mask) & 15u) / sizeof(T));

  for (int64_t b0 = static_cast<int64_t>(blockIdx.y) * kBatch; b0 < num_requests;
       b0 += static_cast<int64_t>(gridDim.y) * kBatch) {
    const int nb = static_cast<int>(min64(kBatch, num_requests - b0));

    // Work items per request, kPerThread consecutive requests per thread,
    // then a block-wide inclusive scan into item_end.
    int64_t run[kPerThread];
    int64_t sum = 0;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int i = tid * kPerThread + j;
      int32_t ql = 0, kl = 0;
      if (i < nb) {
        ql = q_len[b0 + i];
        kl = kv_len[b0 + i];
        sb.offset[i] = mask_offsets[b0 + i];
      }
      if (ql <= 0 || kl <= 0) ql = kl = 0;
      sb.q[i] = ql;
      sb.kv[i] = kl;
      sb.div_mul[i] = kl >= 2 && kl <= (1 << 30) ? kpack_mask::make_fast_div(static_cast<uint32_t>(kl)).mul : 0u;
      sum += (static_cast<int64_t>(ql) * kl + TILE - 1) / TILE;
      run[j] = sum;
    }
    int64_t incl = sum;  // inclusive scan of the threads' sums within the warp
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int64_t y = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += y;
    }
    if (lane == 31) sb.warp_total[warp] = incl;
    __syncthreads();
    int64_t before = incl - sum;
    int64_t total = 0;
#pragma unroll
    for (int w = 0; w < kThreads / 32; ++w) {
      const int64_t t = sb.warp_total[w];
      if (w < warp) before += t;
      total += t;
    }
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) sb.item_end[tid * kPerThread + j] = before + run[j];
    __syncthreads();

    for (int64_t item = blockIdx.x; item < total; item += gridDim.x) {
      // The request of this item: the first r with item_end[r] > item.
      int lo = 0, hi = nb - 1;
      while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (sb.item_end[mid] > item) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      const int32_t ql = sb.q[lo], kl = sb.kv[lo];
      const int64_t first = lo > 0 ? sb.item_end[lo - 1] : 0;
      const int64_t cs = (item - first) * TILE;
      const int64_t len = static_cast<int64_t>(ql) * kl;
      const uint32_t mul = sb.div_mul[lo];
      const kpack_mask::FastDiv kdiv = {
          mul, mul != 0 ? 31u - static_cast<uint32_t>(__clz(static_cast<uint32_t>(kl) - 1)) : 0u};
      kpack_mask::fill_range<T, CAUSAL, TILE>(mask, pre, sb.offset[lo] + pre, ql, kl, kdiv, cs,
                                              min64(cs + TILE, len), tid);
    }
    __syncthreads();  // the next batch overwrites sb
  }
}
