"""Ragged additive attention mask fill in Triton.

Triton counterpart of templates/attention_mask_fill.cuh
(manifests/attention_mask_fill.yaml).

    attention_mask_fill(q_len, kv_len, mask_offsets, mask,
                        num_requests, max_q_len, max_kv_len,
                        CAUSAL: constexpr, TILE: constexpr)

  q_len, kv_len  *i32 [num_requests]  (device)
  mask_offsets   *i64 [num_requests]  (device) start of each request's block,
                 in elements: the exclusive prefix sum of q_len * kv_len
  mask           *T   the packed mask, T = f32, f16 or bf16
  num_requests, max_q_len, max_kv_len  i32 (the last two only size the grid)
  CAUSAL         constexpr bool
  TILE           constexpr int: mask elements per program per step, a power
                 of two >= 256 (the tile is TILE/256 rows x 256 columns)

Launch: grid = (cdiv(max_q_len * max_kv_len, TILE), min(num_requests, 65535)),
num_warps 4 or 8 -- the CUDA manifest's grid.

Request r owns the row-major q_len[r] x kv_len[r] block at
mask + mask_offsets[r]; element (q, k) is 0 where allowed and -inf where
masked, allowed = !CAUSAL || k <= kv_len - q_len + q.  Requests with
q_len <= 0 or kv_len <= 0 write nothing and nothing outside the blocks is
written.  Program (x, y) takes requests y, y + grid_y, ... and, of each, the
2D tiles x, x + grid_x, ... (row-major over the request's tiles), so the grid
may be any size: an underestimate stays correct, just slower.

Stores: when the request's block starts on a 16-byte boundary and kv_len is a
multiple of 16 bytes of elements (every row then starts aligned), the tile
is stored with 16-byte vectors (the JIT knows the mask pointer's alignment;
an AOT build must give it a divisibility-16 hint).  Otherwise stores are per
element, still coalesced (a warp writes 32 consecutive elements of a row).
No division per element: q and k come from the 2D tile directly.
"""
import triton
import triton.language as tl

BLOCK_K: tl.constexpr = tl.constexpr(256)


@triton.jit
def _mask_tile_values(q, k, shift, CAUSAL: tl.constexpr, BQ: tl.constexpr, BK: tl.constexpr, dtype: tl.constexpr):
    if CAUSAL:
        allowed = k[None, :] <= (q + shift)[:, None]
        v = tl.where(allowed, 0.0, float("-inf"))
    else:
        v = tl.zeros([BQ, BK], dtype=tl.float32)
    return v.to(dtype)


@triton.jit
def attention_mask_fill(q_len, kv_len, mask_offsets, mask, num_requests, max_q_len, max_kv_len,
                        CAUSAL: tl.constexpr, TILE: tl.constexpr):
    BK: tl.constexpr = BLOCK_K
    BQ: tl.constexpr = TILE // BK
    # Elements per 16-byte vector.
    VEC: tl.constexpr = 128 // mask.dtype.element_ty.primitive_bitwidth
    dtype: tl.constexpr = mask.dtype.element_ty

    pid_x = tl.program_id(0)
    pid_y = tl.program_id(1)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    rq = tl.arange(0, BQ)
    rk = tl.arange(0, BK)

    for r in range(pid_y, num_requests, ny):
        ql = tl.maximum(tl.load(q_len + r), 0)
        kl = tl.maximum(tl.load(kv_len + r), 0)
        base = tl.load(mask_offsets + r)
        ntk = tl.cdiv(kl, BK)
        ntiles = tl.cdiv(ql, BQ) * ntk  # 0 when ql == 0 or kl == 0
        shift = kl - ql  # allowed iff k <= q + shift
        aligned = ((base % VEC) == 0) & ((kl % VEC) == 0)
        for t in range(pid_x, ntiles, nx):
            tq = t // ntk
            tk = t - tq * ntk
            q = tq * BQ + rq
            k = tk * BK + rk
            v = _mask_tile_values(q, k, shift, CAUSAL, BQ, BK, dtype)
            if aligned:
                # The same values, written so that the compiler can prove
                # 16-byte alignment: (x // VEC) * VEC is a multiple of VEC.
                kla = (kl // VEC) * VEC
                ba = (base // VEC) * VEC
                rows = ba + q.to(tl.int64) * kla
                m = (q < ql)[:, None] & (k < kla)[None, :]
                tl.store(mask + rows[:, None] + k[None, :], v, mask=m)
            else:
                rows = base + q.to(tl.int64) * kl
                m = (q < ql)[:, None] & (k < kl)[None, :]
                tl.store(mask + rows[:, None] + k[None, :], v, mask=m)
