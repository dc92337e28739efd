#!/usr/bin/env python3
"""Validates and times the compute-bound Triton kernels under Triton's JIT,
on the GPU: templates/triton/matmul.py against cuBLAS (F.linear) and
templates/triton/attention.py against torch's SDPA flash backend.  These
measurements choose the tile configs and the auto rules of
manifests/matmul_triton.yaml and manifests/attention_triton.yaml.

1. Compiles every config up front, in parallel (Triton's AsyncCompileMode on
   a thread pool; the launches below then find them in the JIT's cache).
2. Correctness against float32 torch references on fresh random inputs, with
   per-dtype tolerances (|out - ref| <= atol + rtol * |ref|), on shapes that
   are not tile multiples: GEMM M = 1, 7, 33, 300, N = 4097 (C's rows padded
   to 4104 for TMA's 16-byte strides; the padding must stay untouched),
   K = 4000, every epilogue (bias, SiLU, GELU), both dtypes, both grid forms;
   attention S = 1000, 1537, S_q != S_kv, GQA, causal and not.
3. Timing (CUDA events around each launch, median; a 256 MiB memset before
   each flushes L2): GEMM bf16 8192^3 and Llama-3-8B's projections at decode
   M = 1, 16, 32, 64, M = 128..1024 and prefill M = 4096; attention
   seq 1k..16k, head dim 64/128, causal and not, Z * H * S = 16k * 32, and
   GQA (32 query heads, 8 KV heads).

Writes JSON lines (kind: check | gemm | attn | best | info) to
OUT/triton_jit_check.jsonl and prints a compact summary.  Exit status 0 if
every check passed, 1 if one failed, 77 without a GPU.

    OUT=dir python3 bench/compute/triton_jit_check.py [--deadline 180] [--quick]
"""
import argparse
import concurrent.futures as cf
import json
import math
import os
import re
import statistics
import sys
import time

T0 = time.time()
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "templates", "triton"))

try:
    import torch
except ImportError:
    print("torch is not installed: skipped")
    sys.exit(77)
if not torch.cuda.is_available():
    print("no CUDA device: skipped")
    sys.exit(77)

import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402
from triton.runtime._async_compile import AsyncCompileMode  # noqa: E402

from matmul import matmul  # noqa: E402
from attention import attention_fwd  # noqa: E402

DEV = torch.device("cuda")
PROPS = torch.cuda.get_device_properties(DEV)
NUM_SMS = PROPS.multi_processor_count
DT = {"bf16": torch.bfloat16, "f16": torch.float16}
# |out - ref| <= atol + rtol * |ref|: about 4 and 8 units of the output's
# last place for outputs of magnitude 1 (bf16 has 8 bits, f16 11).
TOL = {"bf16": (2e-2, 2e-2), "f16": (4e-3, 4e-3)}

# GEMM configs by name: m<BLOCK_M>n<BLOCK_N>k<BLOCK_K>w<num_warps>s<num_stages>,
# then p<k> for the persistent form on a grid of k programs per
# multiprocessor (min(tiles, k * SMs)), and g<GROUP_M> (default 8).
GEMM_CFGS = [
    # decode: BLOCK_M 16 and 32 run mma.sync (Triton's wgmma needs 64 rows)
    "m16n16k256w4s6", "m16n32k128w4s8", "m16n32k256w4s6", "m16n64k128w4s8", "m16n64k256w4s4",
    "m16n128k128w4s6", "m32n32k128w4s8", "m32n64k128w4s8",
    # BLOCK_M 64: wgmma with one warpgroup
    "m64n32k128w4s8", "m64n64k128w4s6", "m64n64k64w4s6", "m64n128k64w4s6",
    # prefill: one tile per program, and persistent
    "m128n128k64w4s4", "m128n128k64w8s4", "m128n256k64w8s4",
    "m128n256k64w8s3p1", "m256n128k64w8s3p1", "m128n128k64w8s4p1", "m128n128k128w8s3p1",
    "m128n128k64w8s3p2", "m128n256k64w8s3p1g16", "m128n128k64w8s4p1g16", "m256n128k64w8s3p1g4",
]
GEMM_EPI = ["m16n64k128w4s8", "m64n64k128w4s6", "m128n256k64w8s3p1"]   # every epilogue checked
GEMM_F16 = ["m16n64k128w4s8", "m64n64k128w4s6", "m128n128k64w8s4", "m128n256k64w8s3p1", "m128n128k64w8s4p1"]


def gemm_parse(name):
    m = re.fullmatch(r"m(\d+)n(\d+)k(\d+)w(\d+)s(\d+)(?:p(\d+))?(?:g(\d+))?", name)
    BM, BN, BK, w, s, p, g = m.groups()
    return dict(BM=int(BM), BN=int(BN), BK=int(BK), w=int(w), s=int(s), pers=int(p or 0), group=int(g or 8))


# Attention configs: m<BLOCK_M>n<BLOCK_N>w<num_warps>s<num_stages>.
ATT_CFGS = ["m64n64w4s2", "m64n64w4s3", "m64n64w4s4", "m64n32w4s3", "m64n128w4s2", "m64n128w4s3",
            "m128n64w8s3", "m128n128w8s3"]
ATT_F16 = ["m64n64w4s3", "m128n128w8s3"]


def att_parse(name):
    BM, BN, w, s = map(int, re.fullmatch(r"m(\d+)n(\d+)w(\d+)s(\d+)", name).groups())
    return BM, BN, w, s


LLAMA = {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)}


class Out:
    def __init__(self, path):
        self.f = open(path, "w") if path else None

    def rec(self, **kw):
        if self.f:
            self.f.write(json.dumps(kw) + "\n")
            self.f.flush()


def say(*a):
    print(*a, flush=True)


# ----------------------------------------------------------------- GEMM

def gemm_call(cfg, a, b, c, bias, has_bias, act, grid=None):
    P = gemm_parse(cfg)
    BM, BN, BK = P["BM"], P["BN"], P["BK"]
    M, K = a.shape
    N = b.shape[0]
    da = TensorDescriptor(a, [M, K], [a.stride(0), 1], [BM, BK])
    db = TensorDescriptor(b, [N, K], [b.stride(0), 1], [BN, BK])
    dc = TensorDescriptor(c, [M, N], [c.stride(0), 1], [BM, BN])
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    grid = grid or (min(tiles, NUM_SMS * P["pers"]) if P["pers"] else tiles,)

    def fn():
        matmul[grid](da, db, dc, bias, M, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=P["group"],
                     HAS_BIAS=has_bias, ACT=act, PERSISTENT=bool(P["pers"]), num_warps=P["w"],
                     num_stages=P["s"])
    return fn


def gemm_ref(a, b, bias, has_bias, act):
    y = a.float() @ b.float().T
    if has_bias:
        y = y + bias.float()[None, :]
    if act == 1:
        y = F.silu(y)
    elif act == 2:
        y = F.gelu(y, approximate="tanh")
    return y


def gemm_inputs(M, N, K, dt, ldc=None, seed=0, extra_rows=0):
    g = torch.Generator(device=DEV).manual_seed(seed)
    a = torch.randn(M, K, device=DEV, dtype=DT[dt], generator=g)
    b = (torch.randn(N, K, device=DEV, dtype=torch.float32, generator=g) / math.sqrt(K)).to(DT[dt])
    bias = torch.randn(N, device=DEV, dtype=DT[dt], generator=g)
    ldc = ldc or N
    cstore = torch.full((M + extra_rows, ldc), float("nan"), device=DEV, dtype=DT[dt])
    return a, b, bias, cstore, cstore[:M, :N]


def close(out, ref, dt):
    atol, rtol = TOL[dt]
    err = (out.float() - ref).abs()
    bad = err > atol + rtol * ref.abs()
    ok = not bool(bad.any()) and not bool(torch.isnan(out).any())
    return ok, float(err.max()), float((err / (atol + rtol * ref.abs())).max())


# ------------------------------------------------------------ attention

def att_call(cfg, q, k, v, o, causal):
    BM, BN, w, s = att_parse(cfg)
    Z, H, Sq, D = q.shape
    Hkv, Skv = k.shape[1], k.shape[2]
    grid = (triton.cdiv(Sq, BM), Z * H)
    scale = 1.0 / math.sqrt(D)

    def fn():
        attention_fwd[grid](q, k, v, o, scale, H, Hkv, Sq, Skv, HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN,
                            CAUSAL=causal, num_warps=w, num_stages=s)
    return fn


def att_ref(q, k, v, causal):
    H, Hkv = q.shape[1], k.shape[1]
    kf = k.float().repeat_interleave(H // Hkv, 1)
    vf = v.float().repeat_interleave(H // Hkv, 1)
    s = (q.float() @ kf.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        Sq, Skv = q.shape[2], k.shape[2]
        keep = torch.arange(Skv, device=DEV)[None, :] <= torch.arange(Sq, device=DEV)[:, None]
        s = s.masked_fill(~keep, float("-inf"))
    return torch.softmax(s, -1) @ vf


def att_inputs(Z, H, Hkv, Sq, Skv, D, dt, seed=0):
    g = torch.Generator(device=DEV).manual_seed(seed)
    q = torch.randn(Z, H, Sq, D, device=DEV, dtype=DT[dt], generator=g)
    k = torch.randn(Z, Hkv, Skv, D, device=DEV, dtype=DT[dt], generator=g)
    v = torch.randn(Z, Hkv, Skv, D, device=DEV, dtype=DT[dt], generator=g)
    o = torch.full_like(q, float("nan"))
    return q, k, v, o


def sdpa_flash(q, k, v, causal):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    gqa = q.shape[1] != k.shape[1]

    def fn():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
    return fn


# --------------------------------------------------------------- timing

FLUSH = None


def bench(fn, target_ms=30.0, lo=5, hi=100):
    """Median GPU time (ms) of fn, L2 flushed before each run."""
    global FLUSH
    if FLUSH is None:
        FLUSH = torch.empty(256 << 20, dtype=torch.int8, device=DEV)
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    torch.cuda.synchronize()
    n = int(max(lo, min(hi, target_ms / max(s.elapsed_time(e), 1e-3))))
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for a, b in ev:
        FLUSH.zero_()
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev)


# ----------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deadline", type=float, default=180.0, help="seconds: timings past it are skipped")
    ap.add_argument("--quick", action="store_true", help="fewer shapes")
    ap.add_argument("--threads", type=int, default=min(16, os.cpu_count() or 4))
    args = ap.parse_args()
    outdir = os.environ.get("OUT")
    out = Out(os.path.join(outdir, "triton_jit_check.jsonl") if outdir else None)
    out.rec(kind="info", device=torch.cuda.get_device_name(), sms=NUM_SMS, torch=torch.__version__,
            triton=triton.__version__)
    say(f"device {torch.cuda.get_device_name()} sms={NUM_SMS} torch {torch.__version__} triton {triton.__version__}")
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=DEV))
    fails = []

    # ---- 1. compile everything in parallel
    gemm_variants = []   # (cfg, dt, has_bias, act)
    for cfg in GEMM_CFGS:
        gemm_variants.append((cfg, "bf16", False, 0))
    for cfg in GEMM_F16:
        gemm_variants.append((cfg, "f16", False, 0))
    for cfg in GEMM_EPI:
        for hb, act in ((True, 0), (True, 1), (False, 1), (True, 2), (False, 2)):
            gemm_variants.append((cfg, "bf16", hb, act))
        gemm_variants.append((cfg, "f16", True, 2))
    att_variants = []    # (cfg, dt, D, causal)
    for cfg in ATT_CFGS:
        for D in (64, 128):
            for causal in (False, True):
                att_variants.append((cfg, "bf16", D, causal))
                if cfg in ATT_F16:
                    att_variants.append((cfg, "f16", D, causal))
    t = time.time()
    with AsyncCompileMode(cf.ThreadPoolExecutor(args.threads), ignore_errors=True):
        for cfg, dt, hb, act in gemm_variants:
            a, b, bias, _, c = gemm_inputs(64, 256, 256, dt)
            try:
                P = gemm_parse(cfg)
                BM, BN, BK = P["BM"], P["BN"], P["BK"]
                matmul.warmup(TensorDescriptor(a, [64, 256], [256, 1], [BM, BK]),
                              TensorDescriptor(b, [256, 256], [256, 1], [BN, BK]),
                              TensorDescriptor(c, [64, 256], [256, 1], [BM, BN]), bias, 64, 256, 256,
                              BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=P["group"], HAS_BIAS=hb, ACT=act,
                              PERSISTENT=bool(P["pers"]), num_warps=P["w"], num_stages=P["s"], grid=(1,))
            except Exception as ex:  # noqa: BLE001
                say("warmup", cfg, dt, repr(ex)[:200])
        for cfg, dt, D, causal in att_variants:
            q, k, v, o = att_inputs(1, 1, 1, 128, 128, D, dt)
            BM, BN, w, s = att_parse(cfg)
            try:
                attention_fwd.warmup(q, k, v, o, 0.125, 1, 1, 128, 128, HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN,
                                     CAUSAL=causal, num_warps=w, num_stages=s, grid=(1,))
            except Exception as ex:  # noqa: BLE001
                say("warmup", cfg, dt, D, repr(ex)[:200])
    say(f"compiled {len(gemm_variants)} gemm + {len(att_variants)} attention variants in {time.time() - t:.1f}s")
    out.rec(kind="info", compile_s=round(time.time() - t, 1), variants=len(gemm_variants) + len(att_variants))

    # ---- 2. correctness
    t = time.time()
    nchk = 0
    bad_cfg = set()

    def chk(name, ok, **kw):
        nonlocal nchk
        nchk += 1
        out.rec(kind="check", name=name, ok=ok, **kw)
        if not ok:
            fails.append(name)
            if len(fails) <= 15:
                say("FAIL", name, json.dumps(kw))

    # N = 4097: C's rows padded to 4104 elements (TMA needs 16-byte row
    # strides).  TMA stores write whole 16-byte chunks of a row, so columns
    # 4097..4103 may be written (zeros: B's rows past N read as zeros); the
    # check is that nothing past the row's 16-byte boundary (a pad of 8
    # more columns) and no row past M (8 extra rows) changes.  N = 4104 is
    # 16-byte aligned but no tile multiple: there the store clips exactly.
    gemm_shapes = [(1, 4097, 4000), (7, 4097, 4000), (33, 4097, 4000), (300, 4097, 4000), (65, 4104, 4096),
                   (64, 512, 4096)]
    for cfg, dt, hb, act in gemm_variants:
        P = gemm_parse(cfg)
        shapes = gemm_shapes if (hb, act) == (False, 0) else gemm_shapes[1:3]
        for (M, N, K) in shapes:
            n16 = (N + 7) // 8 * 8
            a, b, bias, cstore, c = gemm_inputs(M, N, K, dt, ldc=n16 + 8, seed=M + N + K, extra_rows=8)
            # Persistent: also a grid of 7 programs, each walking several tiles.
            for grid in ((None, (7,)) if P["pers"] and M > 7 else (None,)):
                cstore.fill_(float("nan"))
                name = f"gemm {cfg} {dt} bias={int(hb)} act={act}{' grid=7' if grid else ''} M={M} N={N} K={K}"
                try:
                    gemm_call(cfg, a, b, c, bias, hb, act, grid=grid)()
                    torch.cuda.synchronize()
                    ref = gemm_ref(a, b, bias, hb, act)
                    ok, err, ratio = close(c, ref, dt)
                    pad_ok = bool(torch.isnan(cstore[:, n16:]).all()) and bool(torch.isnan(cstore[M:]).all())
                    chunk_written = not bool(torch.isnan(cstore[:M, N:n16]).all()) if n16 > N else False
                    lin = F.linear(a, b, bias if hb else None)
                    lin = F.silu(lin) if act == 1 else F.gelu(lin, approximate="tanh") if act == 2 else lin
                    _, cublas_err, _ = close(lin, ref, dt)
                    chk(name, ok and pad_ok, max_err=err, tol_ratio=round(ratio, 3), pad_untouched=pad_ok,
                        tail_chunk_written=chunk_written, cublas_max_err=cublas_err)
                except Exception as ex:  # noqa: BLE001
                    bad_cfg.add(cfg)
                    chk(name, False, error=repr(ex)[:300])
    for cfg, dt, D, causal in att_variants:
        cases = [(2, 4, 4, 1000, 1000), (1, 4, 1, 1537, 1537)]
        if causal and cfg in ("m64n64w4s3", "m64n128w4s3", "m128n128w8s3", "m64n32w4s3"):
            cases += [(1, 4, 2, 300, 1537), (1, 4, 2, 1537, 300)]
        for (Z, H, Hkv, Sq, Skv) in cases:
            q, k, v, o = att_inputs(Z, H, Hkv, Sq, Skv, D, dt, seed=Sq + Skv + D)
            name = f"attn {cfg} {dt} D={D} causal={int(causal)} Z={Z} H={H} H_KV={Hkv} S_q={Sq} S_kv={Skv}"
            try:
                att_call(cfg, q, k, v, o, causal)()
                torch.cuda.synchronize()
                ref = att_ref(q, k, v, causal)
                ok, err, ratio = close(o, ref, dt)
                kw = dict(max_err=err, tol_ratio=round(ratio, 3))
                if Sq == Skv or not causal:
                    try:
                        _, sd_err, _ = close(sdpa_flash(q, k, v, causal)(), ref, dt)
                        kw["sdpa_max_err"] = sd_err
                    except Exception as ex:  # noqa: BLE001
                        kw["sdpa_error"] = repr(ex)[:100]
                chk(name, ok, **kw)
            except Exception as ex:  # noqa: BLE001
                bad_cfg.add(cfg)
                chk(name, False, error=repr(ex)[:300])
    say(f"checks: {nchk - len(fails)}/{nchk} passed in {time.time() - t:.1f}s")

    # ---- 3. timing
    def late():
        return time.time() - T0 > args.deadline

    t = time.time()
    # The shapes first, then (after attention) M between decode and
    # prefill, where the rules switch tiles.
    shapes = [("square", 8192, 8192, 8192)]
    extra = []
    for M in (1, 16, 32, 64, 4096):
        for proj, (N, K) in LLAMA.items():
            shapes.append((proj, M, N, K))
    for M in ((256, 1024) if args.quick else (128, 256, 512, 1024)):
        for proj, (N, K) in LLAMA.items():
            extra.append((proj, M, N, K))
    summary = []

    def gemm_shape(label, M, N, K):
        a, b, bias, _, c = gemm_inputs(M, N, K, "bf16")
        flop = 2.0 * M * N * K
        res = {}
        res["cublas"] = bench(lambda: F.linear(a, b))
        for cfg in GEMM_CFGS:
            if cfg in bad_cfg:
                continue
            P = gemm_parse(cfg)
            # Where each family can matter: mma.sync tiles for M <= 256,
            # BLOCK_M 64 up to M = 1024, the big tiles from M = 64.
            if (P["BM"] <= 32 and M > 256) or (P["BM"] == 64 and M > 1024) or (P["BM"] >= 128 and M < 64):
                continue
            try:
                res[cfg] = bench(gemm_call(cfg, a, b, c, bias, False, 0))
            except Exception as ex:  # noqa: BLE001
                say("time error", cfg, repr(ex)[:120])
        if len(res) < 2:
            return
        cub = flop / res["cublas"] / 1e9
        for key, ms in res.items():
            out.rec(kind="gemm", shape=label, M=M, N=N, K=K, dtype="bf16", config=key, ms=ms,
                    tflops=flop / ms / 1e9, vs_cublas=res["cublas"] / ms)
        best = min((k_ for k_ in res if k_ != "cublas"), key=lambda k_: res[k_])
        top = sorted((k_ for k_ in res if k_ != "cublas"), key=lambda k_: res[k_])[:3]
        out.rec(kind="best", op="gemm", shape=label, M=M, N=N, K=K, config=best,
                tflops=flop / res[best] / 1e9, cublas_tflops=cub, vs_cublas=res["cublas"] / res[best],
                top3={k_: round(res["cublas"] / res[k_], 3) for k_ in top})
        summary.append(res["cublas"] / res[best])
        say(f"gemm {label:7s} M={M:5d} N={N:5d} K={K:5d} cublas {cub:6.1f} TF | "
            + " ".join(f"{k_} {flop / res[k_] / 1e9:.1f}({res['cublas'] / res[k_]:.2f})" for k_ in top))

    def run_gemm(lst):
        del summary[:]
        for (label, M, N, K) in lst:
            if late():
                say("deadline: gemm timing stopped at", label, M)
                break
            try:
                gemm_shape(label, M, N, K)
            except Exception as ex:  # noqa: BLE001
                say("gemm shape error", label, M, repr(ex)[:200])
        if summary:
            say(f"gemm: geomean best/cublas {math.exp(sum(map(math.log, summary)) / len(summary)):.3f} "
                f"over {len(summary)} shapes ({time.time() - t:.1f}s)")

    run_gemm(shapes)
    t = time.time()
    att_shapes = []
    for D in (64, 128):
        for S in (1024, 2048, 4096, 8192, 16384):
            for causal in (False, True):
                ZH = 16384 * 32 // S
                att_shapes.append((max(1, ZH // 32), 32, 32, S, D, causal))
    att_shapes += [(4, 32, 8, 4096, 128, False), (4, 32, 8, 4096, 128, True)]   # GQA
    asum = []

    def att_shape(Z, H, Hkv, S, D, causal):
        q, k, v, o = att_inputs(Z, H, Hkv, S, S, D, "bf16")
        flop = 4.0 * Z * H * S * S * D * (0.5 if causal else 1.0)
        res = {}
        try:
            res["sdpa"] = bench(sdpa_flash(q, k, v, causal))
        except Exception as ex:  # noqa: BLE001
            say("sdpa error", repr(ex)[:160])
            if Hkv != H:
                kk, vv = k.repeat_interleave(H // Hkv, 1), v.repeat_interleave(H // Hkv, 1)
                res["sdpa"] = bench(sdpa_flash(q, kk, vv, causal))
        for cfg in ATT_CFGS:
            if cfg in bad_cfg:
                continue
            try:
                res[cfg] = bench(att_call(cfg, q, k, v, o, causal))
            except Exception as ex:  # noqa: BLE001
                say("time error", cfg, repr(ex)[:120])
        label = f"Z={Z} H={H} H_KV={Hkv} S={S} D={D} causal={int(causal)}"
        if "sdpa" not in res or len(res) < 2:
            return
        for key, ms in res.items():
            out.rec(kind="attn", Z=Z, H=H, H_KV=Hkv, S=S, D=D, causal=causal, dtype="bf16", config=key,
                    ms=ms, tflops=flop / ms / 1e9, vs_sdpa=res["sdpa"] / ms)
        top = sorted((k_ for k_ in res if k_ != "sdpa"), key=lambda k_: res[k_])[:3]
        out.rec(kind="best", op="attn", Z=Z, H=H, H_KV=Hkv, S=S, D=D, causal=causal, config=top[0],
                tflops=flop / res[top[0]] / 1e9, sdpa_tflops=flop / res["sdpa"] / 1e9,
                vs_sdpa=res["sdpa"] / res[top[0]], top3={k_: round(res["sdpa"] / res[k_], 3) for k_ in top})
        asum.append(res["sdpa"] / res[top[0]])
        say(f"attn {label:40s} sdpa {flop / res['sdpa'] / 1e9:6.1f} TF | "
            + " ".join(f"{k_} {flop / res[k_] / 1e9:.1f}({res['sdpa'] / res[k_]:.2f})" for k_ in top))

    for (Z, H, Hkv, S, D, causal) in att_shapes:
        if late():
            say("deadline: attention timing stopped at", S, D, causal)
            break
        try:
            att_shape(Z, H, Hkv, S, D, causal)
        except Exception as ex:  # noqa: BLE001
            say("attention shape error", S, D, causal, repr(ex)[:200])
    if asum:
        say(f"attn: geomean best/sdpa {math.exp(sum(map(math.log, asum)) / len(asum)):.3f} "
            f"over {len(asum)} shapes ({time.time() - t:.1f}s)")
    run_gemm(extra)
    # f16 at two shapes, to see that the dtype changes nothing.
    for (label, M, N, K) in (("square", 8192, 8192, 8192), ("gate_up", 16, 28672, 4096)):
        if late():
            break
        a, b, bias, _, c = gemm_inputs(M, N, K, "f16")
        flop = 2.0 * M * N * K
        base = bench(lambda: F.linear(a, b))
        line = []
        for cfg in GEMM_F16:
            if (gemm_parse(cfg)["BM"] >= 128) != (M >= 64):
                continue
            try:
                ms = bench(gemm_call(cfg, a, b, c, bias, False, 0))
            except Exception as ex:  # noqa: BLE001
                say("time error", cfg, repr(ex)[:120])
                continue
            out.rec(kind="gemm", shape=label, M=M, N=N, K=K, dtype="f16", config=cfg, ms=ms,
                    tflops=flop / ms / 1e9, vs_cublas=base / ms)
            line.append(f"{cfg} {base / ms:.2f}")
        say(f"gemm f16 {label} M={M}: cublas {flop / base / 1e9:.1f} TF | " + " ".join(line))

    say(f"total {time.time() - T0:.1f}s; {len(fails)} check failures")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
