"""Attention forward (flash style: the scores never reach memory), for
Hopper (sm_90).

    attention_fwd(q, k, v, o, sm_scale, H, H_KV, S_q, S_kv,
                  HEAD_DIM, BLOCK_M, BLOCK_N, CAUSAL: constexpr)

    o[z, h] = softmax(sm_scale * q[z, h] @ k[z, g]^T (+ causal mask)) @ v[z, g]
    with g = h // (H / H_KV)   (grouped-query attention; H_KV = H is MHA)

  q     *T [Z, H, S_q, HEAD_DIM], contiguous
  k, v  *T [Z, H_KV, S_kv, HEAD_DIM], contiguous
  o     *T [Z, H, S_q, HEAD_DIM], contiguous
  sm_scale  f32 (1 / sqrt(HEAD_DIM) for the usual scaling)
  H, H_KV   i32, H % H_KV == 0
  S_q, S_kv i32, any lengths >= 1 (never specialized)
  T     bf16 or f16; scores, softmax and the output accumulate in fp32,
        the probabilities are rounded to T for the second product.
  HEAD_DIM  64 or 128
  BLOCK_M   query rows per program; BLOCK_N keys per step
  CAUSAL    query i sees keys j <= i: the mask's top-left alignment, that
            of torch's scaled_dot_product_attention(is_causal=True); with
            S_q == S_kv it is the usual causal mask.  Every query row sees
            key 0, so no row is empty.

Compile options: num_warps (4 for BLOCK_M = 64, 8 for BLOCK_M = 128), and
num_stages (the depth of the K/V load pipeline).

Launch: grid = (cdiv(S_q, BLOCK_M), Z * H).  A causal program takes its
query block from the end (the longest rows start first).

Memory: q, k, v and o are read and written through device-side tensor
descriptors (tl.make_tensor_descriptor) over each head's [S, HEAD_DIM]
matrix, so the kernel needs Triton's global scratch (the descriptors are
built in it: 128 bytes each per program, the compile metadata's
global_scratch_size), which the launcher must provide.  Rows past S_q or
S_kv read zeros and are not written; the base of each head must be 16-byte
aligned (S * HEAD_DIM * sizeof(T) always is for these head dims).

The online softmax: per query row a running maximum m (in log2 units) and
sum l; each block of scores s is scaled by sm_scale * log2(e), the maximum
moves to m' = max(m, rowmax(s)), the old sum and output rows are scaled by
2^(m - m') and the block's 2^(s - m') added.  The last division by l gives
the softmax.  Key blocks that the mask (causal, or the end of S_kv) cuts
run a second, masked loop; the blocks before it run unmasked.
"""
import triton
import triton.language as tl

LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)


@triton.jit
def _kv_steps(acc, l, m, q, k_desc, v_desc, start, stop, rows, S_kv, scale,
              BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr):
    # Folds the key blocks [start, stop) into (acc, l, m).
    for n0 in range(start, stop, BLOCK_N):
        kb = k_desc.load([n0, 0])
        s = tl.dot(q, kb.T)                 # unscaled: the scale folds into the exp2's FMA
        if MASKED:
            cols = n0 + tl.arange(0, BLOCK_N)
            keep = cols[None, :] < S_kv
            if CAUSAL:
                keep = keep & (cols[None, :] <= rows[:, None])
            s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1) * scale)
        p = tl.exp2(s * scale - m_new[:, None])
        shrink = tl.exp2(m - m_new)
        l = l * shrink + tl.sum(p, 1)
        vb = v_desc.load([n0, 0])
        acc = acc * shrink[:, None]
        acc = tl.dot(p.to(vb.dtype), vb, acc)
        m = m_new
    return acc, l, m


@triton.jit(do_not_specialize=["H", "H_KV", "S_q", "S_kv"])
def attention_fwd(q, k, v, o, sm_scale, H, H_KV, S_q, S_kv,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  CAUSAL: tl.constexpr):
    bx = tl.program_id(0)
    if CAUSAL:
        bx = tl.num_programs(0) - 1 - bx
    head = tl.program_id(1)                          # z * H + h
    kv_head = (head // H) * H_KV + (head % H) // (H // H_KV)
    q_off = head.to(tl.int64) * S_q * HEAD_DIM
    kv_off = kv_head.to(tl.int64) * S_kv * HEAD_DIM

    q_desc = tl.make_tensor_descriptor(q + q_off, shape=[S_q, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(k + kv_off, shape=[S_kv, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(v + kv_off, shape=[S_kv, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    o_desc = tl.make_tensor_descriptor(o + q_off, shape=[S_q, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])

    m0 = bx * BLOCK_M
    rows = m0 + tl.arange(0, BLOCK_M)
    scale = sm_scale * LOG2E
    qb = q_desc.load([m0, 0])
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    l = tl.zeros((BLOCK_M,), dtype=tl.float32)
    m = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)

    # Unmasked key blocks: whole blocks below S_kv (and, causal, entirely at
    # or left of the block's first row); then the masked rest.
    whole = (S_kv // BLOCK_N) * BLOCK_N
    if CAUSAL:
        full = tl.minimum((m0 // BLOCK_N) * BLOCK_N, whole)
        stop = tl.minimum(m0 + BLOCK_M, S_kv)
    else:
        full = whole
        stop = S_kv
    acc, l, m = _kv_steps(acc, l, m, qb, k_desc, v_desc, 0, full, rows, S_kv, scale,
                          BLOCK_N, False, CAUSAL)
    acc, l, m = _kv_steps(acc, l, m, qb, k_desc, v_desc, full, stop, rows, S_kv, scale,
                          BLOCK_N, True, CAUSAL)
    out = acc / l[:, None]
    o_desc.store([m0, 0], out.to(qb.dtype))
