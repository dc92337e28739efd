// attention_mask_fill.cuh - ragged additive attention mask.
//
// Template parameters (manifest constexprs, in order):
//   T       float, __half or __nv_bfloat16: the mask's element type
//   CAUSAL  bool: causal (bottom-right aligned) or full attention
//   TILE    mask elements per block per step (a multiple of 256 * 16/sizeof(T))
// Runtime parameters:
//   q_len, kv_len  const int32_t* [num_requests]   (device)
//   mask_offsets   const int64_t* [num_requests]   (device) start of each
//                  request's block: the exclusive prefix sum of q_len*kv_len
//   mask           T*  the packed mask
//   num_requests, max_q_len, max_kv_len  int32_t
// Launch: grid = (cdiv(max_q_len * max_kv_len, TILE), min(num_requests, 65535)),
// block = 256.
//
// Request r owns the row-major q_len[r] x kv_len[r] block at
// mask + mask_offsets[r]: element (q, k) is 0 where attention is allowed and
// -inf where it is masked, with allowed = !CAUSAL || k <= kv_len - q_len + q
// (the query tokens are the last q_len of the kv_len tokens; rows with
// kv_len - q_len + q < 0 are fully masked).  Requests with q_len <= 0 or
// kv_len <= 0 write nothing, and nothing outside the requests' blocks is
// written, so gaps between blocks are left as they were.
//
// Each request's block is contiguous, so the kernel fills it as one flat
// range: block (x, y) writes elements [x*TILE, x*TILE + TILE) of request y
// (then of y + gridDim.y ...) and repeats gridDim.x*TILE further on, so
// max_q_len / max_kv_len / num_requests only size the grid: an underestimate
// stays correct, just slower.  Stores are 16-byte vectors on 16-byte-aligned
// addresses whatever kv_len and the offsets are (even for 3-wide rows);
// the partial vectors at the ends of a range are written element by element,
// so neighbouring requests sharing a 16-byte word never overlap.
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

}  // namespace kpack_mask

template <typename T, bool CAUSAL, int TILE>
__device__ __forceinline__ void attention_mask_fill(const int32_t* q_len, const int32_t* kv_len,
                                                    const int64_t* mask_offsets, T* mask,
                                                    int32_t num_requests, int32_t max_q_len,
                                                    int32_t max_kv_len) {
  using namespace kpack_tpl;
  constexpr int NT = 256;  // threads per block: the manifest's launch.block
  constexpr int VEC = Vec<T>::kN;
  constexpr uint32_t MASKED = kpack_mask::Bits<T>::kMasked;
  static_assert(TILE > 0 && TILE % (NT * VEC) == 0, "TILE must be a multiple of 256 vectors");
  (void)max_q_len;  // grid sizing only
  (void)max_kv_len;
  const int tid = static_cast<int>(threadIdx.x);

  // Work in "slot coordinates": element i of the mask is at g = i + pre, and
  // slot g / VEC is a 16-byte-aligned address range.  mask is element-aligned,
  // so pre is an integer.
  const int64_t pre = static_cast<int64_t>((reinterpret_cast<uintptr_t>(mask) & 15u) / sizeof(T));

  for (int64_t r = blockIdx.y; r < num_requests; r += gridDim.y) {
    const int32_t ql = q_len[r];
    const int32_t kl = kv_len[r];
    if (ql <= 0 || kl <= 0) continue;
    const int64_t len = static_cast<int64_t>(ql) * kl;
    const int64_t base = mask_offsets[r] + pre;

    for (int64_t cs = static_cast<int64_t>(blockIdx.x) * TILE; cs < len;
         cs += static_cast<int64_t>(gridDim.x) * TILE) {
      const int64_t ce = min64(cs + TILE, len);
      // (q0, k0): row and column of the chunk's first element.  Within the
      // chunk, offsets stay below TILE, so k0 + offset fits in 32 bits and
      // each slot needs one 32-bit division instead of a 64-bit one.
      int64_t q0 = 0;
      uint32_t k0 = 0;
      if constexpr (CAUSAL) {
        q0 = cs / kl;
        k0 = static_cast<uint32_t>(cs - q0 * kl);
      }
      const int64_t g0 = base + cs;
      const int64_t g1 = base + ce;
      const int64_t s1 = (g1 + VEC - 1) / VEC;

      for (int64_t s = g0 / VEC + tid; s < s1; s += NT) {
        const int64_t lo = max64(s * VEC, g0);
        const int64_t hi = min64(s * VEC + VEC, g1);
        uint32_t bits[VEC];
        if constexpr (CAUSAL) {
          const uint32_t d = static_cast<uint32_t>(lo - g0) + k0;
          int32_t k = static_cast<int32_t>(d % static_cast<uint32_t>(kl));
          // allowed iff k <= thr, thr = kv_len - q_len + q
          int32_t thr = kl - ql + static_cast<int32_t>(q0) +
                        static_cast<int32_t>(d / static_cast<uint32_t>(kl));
#pragma unroll
          for (int i = 0; i < VEC; ++i) {
            bits[i] = k <= thr ? 0u : MASKED;
            if (++k == kl) {  // next row
              k = 0;
              ++thr;
            }
          }
        } else {
#pragma unroll
          for (int i = 0; i < VEC; ++i) bits[i] = 0u;
        }

        // bits[i] is the value of slot coordinate lo + i, i.e. mask[lo - pre + i].
        if (hi - lo == VEC) {
          uint4 v;
          if constexpr (VEC == 4) {
            v = make_uint4(bits[0], bits[1], bits[2], bits[3]);
          } else {
            v = make_uint4(bits[0] | bits[1] << 16, bits[2] | bits[3] << 16, bits[4] | bits[5] << 16,
                           bits[6] | bits[7] << 16);
          }
          store16(mask + (lo - pre), v);
        } else {
#pragma unroll
          for (int i = 0; i < VEC; ++i) {
            if (lo + i < hi) kpack_mask::store_bits(mask + (lo - pre + i), bits[i]);
          }
        }
      }
    }
  }
}
