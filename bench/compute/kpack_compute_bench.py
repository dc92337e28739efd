#!/usr/bin/env python3
"""kpack's compute-bound kernels against Triton's JIT, cuBLAS and SDPA, side
by side in one process on one GPU.

    OUT=dir python3 bench/compute/kpack_compute_bench.py --lib build/tests/gpu/libkernels_shared.so

For every shape:

1. **The choice.** kpack's auto dispatcher (kernels_<k>_auto, the manifest's
   auto: rules, evaluated in C) runs the call.  The script evaluates the
   same rules in Python to know the config, and calls kpack's dispatcher
   with it explicitly; the two outputs must be equal bit for bit (so the
   mirrored rules are the ones kpack ran).
2. **Parity with the JIT.** The same @triton.jit function from
   templates/triton/ runs under Triton's JIT with that config (same
   constexprs, num_warps, num_stages, grid); kpack's output must equal it
   bit for bit, and both must be within the per-dtype tolerance of a
   float32 torch reference (on ragged shapes too: not multiples of the
   tiles).  Outputs are poisoned with NaN before every launch.
3. **Time.** Median device time over repeated launches, L2 flushed (a 256 MiB
   memset) before each, CUDA events around the launch, the implementations
   interleaved in three rounds (the median of the round medians): kpack's typed path,
   the JIT's launch of the same kernel, cuBLAS (F.linear, bf16, fp32
   accumulate) or SDPA's flash backend.  Ratios are kpack time / JIT time
   and kpack TFLOP/s / cuBLAS (SDPA) TFLOP/s.  The host cost of one launch
   from Python (back-to-back launches, no sync) is printed for kpack (a
   ctypes call into the C launcher) and for the JIT.
4. **The CUDA GEMM** (manifests/gemm_cuda.yaml, if the library has it):
   kpack's auto dispatcher against cuBLAS, checked against the reference.

JSON lines go to OUT/kpack_compute_bench.jsonl; a compact table to stdout.
Exit 0 when every check passed, 1 otherwise, 77 without a GPU or torch.
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "templates", "triton"))

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch is not installed: skipped")
    sys.exit(77)
if not torch.cuda.is_available():
    print("no CUDA device: skipped")
    sys.exit(77)

import triton  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

from matmul import matmul  # noqa: E402
from attention import attention_fwd  # noqa: E402

DEV = torch.device("cuda")
NUM_SMS = torch.cuda.get_device_properties(DEV).multi_processor_count
DT = {"bf16": torch.bfloat16, "f16": torch.float16}
KDT = {"bf16": 3, "f16": 2}  # kpack_dtype
TOL = {"bf16": (2e-2, 2e-2), "f16": (4e-3, 4e-3)}
LLAMA = {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)}

OUT = os.environ.get("OUT", ".")
LINES = []
FAILS = []


def emit(**kw):
    LINES.append(kw)


def say(*a):
    print(*a, flush=True)


def cdiv(a, b):
    return -(-a // b)


# ---- the library ----------------------------------------------------------

I64x2 = ctypes.c_int64 * 2
P = ctypes.c_void_p


def load(path):
    lib = ctypes.CDLL(path)
    lib.kpack_last_error_detail.restype = ctypes.c_char_p
    lib.kpack_workspace_usage.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64)]
    desc = [P, I64x2, I64x2]
    lib.kernels_matmul_triton_auto.argtypes = [P, ctypes.c_int, ctypes.c_int] + desc * 3 + [P] + [ctypes.c_int32] * 3
    lib.kernels_matmul_triton.argtypes = ([P, ctypes.c_int] + [ctypes.c_int] * 9 + desc * 3 + [P] +
                                          [ctypes.c_int32] * 3)
    att = [P, P, P, P, ctypes.c_float] + [ctypes.c_int32] * 5
    lib.kernels_attention_triton_auto.argtypes = [P, ctypes.c_int, ctypes.c_int, ctypes.c_int] + att
    lib.kernels_attention_triton.argtypes = [P, ctypes.c_int] + [ctypes.c_int] * 6 + att
    if hasattr(lib, "kernels_gemm_cuda_auto"):
        lib.kernels_gemm_cuda_auto.argtypes = ([P, ctypes.c_int, ctypes.c_int] + desc * 2 + [P, P] +
                                               [ctypes.c_int32] * 3)
    return lib


def check_status(lib, st, what):
    if st != 0:
        raise RuntimeError("%s: status %d: %s" % (what, st, lib.kpack_last_error_detail().decode()))


# ---- GEMM -----------------------------------------------------------------

def gemm_rules(M, N):
    """manifests/matmul_triton.yaml's auto: rules (C integer division)."""
    big = cdiv(M, 128) * cdiv(N, 256) >= 2 * NUM_SMS // 3
    BM = 16 if M <= 16 or (M <= 32 and N <= 8192) else 128 if M > 256 or (M >= 128 and big) else 64
    if BM == 16:
        BN = 32 if M <= 16 and N <= 4096 else 128 if M > 16 and N > 4096 else 64
    else:
        BN = 64 if BM == 64 else 256 if big else 128
    BK = (128 if BN == 128 else 256) if BM == 16 else 128 if BM == 64 else 64
    persist = BN == 256
    return dict(BM=BM, BN=BN, BK=BK, G=8, persist=persist, w=8 if BN == 256 else 4,
                s=(4 if BN == 64 else 6) if BM == 16 else 6 if BM == 64 else 3 if BN == 256 else 4)


def gemm_grid(cfg, M, N):
    tiles = cdiv(M, cfg["BM"]) * cdiv(N, cfg["BN"])
    return min(tiles, NUM_SMS) if cfg["persist"] else tiles


def desc_args(t):
    return [P(t.data_ptr()), I64x2(*t.shape), I64x2(*t.stride())]


class Gemm:
    def __init__(self, lib, M, N, K, dt, act=0, bias=False, seed=0):
        g = torch.Generator(device=DEV).manual_seed(seed)
        self.lib, self.M, self.N, self.K, self.dt, self.act = lib, M, N, K, dt, act
        self.a = torch.randn(M, K, device=DEV, dtype=DT[dt], generator=g)
        self.b = (torch.randn(N, K, device=DEV, generator=g) / math.sqrt(K)).to(DT[dt])
        self.bias = torch.randn(N, device=DEV, dtype=DT[dt], generator=g) if bias else None
        self.c = torch.full((M, N), float("nan"), device=DEV, dtype=DT[dt])
        self.cfg = gemm_rules(M, N)
        self.args = desc_args(self.a) + desc_args(self.b) + desc_args(self.c)
        self.bias_ptr = P(self.bias.data_ptr() if bias else 0)
        dummy = self.bias if bias else torch.empty(1, device=DEV, dtype=DT[dt])
        c = self.cfg
        da = TensorDescriptor(self.a, [M, K], [K, 1], [c["BM"], c["BK"]])
        db = TensorDescriptor(self.b, [N, K], [K, 1], [c["BN"], c["BK"]])
        dc = TensorDescriptor(self.c, [M, N], [N, 1], [c["BM"], c["BN"]])
        grid = (gemm_grid(c, M, N),)
        self.jit = lambda: matmul[grid](da, db, dc, dummy, M, N, K, BLOCK_M=c["BM"], BLOCK_N=c["BN"],
                                        BLOCK_K=c["BK"], GROUP_M=c["G"], HAS_BIAS=bias, ACT=act,
                                        PERSISTENT=c["persist"], num_warps=c["w"], num_stages=c["s"])

    def kpack_auto(self):
        return self.lib.kernels_matmul_triton_auto(None, KDT[self.dt], self.act, *self.args, self.bias_ptr,
                                                   self.M, self.N, self.K)

    def kpack_typed(self):
        c = self.cfg
        return self.lib.kernels_matmul_triton(None, KDT[self.dt], c["BM"], c["BN"], c["BK"], c["G"],
                                              int(self.bias is not None), self.act, int(c["persist"]), c["w"],
                                              c["s"], *self.args, self.bias_ptr, self.M, self.N, self.K)

    def cublas(self):
        return F.linear(self.a, self.b, self.bias)

    def reference(self):
        y = self.a.float() @ self.b.float().T
        if self.bias is not None:
            y = y + self.bias.float()[None, :]
        return F.silu(y) if self.act == 1 else F.gelu(y, approximate="tanh") if self.act == 2 else y

    def run(self, fn):
        self.c.fill_(float("nan"))
        r = fn()
        torch.cuda.synchronize()
        if isinstance(r, int):
            check_status(self.lib, r, "matmul")
        return self.c.clone()


def close(out, ref, dt):
    atol, rtol = TOL[dt]
    err = (out.float() - ref).abs()
    return (not bool((err > atol + rtol * ref.abs()).any())) and not bool(torch.isnan(out).any())


def gemm_check(lib, M, N, K, dt, act, bias):
    g = Gemm(lib, M, N, K, dt, act, bias, seed=M * 7 + N)
    auto, typed, jit = g.run(g.kpack_auto), g.run(g.kpack_typed), g.run(g.jit)
    ok_rule = torch.equal(auto.view(torch.int16), typed.view(torch.int16))
    ok_bits = torch.equal(typed.view(torch.int16), jit.view(torch.int16))
    ok_ref = close(typed, g.reference(), dt)
    name = "gemm %s %dx%dx%d act%d bias%d %s" % (dt, M, N, K, act, int(bias), cfg_name(g.cfg))
    for ok, what in [(ok_rule, "auto == rules' config"), (ok_bits, "kpack == JIT bits"), (ok_ref, "vs fp32 ref")]:
        emit(kind="check", what=what, case=name, ok=ok)
        if not ok:
            FAILS.append(name + ": " + what)
    return ok_rule and ok_bits and ok_ref


def cfg_name(c):
    return "m%dn%dk%dw%ds%d%s" % (c["BM"], c["BN"], c["BK"], c["w"], c["s"], "p" if c["persist"] else "")


class CudaGemm(Gemm):
    """manifests/gemm_cuda.yaml through its auto dispatcher; c dense."""

    def kpack_auto(self):
        return self.lib.kernels_gemm_cuda_auto(None, KDT[self.dt], self.act, *self.args[:6], P(self.c.data_ptr()),
                                               self.bias_ptr, self.M, self.N, self.K)


def cuda_gemm_check(lib, M, N, K, dt, act, bias):
    g = CudaGemm(lib, M, N, K, dt, act, bias, seed=M * 3 + N)
    ok = close(g.run(g.kpack_auto), g.reference(), dt)
    name = "cuda gemm %s %dx%dx%d act%d bias%d" % (dt, M, N, K, act, int(bias))
    emit(kind="check", what="vs fp32 ref", case=name, ok=ok)
    if not ok:
        FAILS.append(name + ": vs fp32 ref")


# ---- attention --------------------------------------------------------------

def att_rules(D, causal, Skv):
    BM = 128 if D == 128 and not causal and Skv >= 8192 else 64
    BN = 128 if BM == 128 else 64 if D == 128 or (causal and Skv <= 2048) else 128
    return dict(BM=BM, BN=BN, w=8 if BM == 128 else 4, s=2 if D == 64 else 3)


class Attention:
    def __init__(self, lib, Z, H, Hkv, Sq, Skv, D, dt, causal, seed=0):
        g = torch.Generator(device=DEV).manual_seed(seed)
        self.lib, self.dt, self.causal, self.D = lib, dt, causal, D
        self.dims = (Z, H, Hkv, Sq, Skv)
        self.q = torch.randn(Z, H, Sq, D, device=DEV, dtype=DT[dt], generator=g)
        self.k = torch.randn(Z, Hkv, Skv, D, device=DEV, dtype=DT[dt], generator=g)
        self.v = torch.randn(Z, Hkv, Skv, D, device=DEV, dtype=DT[dt], generator=g)
        self.o = torch.full_like(self.q, float("nan"))
        self.scale = 1.0 / math.sqrt(D)
        self.cfg = c = att_rules(D, causal, Skv)
        grid = (cdiv(Sq, c["BM"]), Z * H)
        self.jit = lambda: attention_fwd[grid](self.q, self.k, self.v, self.o, self.scale, H, Hkv, Sq, Skv,
                                               HEAD_DIM=D, BLOCK_M=c["BM"], BLOCK_N=c["BN"], CAUSAL=causal,
                                               num_warps=c["w"], num_stages=c["s"])
        self.ptrs = [P(t.data_ptr()) for t in (self.q, self.k, self.v, self.o)]

    def kpack_auto(self):
        Z, H, Hkv, Sq, Skv = self.dims
        return self.lib.kernels_attention_triton_auto(None, KDT[self.dt], self.D, int(self.causal), *self.ptrs,
                                                      self.scale, Z, H, Hkv, Sq, Skv)

    def kpack_typed(self):
        Z, H, Hkv, Sq, Skv = self.dims
        c = self.cfg
        return self.lib.kernels_attention_triton(None, KDT[self.dt], self.D, int(self.causal), c["BM"], c["BN"],
                                                 c["w"], c["s"], *self.ptrs, self.scale, Z, H, Hkv, Sq, Skv)

    def sdpa(self):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(self.q, self.k, self.v, is_causal=self.causal,
                                                  enable_gqa=self.q.shape[1] != self.k.shape[1])

    def reference(self):
        H, Hkv = self.q.shape[1], self.k.shape[1]
        kf = self.k.float().repeat_interleave(H // Hkv, 1)
        vf = self.v.float().repeat_interleave(H // Hkv, 1)
        s = (self.q.float() @ kf.transpose(-1, -2)) * self.scale
        if self.causal:
            Sq, Skv = self.q.shape[2], self.k.shape[2]
            keep = torch.arange(Skv, device=DEV)[None, :] <= torch.arange(Sq, device=DEV)[:, None]
            s = s.masked_fill(~keep, float("-inf"))
        return torch.softmax(s, -1) @ vf

    def run(self, fn):
        self.o.fill_(float("nan"))
        r = fn()
        torch.cuda.synchronize()
        if isinstance(r, int):
            check_status(self.lib, r, "attention")
        return self.o.clone()

    def flops(self):
        Z, H, Hkv, Sq, Skv = self.dims
        f = 4.0 * Z * H * Sq * Skv * self.D
        return f / 2 if self.causal else f


def att_check(lib, Z, H, Hkv, Sq, Skv, D, dt, causal):
    a = Attention(lib, Z, H, Hkv, Sq, Skv, D, dt, causal, seed=Sq + D)
    auto, typed, jit = a.run(a.kpack_auto), a.run(a.kpack_typed), a.run(a.jit)
    ok_rule = torch.equal(auto.view(torch.int16), typed.view(torch.int16))
    ok_bits = torch.equal(typed.view(torch.int16), jit.view(torch.int16))
    ok_ref = close(typed, a.reference(), dt)
    name = "attn %s Z%d H%d/%d S%d/%d D%d causal%d m%dn%d" % (dt, Z, H, Hkv, Sq, Skv, D, int(causal),
                                                               a.cfg["BM"], a.cfg["BN"])
    for ok, what in [(ok_rule, "auto == rules' config"), (ok_bits, "kpack == JIT bits"), (ok_ref, "vs fp32 ref")]:
        emit(kind="check", what=what, case=name, ok=ok)
        if not ok:
            FAILS.append(name + ": " + what)


# ---- timing -------------------------------------------------------------------

FLUSH = None


def bench(fn, n=20):
    """Median device time (ms) of fn over n launches, L2 flushed before each."""
    global FLUSH
    if FLUSH is None:
        FLUSH = torch.empty(256 << 20, dtype=torch.int8, device=DEV)
    fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for s, e in ev:
        FLUSH.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in ev)


def bench_side_by_side(fns, n=20, rounds=3):
    """bench() of each of `fns` (a dict), interleaved over `rounds` rounds so
    that clock and thermal drift fall on every implementation alike: the
    median of each one's round medians."""
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(bench(fn, n))
    return {name: statistics.median(t) for name, t in times.items()}


def host_us(fn, n=2000):
    """Host microseconds per launch, back to back from Python (no sync inside)."""
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    dt = time.perf_counter() - t
    torch.cuda.synchronize()
    return dt / n * 1e6


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


# ---- main -----------------------------------------------------------------------

def gemm_shapes():
    shapes = [("8192^3", 8192, 8192, 8192)]
    for m in (1, 16, 32, 64, 4096):
        for name, (n, k) in LLAMA.items():
            shapes.append(("%s M=%d" % (name, m), m, n, k))
    return shapes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--quick", action="store_true", help="fewer shapes")
    args = ap.parse_args()
    lib = load(args.lib)
    # Triton's JIT asks for the attention kernel's global scratch on every
    # launch, as its users give it: from torch's caching allocator.
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=DEV))
    dev = torch.cuda.get_device_name()
    emit(kind="env", device=dev, sms=NUM_SMS, torch=torch.__version__, triton=triton.__version__)
    say("device %s, %d SMs, torch %s, triton %s" % (dev, NUM_SMS, torch.__version__, triton.__version__))

    # Correctness: ragged shapes, every epilogue, both dtypes.
    for dt in ("bf16", "f16"):
        for (M, N, K) in [(1, 4104, 4000), (7, 4104, 4000), (33, 520, 4000), (300, 4104, 4000), (1000, 3000, 1000)]:
            for act, bias in [(0, False), (1, True), (2, True)]:
                gemm_check(lib, M, N, K, dt, act, bias)
        for (Sq, Skv, D, causal, H, Hkv) in [(1000, 1000, 64, False, 4, 4), (1537, 1537, 128, True, 4, 2),
                                             (300, 1000, 128, False, 4, 4), (1000, 1000, 64, True, 8, 2),
                                             (8192, 8192, 128, False, 2, 2)]:
            att_check(lib, 1, H, Hkv, Sq, Skv, D, dt, causal)
    cuda = hasattr(lib, "kernels_gemm_cuda_auto")
    if cuda:
        for dt in ("bf16", "f16"):
            for (M, N, K) in [(1, 4000, 4000), (7, 4000, 4000), (33, 264, 72), (300, 520, 136), (4097, 4000, 4000)]:
                # The built epilogues: none, bias, SiLU without bias, bias and GELU.
                for act, bias in [(0, False), (0, True), (1, False), (2, True)]:
                    cuda_gemm_check(lib, M, N, K, dt, act, bias)
    say("checks: %d failed of %d" % (len(FAILS), sum(1 for l in LINES if l["kind"] == "check")))
    for f in FAILS[:20]:
        say("FAIL", f)

    # GEMM timing, bf16, no bias: the shapes.
    ratios_jit, ratios_cublas = [], []
    say("%-16s %-14s %9s %9s %9s %8s %8s" % ("gemm bf16", "config", "kpack", "jit", "cublas", "k/jit", "k/cublas"))
    for label, M, N, K in gemm_shapes()[: 6 if args.quick else None]:
        g = Gemm(lib, M, N, K, "bf16", seed=M + N)
        t = bench_side_by_side({"kpack": g.kpack_typed, "jit": g.jit, "cublas": g.cublas, "auto": g.kpack_auto})
        tk, tj, tc, ta = t["kpack"], t["jit"], t["cublas"], t["auto"]
        flops = 2.0 * M * N * K
        r_jit, r_cub = tk / tj, tc / tk  # time ratio; TFLOP/s ratio
        ratios_jit.append(r_jit)
        ratios_cublas.append(r_cub)
        emit(kind="gemm", shape=label, M=M, N=N, K=K, config=cfg_name(g.cfg), kpack_ms=tk, kpack_auto_ms=ta,
             jit_ms=tj, cublas_ms=tc, kpack_tflops=flops / tk / 1e9, cublas_tflops=flops / tc / 1e9,
             kpack_over_jit_time=r_jit, kpack_over_cublas_tflops=r_cub)
        say("%-16s %-14s %8.1fT %8.1fT %8.1fT %8.3f %8.3f" % (label, cfg_name(g.cfg), flops / tk / 1e9,
                                                           flops / tj / 1e9, flops / tc / 1e9, r_jit, r_cub))
    emit(kind="gemm_summary", geomean_kpack_over_jit_time=geomean(ratios_jit),
         geomean_kpack_over_cublas=geomean(ratios_cublas[1:]), at_8192=ratios_cublas[0])
    say("gemm: kpack/JIT time geomean %.3f; kpack/cuBLAS TFLOP/s at 8192^3 %.3f, engine shapes geomean %.3f"
        % (geomean(ratios_jit), ratios_cublas[0], geomean(ratios_cublas[1:])))

    if cuda:
        ratios = []
        say("%-16s %9s %9s %8s" % ("cuda gemm bf16", "kpack", "cublas", "k/cublas"))
        for label, M, N, K in gemm_shapes()[: 6 if args.quick else None]:
            g = CudaGemm(lib, M, N, K, "bf16", seed=M + N)
            t = bench_side_by_side({"kpack": g.kpack_auto, "cublas": g.cublas})
            tk, tc = t["kpack"], t["cublas"]
            flops = 2.0 * M * N * K
            ratios.append(tc / tk)
            emit(kind="cuda_gemm", shape=label, M=M, N=N, K=K, kpack_ms=tk, cublas_ms=tc,
                 kpack_tflops=flops / tk / 1e9, cublas_tflops=flops / tc / 1e9, kpack_over_cublas_tflops=tc / tk)
            say("%-16s %8.1fT %8.1fT %8.3f" % (label, flops / tk / 1e9, flops / tc / 1e9, tc / tk))
        emit(kind="cuda_gemm_summary", at_8192=ratios[0], geomean_engine_shapes=geomean(ratios[1:]))
        say("cuda gemm: kpack/cuBLAS at 8192^3 %.3f, engine shapes geomean %.3f" % (ratios[0], geomean(ratios[1:])))

    # Host cost of one launch from Python (decode shape).
    g = Gemm(lib, 16, 4096, 4096, "bf16")
    emit(kind="host", what="gemm launch from Python", kpack_ctypes_us=host_us(g.kpack_auto), jit_us=host_us(g.jit))
    say("host per launch from Python: kpack auto (ctypes) %.1f us, Triton JIT %.1f us"
        % (LINES[-1]["kpack_ctypes_us"], LINES[-1]["jit_us"]))

    # Attention timing.
    ratios_jit, ratios_sdpa = [], []
    say("%-30s %-8s %9s %9s %9s %8s %8s" % ("attention bf16", "config", "kpack", "jit", "sdpa", "k/jit", "k/sdpa"))
    for D in (64, 128):
        for causal in (False, True):
            for S in ((1024, 4096, 16384) if args.quick else (1024, 2048, 4096, 8192, 16384)):
                H = 32
                Z = max(1, 16384 // S)
                a = Attention(lib, Z, H, H, S, S, D, "bf16", causal, seed=S)
                t = bench_side_by_side({"kpack": a.kpack_typed, "jit": a.jit, "sdpa": a.sdpa}, n=10)
                tk, tj, ts = t["kpack"], t["jit"], t["sdpa"]
                f = a.flops()
                ratios_jit.append(tk / tj)
                ratios_sdpa.append(ts / tk)
                label = "Z%d H%d S%d D%d %s" % (Z, H, S, D, "causal" if causal else "full")
                emit(kind="attn", shape=label, config="m%dn%d" % (a.cfg["BM"], a.cfg["BN"]), kpack_ms=tk,
                     jit_ms=tj, sdpa_ms=ts, kpack_tflops=f / tk / 1e9, sdpa_tflops=f / ts / 1e9,
                     kpack_over_jit_time=tk / tj, kpack_over_sdpa_tflops=ts / tk)
                say("%-30s m%-3dn%-3d %8.1fT %8.1fT %8.1fT %8.3f %8.3f" % (label, a.cfg["BM"], a.cfg["BN"], f / tk / 1e9,
                                                                         f / tj / 1e9, f / ts / 1e9, tk / tj, ts / tk))
    emit(kind="attn_summary", geomean_kpack_over_jit_time=geomean(ratios_jit),
         geomean_kpack_over_sdpa=geomean(ratios_sdpa), worst_kpack_over_sdpa=min(ratios_sdpa))
    say("attention: kpack/JIT time geomean %.3f; kpack/SDPA TFLOP/s geomean %.3f, worst %.3f"
        % (geomean(ratios_jit), geomean(ratios_sdpa), min(ratios_sdpa)))
    used, count = ctypes.c_uint64(), ctypes.c_uint64()
    lib.kpack_workspace_usage(ctypes.byref(used), ctypes.byref(count))
    emit(kind="workspace", device_bytes=used.value, workspaces=count.value)
    say("kpack scratch workspaces: %d bytes in %d" % (used.value, count.value))

    with open(os.path.join(OUT, "kpack_compute_bench.jsonl"), "w") as f:
        for l in LINES:
            f.write(json.dumps(l, sort_keys=True) + "\n")
    say("%d checks failed" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
