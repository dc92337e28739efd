// giou_loss.cuh - generalized IoU of predicted vs target boxes (forward).
//
// Template parameters (manifest constexprs, in order):
//   T      float, __half or __nv_bfloat16 (boxes and the giou output)
//   BLOCK  threads per block (the manifest's launch.block)
// Runtime parameters:
//   preds, targets  const T*   [num_boxes, 4] = [B, N, 4] contiguous, each box
//                              (left, top, right, bottom)
//   giou            T*         [num_boxes]
//   valid           uint8_t*   [num_boxes]: 1 where targets' bottom > 0, else 0
//                              (a torch.bool-compatible byte mask)
//   num_boxes       int64_t    B * N
// Launch: grid = cdiv(num_boxes, BLOCK * 8 / sizeof(T)), block = BLOCK; each
// thread owns two 16-byte vectors of each input: 2 boxes (f32) or 4 boxes
// (f16/bf16).
//
// Per box, in fp32 (p = prediction, t = target):
//   area_p  = (p.r - p.l) * (p.b - p.t)            area_t likewise
//   inter   = max(min(p.r,t.r) - max(p.l,t.l), 0) * max(min(p.b,t.b) - max(p.t,t.t), 0)
//   union   = area_p + area_t - inter
//   iou     = inter / max(union, 1e-5)
//   enclose = max(max(p.r,t.r) - min(p.l,t.l), 0) * max(max(p.b,t.b) - min(p.t,t.t), 0)
//   giou    = iou - (enclose - union) / max(enclose, 1e-5)
//   out     = t.b > 0 ? giou : 0,  valid = t.b > 0
// (union is clamped only as iou's denominator, as in the formula; the
// enclosing box's sides are clamped at 0 as in mmdet, which only matters for
// degenerate boxes.)  fmaxf/fminf ignore NaN, as in the CPU reference.
//
// 16-byte loads need preds and targets 16-byte aligned; packed stores need
// giou and valid aligned to the 2-box group (f16/bf16).  Anything else, and
// a trailing odd box, takes a per-box scalar path.
#pragma once

#include "common.cuh"

namespace kpack_giou {

// a / b for b >= 1e-5 (the clamped denominators), computed per output
// type.  The 16-bit outputs round to 11 or 8 bits, so a 2 ulp quotient is
// invisible there, while the IEEE division's range checks and fix-up were a
// third of the f16/bf16 kernels' instructions (16-byte pairs of 8-byte
// boxes make those kernels arithmetic-bound).  f32 keeps the IEEE division.
//   f16:  a * rcp.approx.ftz(b): f16 boxes give b < 2^35, and b = inf gives
//         0 (or NaN for a = inf) as the IEEE division does;
//   bf16: div.full.f32 (2 ulp over the full range: bf16 boxes can reach
//         2^126, where the bare reciprocal flushes to 0).
template <typename T>
struct IsHalf {
  static constexpr bool value = false;
};
template <>
struct IsHalf<__half> {
  static constexpr bool value = true;
};

template <typename T>
__device__ __forceinline__ float divide(float a, float b) {
  float r;
  if constexpr (sizeof(T) == 4) {
    r = a / b;
  } else if constexpr (IsHalf<T>::value) {
    float inv;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(inv) : "f"(b));
    r = a * inv;
  } else {
    asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  }
  return r;
}

template <typename T>
__device__ __forceinline__ float giou_one(const float* p, const float* t, bool* ok) {
  const float area_p = (p[2] - p[0]) * (p[3] - p[1]);
  const float area_t = (t[2] - t[0]) * (t[3] - t[1]);
  const float iw = fmaxf(fminf(p[2], t[2]) - fmaxf(p[0], t[0]), 0.f);
  const float ih = fmaxf(fminf(p[3], t[3]) - fmaxf(p[1], t[1]), 0.f);
  const float inter = iw * ih;
  const float uni = area_p + area_t - inter;
  const float iou = divide<T>(inter, fmaxf(uni, 1e-5f));
  const float ew = fmaxf(fmaxf(p[2], t[2]) - fminf(p[0], t[0]), 0.f);
  const float eh = fmaxf(fmaxf(p[3], t[3]) - fminf(p[1], t[1]), 0.f);
  const float enclose = ew * eh;
  const float g = iou - divide<T>(enclose - uni, fmaxf(enclose, 1e-5f));
  *ok = t[3] > 0.f;
  return *ok ? g : 0.f;
}

}  // namespace kpack_giou

template <typename T, int BLOCK>
__device__ __forceinline__ void giou_loss_fwd(const T* preds, const T* targets, T* giou,
                                              uint8_t* valid, int64_t num_boxes) {
  using namespace kpack_tpl;
  constexpr int VEC = Vec<T>::kN;
  constexpr int BPV = VEC / 4;  // boxes per 16-byte vector: 1 (f32) or 2 (f16/bf16)
  constexpr int U = 2;          // vectors per thread per input
  static_assert(static_cast<int64_t>(BLOCK) * U * BPV * sizeof(T) == BLOCK * 8,
                "grid expression assumes BLOCK * 8 / sizeof(T) boxes per block");
  const int tid = static_cast<int>(threadIdx.x);

  const bool vload = aligned16(preds) && aligned16(targets);
  const bool vstore = (reinterpret_cast<uintptr_t>(giou) % (BPV * sizeof(T))) == 0 &&
                      (reinterpret_cast<uintptr_t>(valid) % BPV) == 0;

  // Group g = BPV consecutive boxes; a thread's U groups are BLOCK apart.
  const int64_t g0 = static_cast<int64_t>(blockIdx.x) * (BLOCK * U) + tid;
  uint4 pv[U], tv[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t b0 = (g0 + static_cast<int64_t>(u) * BLOCK) * BPV;
    if (vload && b0 + BPV <= num_boxes) {
      pv[u] = load16(preds + b0 * 4);
      tv[u] = load16(targets + b0 * 4);
    }
  }

#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t b0 = (g0 + static_cast<int64_t>(u) * BLOCK) * BPV;
    if (b0 >= num_boxes) continue;
    const bool full = b0 + BPV <= num_boxes;
    float g[BPV];
    bool ok[BPV];
    if (vload && full) {
      float p[VEC], t[VEC];
      unpack<T>(pv[u], p);
      unpack<T>(tv[u], t);
#pragma unroll
      for (int k = 0; k < BPV; ++k) g[k] = kpack_giou::giou_one<T>(p + 4 * k, t + 4 * k, &ok[k]);
    } else {
#pragma unroll
      for (int k = 0; k < BPV; ++k) {
        g[k] = 0.f;
        ok[k] = false;
        if (b0 + k < num_boxes) {
          float p[4], t[4];
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            p[c] = load_f(preds + (b0 + k) * 4 + c);
            t[c] = load_f(targets + (b0 + k) * 4 + c);
          }
          g[k] = kpack_giou::giou_one<T>(p, t, &ok[k]);
        }
      }
    }

    if (vstore && full) {
      if constexpr (BPV == 1) {
        store_f(giou + b0, g[0]);
        valid[b0] = ok[0] ? 1 : 0;
      } else {
        // Two boxes: one 4-byte store of the pair and one 2-byte store of the
        // flags (little-endian: box b0's flag at the lower address).
        *reinterpret_cast<uint32_t*>(giou + b0) = Conv<T>::from2(g[0], g[1]);
        *reinterpret_cast<uint16_t*>(valid + b0) =
            static_cast<uint16_t>((ok[0] ? 1u : 0u) | (ok[1] ? 0x100u : 0u));
      }
    } else {
#pragma unroll
      for (int k = 0; k < BPV; ++k) {
        if (b0 + k < num_boxes) {
          store_f(giou + b0 + k, g[k]);
          valid[b0 + k] = ok[k] ? 1 : 0;
        }
      }
    }
  }
}
