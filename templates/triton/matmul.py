"""GEMM with a fused bias and activation, for Hopper (sm_90) tensor cores.

    matmul(a, b, c, bias, M, N, K,
           BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, HAS_BIAS, ACT, PERSISTENT: constexpr)

    C[M, N] = act(A[M, K] @ B[N, K]^T + bias[N])

  a     host TensorDescriptor of A [M, K], block [BLOCK_M, BLOCK_K]
  b     host TensorDescriptor of B [N, K], block [BLOCK_N, BLOCK_K]: the
        weight as nn.Linear stores it (K contiguous)
  c     host TensorDescriptor of C [M, N], block [BLOCK_M, BLOCK_N]
  bias  *T, N elements (read only when HAS_BIAS)
  M, N, K  i32 (never specialized: any value runs the same code)
  T     bf16 or f16 for A, B, C and bias; the products accumulate in fp32,
        the bias and the activation are applied in fp32, rounded once to T.
  GROUP_M  rows of tiles walked together, for L2 reuse of B's columns
  HAS_BIAS bool
  ACT   0: none, 1: SiLU x * sigmoid(x),
        2: GELU, tanh approximation (torch's gelu(approximate="tanh")):
           0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed as
           x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)), the same function.

  PERSISTENT bool: False, one output tile per program, grid = (tiles,)
        with tiles = cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N); True, the programs
        walk the tiles with a stride of the grid (tile t = pid, pid + P, ...),
        grid = (P,) for any P >= 1, e.g. min(tiles, multiprocessors).  The
        one-tile form lets Triton put C's staging buffer in the pipeline's
        shared memory (the loop form keeps both alive), yet on an H200 the
        loop form ran faster wherever there are more tiles than
        multiprocessors (8192^3 bf16: 0.97x cuBLAS for 128x256x64 in 3
        stages, against 0.87x for one tile per program in 4 stages;
        bench/results/2026-11-26-triton-compute-jit).

Compile options: num_warps (4; 8 for the 128x256 tile) and num_stages (the
depth of the TMA load pipeline of the K loop).  BLOCK_M 16 and 32 compile to
mma.sync (Triton's wgmma path needs 64 rows), BLOCK_M >= 64 to wgmma.

Ragged shapes: the descriptors do the bounds.  A load that reaches past M,
N or K reads zeros (the descriptors' padding must be "zero", the default),
which add nothing to the dot products, and the store clips the tile at M
and N.  The TMA rules hold for the descriptors: 16-byte aligned bases and
row strides (for 16-bit T: K and C's row stride multiples of 8).  The
hardware clips a TMA store at 16-byte granularity along the row: where
N * sizeof(T) is not a multiple of 16 (C a column slice of a wider buffer),
the columns from N up to the row's next 16-byte boundary are written too,
with zeros (Triton issue 11583; bench/compute/triton_jit_check.py checks
that nothing past that boundary, and no row past M, changes).
"""
import triton
import triton.language as tl

LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)
# 2 * sqrt(2 / pi) * log2(e): the tanh-GELU's argument, doubled for the
# sigmoid form and scaled for exp2.
GELU_K: tl.constexpr = tl.constexpr(2.0 * 0.7978845608028654 * 1.4426950408889634)
GELU_C: tl.constexpr = tl.constexpr(0.044715)


@triton.jit
def _tile_of(t, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    # Tiles are numbered band by band: a band is GROUP_M rows of tiles (the
    # last one may be shorter), walked down its rows first, so programs
    # that run together share B's columns and A's rows in L2.
    per_band = GROUP_M * tiles_n
    band = t // per_band
    first = band * GROUP_M
    rows = tl.minimum(tiles_m - first, GROUP_M)
    inner = t - band * per_band
    return first + inner % rows, inner // rows


@triton.jit
def _epilogue(acc, bias, off_n, N, BLOCK_N: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr):
    if HAS_BIAS:
        cols = off_n + tl.arange(0, BLOCK_N)
        bv = tl.load(bias + cols, mask=cols < N, other=0.0)
        acc = acc + bv.to(tl.float32)[None, :]
    if ACT == 1:
        # x / (1 + e^-x): e^-x overflows to inf for x < -88, giving -0.
        acc = acc / (1.0 + tl.exp2(-acc * LOG2E))
    elif ACT == 2:
        z = acc * (1.0 + GELU_C * acc * acc)
        acc = acc / (1.0 + tl.exp2(-z * GELU_K))
    return acc


@triton.jit
def _tile(a, b, c, bias, t, tiles_m, tiles_n, steps, N,
          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
          GROUP_M: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr):
    # Output tile t: the K loop (TMA loads, pipelined num_stages deep), the
    # epilogue in fp32, one TMA store.
    pm, pn = _tile_of(t, tiles_m, tiles_n, GROUP_M)
    off_m = pm * BLOCK_M
    off_n = pn * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for s in range(steps):
        k0 = s * BLOCK_K
        x = a.load([off_m, k0])
        w = b.load([off_n, k0])
        acc = tl.dot(x, w.T, acc)
    acc = _epilogue(acc, bias, off_n, N, BLOCK_N, HAS_BIAS, ACT)
    c.store([off_m, off_n], acc.to(c.dtype))


@triton.jit(do_not_specialize=["M", "N", "K"], do_not_specialize_on_alignment=["bias"])
def matmul(a, b, c, bias, M, N, K,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
           GROUP_M: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
           PERSISTENT: tl.constexpr):
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    steps = tl.cdiv(K, BLOCK_K)
    if PERSISTENT:
        for t in range(tl.program_id(0), tiles_m * tiles_n, tl.num_programs(0)):
            _tile(a, b, c, bias, t, tiles_m, tiles_n, steps, N,
                  BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, HAS_BIAS, ACT)
    else:
        _tile(a, b, c, bias, tl.program_id(0), tiles_m, tiles_n, steps, N,
              BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, HAS_BIAS, ACT)
