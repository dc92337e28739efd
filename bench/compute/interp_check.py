#!/usr/bin/env python3
"""CPU-only semantic check of templates/triton/matmul.py and attention.py
with Triton's interpreter (TRITON_INTERPRET=1): no GPU, no torch.

Small ragged shapes in f16 (numpy has no bf16) against float64 numpy
references: M, N, K and the sequence lengths off the tiles, the bias and
both activations, causal and not, GQA, S_q != S_kv.  Both descriptor kinds
run here: the host TensorDescriptor of the GEMM (zero padding past the
shape, clipped stores) and the attention's tl.make_tensor_descriptor.  It
also checks that the padding columns of C beyond N are left alone.  The
compiled code is checked on the GPU by triton_jit_check.py.

Needs numpy < 2 (the 3.6 interpreter turns 1-element arrays into Python
ints); the torch stand-in is bench/triton/interp_check.py's.

    python3 bench/compute/interp_check.py
"""
import math
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "templates", "triton"))
sys.path.insert(0, os.path.join(ROOT, "bench", "triton"))

import numpy as np  # noqa: E402
import triton  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

from interp_check import fake_tensor_factory  # noqa: E402
from matmul import matmul  # noqa: E402
from attention import attention_fwd  # noqa: E402

FT = fake_tensor_factory(np)
fails = 0


def ft(arr):
    t = FT(arr)
    # TensorDescriptor reads dtype.itemsize and dtype.is_floating_point.
    t.dtype.itemsize = arr.itemsize
    t.dtype.is_floating_point = arr.dtype.kind == "f"
    return t


def check(ok, *msg):
    global fails
    if not ok:
        fails += 1
    print("ok  " if ok else "FAIL", *msg, flush=True)


def gemm_ref(a, b, bias, act):
    y = a.astype(np.float64) @ b.astype(np.float64).T
    if bias is not None:
        y = y + bias.astype(np.float64)[None, :]
    if act == 1:
        y = y / (1 + np.exp(-y))
    elif act == 2:
        y = 0.5 * y * (1 + np.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y ** 3)))
    return y


def run_gemm(rng, M, N, K, BM, BN, BK, has_bias, act, grid_cap=None):
    T = np.float16
    a = rng.standard_normal((M, K)).astype(T)
    b = (rng.standard_normal((N, K)) / math.sqrt(K)).astype(T)
    bias = rng.standard_normal(N).astype(T)
    ldc = (N + 7) // 8 * 8 + 8          # padded rows: columns >= N must stay
    c = np.full((M, ldc), 7, T)
    da = TensorDescriptor(ft(a), [M, K], [K, 1], [BM, BK])
    db = TensorDescriptor(ft(b), [N, K], [K, 1], [BN, BK])
    dc = TensorDescriptor(ft(c), [M, N], [ldc, 1], [BM, BN])
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    grid = (min(tiles, grid_cap) if grid_cap else tiles,)
    matmul[grid](da, db, dc, ft(bias), M, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK,
                 GROUP_M=2, HAS_BIAS=has_bias, ACT=act, PERSISTENT=grid_cap is not None)
    ref = gemm_ref(a, b, bias if has_bias else None, act)
    err = np.abs(c[:, :N].astype(np.float64) - ref).max()
    check(err < 2e-2 and (c[:, N:] == 7).all(),
          f"gemm M={M} N={N} K={K} tile={BM}x{BN}x{BK} bias={has_bias} act={act} grid={grid[0]} max_err={err:.2e}")


def attn_ref(q, k, v, scale, causal):
    Z, H, Sq, D = q.shape
    Hkv, Skv = k.shape[1], k.shape[2]
    g = H // Hkv
    kk = np.repeat(k.astype(np.float64), g, axis=1)
    vv = np.repeat(v.astype(np.float64), g, axis=1)
    s = np.einsum("zhqd,zhkd->zhqk", q.astype(np.float64), kk) * scale
    if causal:
        mask = np.arange(Skv)[None, :] <= np.arange(Sq)[:, None]
        s = np.where(mask, s, -np.inf)
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    return np.einsum("zhqk,zhkd->zhqd", p, vv)


def run_attn(rng, Z, H, Hkv, Sq, Skv, D, BM, BN, causal):
    T = np.float16
    q = rng.standard_normal((Z, H, Sq, D)).astype(T)
    k = rng.standard_normal((Z, Hkv, Skv, D)).astype(T)
    v = rng.standard_normal((Z, Hkv, Skv, D)).astype(T)
    o = np.full((Z, H, Sq, D), 7, T)
    scale = 1.0 / math.sqrt(D)
    grid = (triton.cdiv(Sq, BM), Z * H)
    attention_fwd[grid](ft(q), ft(k), ft(v), ft(o), scale, H, Hkv, Sq, Skv,
                        HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN, CAUSAL=causal)
    ref = attn_ref(q, k, v, scale, causal)
    err = np.abs(o.astype(np.float64) - ref).max()
    check(err < 1e-2, f"attn Z={Z} H={H} H_KV={Hkv} S_q={Sq} S_kv={Skv} D={D} tile={BM}x{BN} causal={causal} max_err={err:.2e}")


def main():
    # The interpreter wants the triton allocator for device descriptors.
    triton.set_allocator(lambda size, align, stream: ft(np.empty(size, np.int8)))
    rng = np.random.default_rng(0)
    for (M, N, K) in ((1, 40, 64), (7, 56, 40), (33, 72, 136), (64, 64, 64)):
        run_gemm(rng, M, N, K, 32, 32, 32, False, 0)
    run_gemm(rng, 33, 72, 136, 32, 32, 32, True, 0)
    run_gemm(rng, 33, 72, 136, 32, 32, 32, True, 1)
    run_gemm(rng, 33, 72, 136, 32, 32, 32, False, 2)
    run_gemm(rng, 70, 104, 48, 16, 32, 16, True, 2, grid_cap=3)  # persistent: 3 programs, 25 tiles
    for causal in (False, True):
        run_attn(rng, 1, 2, 2, 37, 37, 64, 32, 16, causal)
        run_attn(rng, 2, 4, 2, 50, 50, 64, 32, 32, causal)    # GQA
        run_attn(rng, 1, 2, 1, 20, 45, 64, 16, 16, causal)    # S_q < S_kv
        run_attn(rng, 1, 2, 2, 45, 20, 64, 32, 16, causal)    # S_q > S_kv
        run_attn(rng, 1, 2, 2, 70, 70, 64, 16, 32, causal)    # BLOCK_N > BLOCK_M
    print("interp_check:", "FAILED %d" % fails if fails else "all passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
