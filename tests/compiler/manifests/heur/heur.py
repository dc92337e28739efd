# Triton kernels for the heur golden package (tests/compiler/manifests/heur).
# The compiler tests never run Python: tests/compiler/heur_golden_test.cc
# gives kpack the facts triton_helper.py's describe reads from this file
# (signatures, heuristics, autotune configs), at these lines and columns.
import triton
import triton.language as tl


@triton.heuristics({
    "EVEN_N": lambda args: args["n"] % args["BLOCK"] == 0,
    "HAS_BIAS": lambda args: args["bias"] is not None,
    "SPLIT": lambda args: min(triton.cdiv(args["n"], 4096), 4),
})
@triton.jit
def rows_kernel(x, bias, out, n, stride, BLOCK: tl.constexpr, EVEN_N: tl.constexpr, HAS_BIAS: tl.constexpr, SPLIT: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    part = tl.program_id(1)
    offs = (part * SPLIT + tl.arange(0, SPLIT)[:, None]) * BLOCK + tl.arange(0, BLOCK)[None, :]
    if EVEN_N:
        v = tl.load(x + row * stride + offs)
    else:
        v = tl.load(x + row * stride + offs, mask=offs < n, other=0.0)
    if HAS_BIAS:
        v += tl.load(bias + offs, mask=offs < n, other=0.0)
    tl.store(out + row * stride + offs, v, mask=offs < n)


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 512}, num_warps=8)], key=["n"])
@triton.heuristics({"HAS_W": lambda args: args["w"] is not None})
@triton.jit
def norm_kernel(x, w, out, n, eps, REDUCTION: tl.constexpr, EPS: tl.constexpr, BLOCK: tl.constexpr, HAS_W: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n, other=0.0)
    if HAS_W:
        v *= tl.load(w + offs, mask=offs < n, other=1.0)
    total = tl.sum(v * v, axis=0)
    if REDUCTION == "mean":
        total = total / n
    tl.store(out + tl.program_id(0), tl.sqrt(total + EPS + eps))
