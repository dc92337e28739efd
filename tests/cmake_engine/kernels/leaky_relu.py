# The engine's Triton kernel: out = x where x > 0, else slope * x.
import triton
import triton.language as tl


@triton.jit
def leaky_relu(x, out, n, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask)
    tl.store(out + offs, tl.where(v > 0, v, v * slope), mask=mask)
